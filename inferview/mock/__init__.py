"""Mock interviews: planning (story order), the running session (clock, pause, resume) and the
report. Headless: used by the TUI's mock screen and by ``inferview report``."""

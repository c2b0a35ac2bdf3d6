"""The grading engine: trusted supervisor, untrusted worker."""

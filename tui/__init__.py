"""The Textual app. Never imports torch."""

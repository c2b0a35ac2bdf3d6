"""Reference implementations: the graders' ground truth. Importing this package imports no torch."""

"""Built-in coding challenges: one folder per challenge (data, starter, checks, solutions)."""

"""Reusable widgets: bars, grading results."""

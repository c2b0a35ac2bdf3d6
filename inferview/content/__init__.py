"""Content models and loaders for question banks and challenges."""

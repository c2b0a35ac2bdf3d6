"""Built-in question banks (YAML data)."""

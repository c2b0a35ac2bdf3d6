"""Command-line subcommands, one module each, imported lazily by inferview.cli."""

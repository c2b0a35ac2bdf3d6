"""The web page that ``inferview serve`` hosts the app in (a template for textual-serve)."""

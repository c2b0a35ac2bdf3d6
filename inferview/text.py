"""Small helpers for the words shown to users."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 day"``, ``"3 days"``; ``many`` for irregular plurals (``plural(2, "query", "queries")``)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"

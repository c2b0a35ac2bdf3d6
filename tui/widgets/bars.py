"""A horizontal bar for mastery and accuracy, drawn with block characters (one eighth resolution)."""

from __future__ import annotations

from rich.text import Text

_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(fraction: float, width: int = 12, style: str = "green", empty_style: str = "grey37") -> Text:
    """A bar ``width`` cells wide, filled to ``fraction`` (clamped to 0..1)."""
    fraction = min(1.0, max(0.0, fraction))
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    text = Text("█" * full, style=style)
    if full < width:
        if part:
            text.append(_EIGHTHS[part], style=style)
        text.append("░" * (width - full - (1 if part else 0)), style=empty_style)
    return text

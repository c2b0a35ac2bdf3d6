"""Inline Markdown for one-line widgets (option lists, labels) that show plain text.

Question banks write formulas and names as Markdown code spans (`` `2 × layers × …` ``); a
``SelectionList`` or ``OptionList`` would show the backticks themselves. This turns code spans and
``**bold**`` into Rich styles instead (CommonMark's inline rules, reduced to these two)."""

from __future__ import annotations

import re

from rich.text import Text

_SPANS = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*")
CODE_STYLE = "bold"


def inline_text(source: str) -> Text:
    """``source`` as Rich text: code spans styled (without their backticks), ``**bold**`` in bold."""
    text = Text()
    pos = 0
    for m in _SPANS.finditer(source):
        text.append(source[pos:m.start()])
        if m.group(1) is not None:
            text.append(m.group(1), style=CODE_STYLE)
        else:
            text.append(m.group(2), style="bold")
        pos = m.end()
    text.append(source[pos:])
    return text

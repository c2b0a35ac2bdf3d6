"""The challenge editor: Textual's code-editor TextArea, plus Python-style auto-indent on enter.

Without it every new line starts at column 0, and a block body has to be indented by hand —
slow and error-prone when writing a solution against the clock."""

from __future__ import annotations

from textual import events
from textual.widgets import TextArea


def next_line_indent(before_cursor: str, indent_width: int = 4) -> str:
    """The indentation a new line gets after ``before_cursor`` (the line up to the cursor):
    the same as that line, one level deeper after a ``:`` that opens a block."""
    indent = before_cursor[: len(before_cursor) - len(before_cursor.lstrip(" \t"))]
    code = before_cursor.split("#", 1)[0].rstrip() if "#" in before_cursor else before_cursor.rstrip()
    if code.endswith(":"):
        indent += " " * indent_width
    return indent


class PythonEditor(TextArea):
    """A TextArea for Python source whose enter keeps (or deepens) the current indentation, and
    whose escape is left to the screen (the code editor would only move the focus away, so going
    back took two presses); shift+tab still moves the focus out of the editor."""

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.prevent_default()  # skip TextArea's handler; the key bubbles on to the bindings
            return
        if event.key == "enter" and not self.read_only:
            event.stop()
            event.prevent_default()
            self._restart_blink()
            start, end = self.selection
            first = min(start, end)
            before = self.document.get_line(first[0])[: first[1]]
            self._replace_via_keyboard("\n" + next_line_indent(before, self.indent_width), start, end)
            return
        await super()._on_key(event)

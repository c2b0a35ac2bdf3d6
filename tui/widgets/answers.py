"""Answer boxes for the mock interview that leave the interview's keys to the screen.

Textual's ``TextArea`` and ``Input`` bind ``ctrl+e`` (end of line) and ``ctrl+k`` (delete to the
end of the line), which the interview uses for End and Skip. Those screen keys then had to be
priority bindings, which run before the characters typed just ahead of them reach the box, and the
footer listed them before Next. Without the two editing keys here (``end`` still goes to the end
of the line), the screen's bindings can be ordinary ones."""

from __future__ import annotations

from textual.binding import BindingsMap
from textual.widgets import Input, TextArea

FREED_KEYS = ("ctrl+e", "ctrl+k")


class _WithoutInterviewKeys:
    """Drops ``FREED_KEYS`` from a widget's inherited bindings."""

    @classmethod
    def _merge_bindings(cls) -> BindingsMap:
        bindings = super()._merge_bindings()  # type: ignore[misc]
        for key in FREED_KEYS:
            bindings.key_to_bindings.pop(key, None)
        return bindings


class AnswerArea(_WithoutInterviewKeys, TextArea):
    """The box for an open answer."""


class AnswerInput(_WithoutInterviewKeys, Input):
    """The box for a number with its unit."""

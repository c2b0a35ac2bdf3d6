"""The options of a choice question: a ``SelectionList`` whose long options wrap.

Textual's ``SelectionList`` draws its check box on every line and takes line ``y`` to be option
``y``, so an option that wraps onto a second line shifts every box below it (and an option cut
with an ellipsis can lose the very words that make it wrong). This one looks the option up in the
option list's line map: the box goes on an option's first line, a blank gutter on the others."""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widgets import OptionList, SelectionList
from textual.widgets._toggle_button import ToggleButton


class ChoiceList(SelectionList[int]):
    """A selection list of answer options, one per option value, wrapped to the width."""

    DEFAULT_CSS: ClassVar[str] = """
    ChoiceList {
        text-wrap: wrap;
        text-overflow: fold;
    }
    """

    def render_line(self, y: int) -> Strip:
        line = OptionList.render_line(self, y)
        try:
            index, offset = self._lines[self.scroll_offset.y + y]
            selection = self.get_option_at_index(index)
        except IndexError:
            return line
        underlying = next(iter(line)).style if line.cell_length else None
        underlying = underlying or self.rich_style
        gutter_width = self._get_left_gutter_width()
        if offset > 0:  # a wrapped continuation line: no box, just the gutter
            return Strip([Segment(" " * gutter_width, underlying), *line])
        component = "selection-list--button"
        if selection.value in self._selected:
            component += "-selected"
        if self.highlighted == index:
            component += "-highlighted"
        button = self.get_component_rich_style(component) + Style(meta={"option": index})
        side = Style.from_color(button.bgcolor, underlying.bgcolor) + Style(meta={"option": index})
        return Strip([
            Segment(ToggleButton.BUTTON_LEFT, style=side),
            Segment(ToggleButton.BUTTON_INNER, style=button),
            Segment(ToggleButton.BUTTON_RIGHT, style=side),
            Segment(" ", style=underlying),
            *line,
        ])

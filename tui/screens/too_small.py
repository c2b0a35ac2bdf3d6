"""Shown instead of the app while the terminal is smaller than the app's layouts need."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Center, Middle
from textual.screen import ModalScreen
from textual.widgets import Static


class TooSmallScreen(ModalScreen[None]):
    """"The terminal is too small": over whatever screen was open, which comes back unchanged
    (nothing is lost, the mock clock keeps its time) as soon as the terminal is large enough."""

    DEFAULT_CSS = """
    TooSmallScreen { align: center middle; background: $background; }
    TooSmallScreen #too-small { width: auto; max-width: 100%; text-align: center; }
    """

    def __init__(self, need: tuple[int, int]) -> None:
        super().__init__()
        self.need = need

    def compose(self) -> ComposeResult:
        with Middle(), Center():
            yield Static(id="too-small")

    def on_mount(self) -> None:
        self.show(self.app.size.width, self.app.size.height)

    def show(self, width: int, height: int) -> None:
        w, h = self.need
        self.query_one("#too-small", Static).update(
            f"The terminal is too small: {width}×{height}.\nThe app needs at least {w}×{h}; "
            "enlarge the window or the font smaller.\nctrl+q quits.")

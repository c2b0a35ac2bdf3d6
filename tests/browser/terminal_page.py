"""Reading the app's screen in the browser page that ``inferview serve`` hosts.

xterm.js draws the terminal on a canvas, so its text is not in the DOM. It is read the way a user
copies it: a shift+drag across the screen selects every cell (shift makes xterm.js select even
though the app captures the mouse), and on Linux xterm.js puts a mouse selection into its input
textarea for the middle-click paste, where the page's DOM can read it.
"""

from __future__ import annotations

import time
from typing import Any

SCREEN = ".xterm-screen"
INPUT = ".xterm-helper-textarea"


def screen_text(page: Any) -> str:
    """Every row of the terminal as it is drawn now, rows joined by newlines."""
    box = page.locator(SCREEN).bounding_box()
    if box is None:
        return ""
    page.keyboard.down("Shift")
    try:
        page.mouse.move(box["x"] + 1, box["y"] + 1)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] - 1, box["y"] + box["height"] - 1, steps=3)
        page.mouse.up()
    finally:
        page.keyboard.up("Shift")
    return page.eval_on_selector(INPUT, "area => area.value")


def wait_for_text(page: Any, *needles: str, timeout: float = 20.0) -> str:
    """The screen's text once it shows every one of ``needles``; fails with the last screen."""
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = screen_text(page)
        if all(n in text for n in needles):
            return text
        time.sleep(0.2)
    raise AssertionError(f"the page never showed {needles!r}; it showed:\n{text}")

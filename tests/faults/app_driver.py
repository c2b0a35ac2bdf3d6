"""The real app, headless, answering practice questions until it is killed.

    python app_driver.py

Opens the app (``create_app``: the real store in ``$INFERVIEW_HOME``, the built-in library),
starts practice and answers one question after another: an open answer is written, a choice
picked, a number typed, each submitted with ``ctrl+s`` and rated with ``3``. It prints ``ready``
once practice is on screen, then ``done QUESTION_ID`` after each rating has been saved (the
session counts it only once the store's transaction returned). A test SIGKILLs it at any moment.
"""

from __future__ import annotations

import asyncio
import sys

from inferview.tui.app import create_app
from inferview.tui.screens.practice import PracticeScreen
from textual.widgets import Input, SelectionList, TextArea

from inferview.content.loader import load_library
from inferview.content.models import ChoiceQuestion, NumericQuestion, OpenQuestion


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def main() -> None:
    app = create_app(library=load_library(include_user=False))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("p")
        while not isinstance(app.screen, PracticeScreen):
            await pilot.pause(0.02)
        screen = app.screen
        say("ready")
        while True:
            item = screen.session.current()
            if item is None:
                say("finished")
                return
            q = item.question
            if isinstance(q, OpenQuestion):
                screen.query_one("#answer-open", TextArea).text = (
                    "It stores the keys and values of earlier tokens, so each step computes only "
                    "the new token.")
            elif isinstance(q, ChoiceQuestion):
                box = screen.query_one("#answer-choice", SelectionList)
                box.select(box.get_option_at_index(0).value)
            elif isinstance(q, NumericQuestion):
                screen.query_one("#answer-numeric", Input).value = "12 GiB"
            answered = screen.session.answered
            await pilot.press("ctrl+s")
            while screen.feedback is None:
                await pilot.pause(0.01)
            await pilot.press("3")
            while screen.session.answered == answered:
                await pilot.pause(0.01)
            say(f"done {q.id}")


if __name__ == "__main__":
    asyncio.run(main())

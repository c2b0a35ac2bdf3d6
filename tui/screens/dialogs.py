"""Small dialogs: each a ``ModalScreen[T]`` closed with ``dismiss(value)``.

Each brings its own footer: the one of the screen underneath would go on listing keys that do
nothing while the dialog is open."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Label, Static, TextArea


class ConfirmScreen(ModalScreen[str]):
    """A question with a few answers; dismisses with the chosen answer's key (escape: ``cancel``)."""

    BINDINGS = [
        Binding("escape", "choose('cancel')", "Cancel"),
        # the buttons sit in a row: the arrows move along it as well as tab
        Binding("left", "move(-1)", "Previous", show=False),
        Binding("right", "move(1)", "Next", show=False),
    ]

    def __init__(self, question: str, choices: list[tuple[str, str]], title: str = "") -> None:
        super().__init__()
        self.question = question
        self.choices = choices
        """(key, label) pairs; the first is focused."""
        self.dialog_title = title

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self.question, classes="dialog-question")
            with Horizontal(classes="dialog-buttons"):
                for key, label in self.choices:
                    yield Button(label, id=f"choice-{key}")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(".dialog").border_title = self.dialog_title
        self.query(Button).first().focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(str(event.button.id).removeprefix("choice-"))

    def action_choose(self, key: str) -> None:
        self.dismiss(key)

    def action_move(self, step: int) -> None:
        if step < 0:
            self.focus_previous(Button)
        else:
            self.focus_next(Button)


class ErrorsScreen(ModalScreen[None]):
    """The content that was skipped: one line per problem, "path:line: field: message"."""

    BINDINGS = [Binding("escape,q,enter", "close", "Close")]

    def __init__(self, errors: list[str]) -> None:
        super().__init__()
        self.errors = errors

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog wide"):
            yield Label("Fix these files and restart; everything else loaded.", classes="dialog-question")
            for line in self.errors:
                yield Static(line, classes="error-line", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(".dialog").border_title = f"{len(self.errors)} content problems"

    def action_close(self) -> None:
        self.dismiss(None)


class SolutionScreen(ModalScreen[None]):
    """A reference solution, read-only, with syntax highlighting."""

    BINDINGS = [Binding("escape,q", "close", "Close")]

    def __init__(self, title: str, source: str) -> None:
        super().__init__()
        self.solution_title = title
        self.source = source

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide tall"):
            yield TextArea.code_editor(self.source, language="python", read_only=True, id="solution-code")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(".dialog").border_title = self.solution_title
        self.query_one(".dialog").border_subtitle = "escape closes"
        self.query_one("#solution-code").focus()

    def action_close(self) -> None:
        self.dismiss(None)

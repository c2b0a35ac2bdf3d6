"""The mock interview's dialogs: the hub (start, resume, past reports), paused, and "end now?"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inferview.tui.screens.dialogs import ConfirmScreen
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import (
    Button,
    Footer,
    Label,
    OptionList,
    RadioButton,
    RadioSet,
    Select,
    Static,
)
from textual.widgets.option_list import Option

LENGTHS = (15, 30, 45, 60)
DEFAULT_MINUTES = 30
"""PRODUCT.md: a mock interview runs 30 to 60 minutes; the hub starts at 30 until the user picks
another length, which is remembered (setting ``mock_minutes``)."""
MINUTES_SETTING = "mock_minutes"
TICK_S = 0.5


@dataclass(frozen=True)
class MockChoice:
    """What the hub decided: start a new session, resume one, or show a report."""

    action: str
    """``new``, ``resume`` or ``report``."""
    minutes: float = 30
    focus: str | None = None
    mock_id: int | None = None


def _local_time(iso: str) -> str:
    """A stored UTC timestamp in the user's local time, "2026-03-02 10:30"."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso[:16].replace("T", " ")


def _mmss(seconds: float) -> str:
    seconds = max(0, int(seconds + 0.999))
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


class MockHubScreen(ModalScreen[MockChoice | None]):
    """Choose a length and a focus, resume a paused session, or open a past report."""

    CSS_PATH = "../mock.tcss"
    BINDINGS = [Binding("escape", "cancel", "Back")]

    def __init__(self, sessions: list[dict[str, Any]], topics: list[tuple[str, str]],
                 minutes: float = DEFAULT_MINUTES, focus: str | None = None) -> None:
        super().__init__()
        self.sessions = sessions
        self.topics = topics
        self.minutes = minutes
        self.focus = focus

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide", id="mock-hub"):
            with Horizontal(id="hub-new"):
                with Vertical(id="hub-length"):
                    yield Label("Length")
                    with RadioSet(id="length"):
                        for m in LENGTHS:
                            yield RadioButton(f"{m} min", value=m == self.minutes, id=f"len-{m}")
                with Vertical(id="hub-focus"):
                    yield Label("Focus")
                    yield Select([(title, tid) for tid, title in self.topics], prompt="Whole story",
                                 value=self.focus if self.focus else Select.NULL, id="focus")
                    yield Button("Start", variant="primary", id="start")
            if self.sessions:
                yield Label("Paused sessions and past reports — enter to open")
                yield OptionList(*[Option(self._label(s), id=str(s["id"])) for s in self.sessions], id="past")
        # its own footer: the one underneath belongs to the interview and shows "Pause & leave"
        yield Footer()

    @staticmethod
    def _label(s: dict[str, Any]) -> str:
        when = _local_time(s["created_at"])
        minutes = s["config"].get("minutes", "?")
        if s["status"] == "finished":
            score = s["state"].get("report", {}).get("score")
            tail = f"report · {100 * score:.0f}%" if isinstance(score, (int, float)) else "report"
        else:
            left = max(0.0, float(minutes) * 60 - float(s["state"].get("elapsed_s", 0)))
            tail = f"paused · {_mmss(left)} left"
        return f"#{s['id']}  {when}  {minutes:g} min  {tail}"

    def on_mount(self) -> None:
        self.query_one("#mock-hub").border_title = "Mock interview"
        self.query_one("#mock-hub").border_subtitle = "escape: back"
        # RadioSet highlights its first button on mount whatever is pressed: the arrows would start
        # from 15 minutes while 30 shows as chosen. Start them from the chosen length.
        lengths = self.query_one("#length", RadioSet)
        if lengths.pressed_index >= 0:
            lengths._selected = lengths.pressed_index
        self.query_one("#start", Button).focus()

    def _chosen_minutes(self) -> float:
        pressed = self.query_one("#length", RadioSet).pressed_button
        return float(str(pressed.id).removeprefix("len-")) if pressed is not None else self.minutes

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start":
            value = self.query_one("#focus", Select).value
            focus = None if value is Select.NULL or value is Select.BLANK else str(value)
            self.dismiss(MockChoice("new", self._chosen_minutes(), focus))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        mock_id = int(str(event.option.id))
        status = next(s["status"] for s in self.sessions if s["id"] == mock_id)
        self.dismiss(MockChoice("report" if status == "finished" else "resume", mock_id=mock_id))

    def action_cancel(self) -> None:
        self.dismiss(None)


class PausedScreen(ModalScreen[None]):
    """The clock is stopped until this closes."""

    BINDINGS = [Binding("escape,enter,r,ctrl+p", "close", "Resume")]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("The interview is paused; the clock is stopped.\n\nPress enter to resume.",
                         classes="dialog-question")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(".dialog").border_title = "Paused"

    def action_close(self) -> None:
        self.dismiss(None)


class EndConfirmScreen(ConfirmScreen):
    """"End the interview?" with the countdown in it. The clock keeps running while it is open, as
    in a real interview (asking to stop early does not stop the time); only pausing stops it. If
    time runs out meanwhile, the interview ends as if "End" had been chosen."""

    def __init__(self, time_left: Callable[[], float]) -> None:
        super().__init__("", [("end", "End and grade"), ("cancel", "Keep going")], title="End interview")
        self.time_left = time_left

    def on_mount(self) -> None:
        super().on_mount()
        self._show_time()
        self.set_interval(TICK_S, self._show_time, name="end dialog clock")

    def _show_time(self) -> None:
        self.query_one(".dialog-question", Static).update(
            f"End the interview now and see the report?\n\n⏱ {_mmss(self.time_left())} left — the clock "
            "keeps running while you decide (ctrl+p in the interview pauses it).")



"""The mock interview: a hub (start, resume, past reports), the timed session, and the report.

The session moves like an interviewer (``inferview.mock.plan``): questions in story order with
follow-ups, one coding challenge, the countdown always visible, warnings at 5 and 1 minutes, and no
answers shown until the end. Escape pauses and leaves; the session resumes later, also after the
app was closed (its state is saved in the store after every step). The clock is injectable, so tests
run a whole session without waiting.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferview.tui.screens.dialogs import ConfirmScreen
from inferview.tui.widgets.answers import AnswerArea, AnswerInput
from inferview.tui.widgets.choices import ChoiceList
from inferview.tui.widgets.inline import inline_text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import (
    Button,
    Footer,
    Header,
    Input,
    Label,
    Markdown,
    OptionList,
    RadioButton,
    RadioSet,
    Select,
    SelectionList,
    Static,
    TextArea,
)
from textual.widgets.option_list import Option

from inferview import paths
from inferview.mock import store as mock_store
from inferview.mock.report import Report
from inferview.mock.session import MockSession
from inferview.practice.choice import display_order

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


class MockScreen(Screen[None]):
    """A timed mock interview."""

    CSS_PATH = "../mock.tcss"
    BINDINGS = [
        # Not priority: a priority binding runs before the characters typed just ahead of it
        # reach the answer box, so a fast "...text, ctrl+n" handed in a cut answer and the rest
        # spilled into the next question's box. The boxes (AnswerArea, AnswerInput) leave ctrl+e
        # and ctrl+k to the screen.
        Binding("ctrl+n", "submit", "Next"),
        Binding("ctrl+k", "skip", "Skip"),
        Binding("ctrl+o", "open_challenge", "Code"),
        Binding("ctrl+p", "pause", "Pause"),
        Binding("ctrl+e", "end", "End"),
        Binding("escape", "leave", "Pause & leave"),
    ]

    def __init__(self, minutes: float | None = None, focus: str | None = None, mock_id: int | None = None,
                 seed: int | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.request = (minutes, focus, mock_id, seed)
        self.clock = clock
        self.session: MockSession | None = None
        self.mock_id: int | None = None
        self._rendered: dict[int, Any] = {}
        self._challenge_result: dict[str, Any] | None = None
        self._challenge_source = ""
        self._challenge_open: tuple[str, Path] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="mock-status"):
            yield Static(id="mock-progress")
            yield Static(id="mock-clock")
        with VerticalScroll(id="mock-card"):
            yield Markdown(id="mock-prompt")
        with Vertical(id="mock-answer"):
            yield AnswerArea(id="answer-open", soft_wrap=True)
            yield AnswerInput(placeholder="a number with its unit, e.g. 40 GiB", id="answer-numeric")
            yield ChoiceList(id="answer-choice")
            yield Static(id="challenge-info")
        yield Footer()

    # ------------------------------------------------------------------ starting

    def on_mount(self) -> None:
        self.sub_title = "Mock interview"
        minutes, focus, mock_id, seed = self.request
        if mock_id is not None:
            self._resume(mock_id)
        elif minutes is not None:
            self._start(minutes, focus, seed)
        else:
            self._show_hub(focus)
        self.set_interval(TICK_S, self.tick, name="mock clock")

    def _show_hub(self, focus: str | None = None) -> None:
        services = self.app.services
        lib = services.get_library()
        store = services.get_store()
        sessions = store.list_mocks()[:12]
        minutes = store.get_setting(MINUTES_SETTING, DEFAULT_MINUTES)
        if minutes not in LENGTHS:
            minutes = DEFAULT_MINUTES
        topics = [(tid, lib.topic_title(tid)) for tid in lib.topics if lib.questions_for(tid)]
        if focus not in {tid for tid, _ in topics}:
            focus = None  # a topic without questions cannot be a focus (and Select would refuse it)
        self.app.push_screen(MockHubScreen(sessions, topics, minutes, focus), self._hub_chosen)

    def _hub_chosen(self, choice: MockChoice | None) -> None:
        if choice is None:
            self.app.pop_screen()
        elif choice.action == "new":
            self.app.services.get_store().set_setting(MINUTES_SETTING, choice.minutes)
            self._start(choice.minutes, choice.focus, None)
        elif choice.action == "resume":
            self._resume(int(choice.mock_id))
        else:
            self._show_saved_report(int(choice.mock_id))

    def _start(self, minutes: float, focus: str | None, seed: int | None) -> None:
        services = self.app.services
        try:
            self.mock_id, self.session = mock_store.start(services.get_store(), services.get_library(), minutes,
                                                          focus, seed, clock=self.clock)
        except ValueError as exc:
            self.notify(str(exc), severity="error")
            self.app.pop_screen()
            return
        self._show_item()

    def _resume(self, mock_id: int) -> None:
        store = self.app.services.get_store()
        try:
            self.session = mock_store.load(store, mock_id, clock=self.clock)
        except KeyError as exc:
            self.notify(str(exc.args[0]), severity="error")
            self.app.pop_screen()
            return
        self.mock_id = mock_id
        if self.session.status == "finished":
            self._finish()
            return
        self.session.resume()
        self._save()
        self.notify(f"Resumed with {_mmss(self.session.remaining_s())} left.")
        self._show_item()
        self._restore_draft()

    def _show_saved_report(self, mock_id: int) -> None:
        try:
            report = mock_store.load_report(self.app.services.get_store(), mock_id)
        except KeyError as exc:
            self.notify(str(exc.args[0]), severity="error")
            self.app.pop_screen()
            return
        self.app.switch_screen(MockReportScreen(report))

    # ------------------------------------------------------------------ showing an item

    def _show_item(self) -> None:
        s = self.session
        if s is None:
            return
        item = s.current
        if item is None:
            self._finish()
            return
        lib = self.app.services.get_library()
        total = len(s.plan.items)
        self.query_one("#mock-progress", Static).update(
            f"{s.index + 1}/{total} · {lib.topic_title(item.topic)}" + (" · follow-up" if item.follow_up_of else ""))
        for wid in ("#answer-open", "#answer-numeric", "#answer-choice", "#challenge-info"):
            self.query_one(wid).display = False
        if item.kind == "challenge":
            self._show_challenge(item)
        else:
            self._show_question(item)
        self.tick()

    def _show_question(self, item: Any) -> None:
        lib = self.app.services.get_library()
        q = lib.questions.get(item.ref)
        prompt = q.prompt if q is not None else f"(question {item.ref} is no longer in the banks)"
        if q is not None and q.kind == "numeric":
            from inferview.practice.drills import render

            drill = render(q, seed=item.seed)
            self._rendered[self.session.index] = drill
            prompt = drill.prompt
        self.query_one("#mock-prompt", Markdown).update(f"**Interviewer:** {prompt}")
        kind = q.kind if q is not None else "open"
        if kind == "choice":
            sel = self.query_one("#answer-choice", SelectionList)
            sel.clear_options()
            # the banks list the right option first: show them in the practice screen's shuffled order
            sel.add_options([(inline_text(q.options[i].text), i) for i in display_order(q, item.seed)])
            sel.border_title = "select all that apply" if q.multiple else "select one"
            sel.display = True
            sel.focus()
        elif kind == "numeric":
            box = self.query_one("#answer-numeric", Input)
            box.value = ""
            box.display = True
            box.focus()
        else:
            area = self.query_one("#answer-open", TextArea)
            area.text = ""
            area.border_title = "your answer — ctrl+n when done"
            area.display = True
            area.focus()

    def _show_challenge(self, item: Any) -> None:
        lib = self.app.services.get_library()
        ch = lib.challenges.get(item.ref)
        title = ch.spec.title if ch else item.ref
        self.query_one("#mock-prompt", Markdown).update(
            f"**Interviewer:** Let's write some code. *{title}* — about {item.budget_s // 60} minutes.\n\n"
            + (ch.statement_text() if ch else ""))
        info = self.query_one("#challenge-info", Static)
        result = self._challenge_result
        status = f"last run: {result.get('verdict')}" if result else "not run yet"
        info.update(f"ctrl+o opens the editor (ctrl+r runs the tests there) · {status} · ctrl+n hands it in")
        info.display = True
        # no answer box here: the statement takes the focus, so the arrows and page keys scroll it
        self.query_one("#mock-card", VerticalScroll).focus()

    # ------------------------------------------------------------------ the clock

    def tick(self) -> None:
        """Redraw the clock; warn at 5 and 1 minutes; end the interview at zero."""
        s = self.session
        if s is None:
            return
        left = s.remaining_s()
        clock = self.query_one("#mock-clock", Static)
        clock.update(f"⏱ {_mmss(left)}" + ("  (paused)" if s.status == "paused" else ""))
        clock.set_class(left <= 60, "urgent")
        clock.set_class(60 < left <= 300, "soon")
        for event in s.tick():
            if event.kind == "warning":
                self.app.notify(event.message, title="Mock interview", severity="warning", timeout=8)
            elif event.kind == "expired":
                self.app.notify(event.message, title="Mock interview", severity="warning", timeout=8)
                while self.app.screen is not self and len(self.app.screen_stack) > 1:
                    self.app.pop_screen()
                self._finish()

    def _save(self) -> None:
        if self.session is not None and self.mock_id is not None:
            mock_store.save(self.app.services.get_store(), self.mock_id, self.session)

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        item = self.session.current if self.session is not None else None
        if action == "open_challenge":
            return item is not None and item.kind == "challenge"
        if action in ("submit", "skip", "pause", "end"):
            return item is not None
        return True

    def action_submit(self) -> None:
        s = self.session
        item = s.current if s is not None else None
        if item is None:
            return
        if item.kind == "challenge":
            s.submit_challenge(self._challenge_result, self._challenge_source)
        else:
            q = self.app.services.get_library().questions.get(item.ref)
            if q is not None and q.kind == "choice":
                s.answer(selected=sorted(self.query_one("#answer-choice", SelectionList).selected))
            elif q is not None and q.kind == "numeric":
                s.answer(text=self.query_one("#answer-numeric", Input).value)
            else:
                s.answer(text=self.query_one("#answer-open", TextArea).text)
        self._save()
        self._show_item()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the number box hands the answer in, as it does in practice."""
        if event.input.id == "answer-numeric":
            event.stop()
            self.action_submit()

    def action_skip(self) -> None:
        if self.session is not None and self.session.current is not None:
            self.session.skip()
            self._save()
            self._show_item()

    def action_pause(self) -> None:
        s = self.session
        if s is None or s.status != "running":
            return
        s.pause()
        self._save()
        self.tick()

        def resumed(_: None) -> None:
            s.resume()
            self._save()
            self.tick()

        self.app.push_screen(PausedScreen(), resumed)

    def action_end(self) -> None:
        s = self.session
        if s is None:
            return

        def decided(choice: str | None) -> None:
            if choice == "end" and self.session is s:
                self._finish()

        self.app.push_screen(EndConfirmScreen(s.remaining_s), decided)

    def _draft_key(self) -> str:
        return f"mock_draft:{self.mock_id}"

    def _keep_draft(self) -> None:
        """Store what is written for the current question, so resuming shows it again."""
        s = self.session
        item = s.current if s is not None else None
        if item is None or item.kind == "challenge" or self.mock_id is None:
            return
        draft = {
            "index": s.index,
            "text": self.query_one("#answer-open", TextArea).text,
            "numeric": self.query_one("#answer-numeric", Input).value,
            "selected": sorted(self.query_one("#answer-choice", SelectionList).selected),
        }
        self.app.services.get_store().set_setting(self._draft_key(), draft)

    def _restore_draft(self) -> None:
        """Put back the answer written before leaving, if it belongs to the current question."""
        store = self.app.services.get_store()
        draft = store.get_setting(self._draft_key())
        if not isinstance(draft, dict) or self.session is None or draft.get("index") != self.session.index:
            return
        store.set_setting(self._draft_key(), None)
        self.query_one("#answer-open", TextArea).text = str(draft.get("text") or "")
        self.query_one("#answer-numeric", Input).value = str(draft.get("numeric") or "")
        sel = self.query_one("#answer-choice", SelectionList)
        for value in draft.get("selected") or []:
            sel.select(value)

    def before_quit(self) -> None:
        """ctrl+q: pause the interview (the clock must not run while the app is closed) and keep
        the answer being written."""
        if self.session is not None and self.session.status == "running":
            self.session.pause()
            self._save()
            self._keep_draft()

    def action_leave(self) -> None:
        if self.session is not None and self.session.status == "running":
            self.session.pause()
            self._save()
            self._keep_draft()
            self.app.notify("Paused. Resume it from Mock interview on Home.", timeout=6)
        self.app.pop_screen()

    def action_open_challenge(self) -> None:
        item = self.session.current if self.session is not None else None
        if item is None or item.kind != "challenge":
            return
        from inferview.tui.screens.challenge import ChallengeScreen

        lib = self.app.services.get_library()
        ch = lib.challenges.get(item.ref)
        path = paths.workspace_dir() / f"mock-{self.mock_id}" / f"{item.ref}.py"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(ch.starter_text() if ch else "", encoding="utf-8")
        self._challenge_open = (item.ref, path)
        self.app.push_screen(ChallengeScreen(item.ref, file=path, mock_id=self.mock_id,
                                             time_left=self.session.remaining_s),
                             self._challenge_closed)

    def _challenge_closed(self, outcome: Any) -> None:
        """Back from the editor, with the outcome of its last grading (or None): keep it, redraw."""
        opened, self._challenge_open = self._challenge_open, None
        item = self.session.current if self.session is not None else None
        if opened is None or item is None or item.kind != "challenge":
            return
        if outcome is not None:
            self._challenge_result = outcome.result.to_json()
        try:
            self._challenge_source = opened[1].read_text(encoding="utf-8")
        except OSError:
            self._challenge_source = ""
        self._show_item()

    # ------------------------------------------------------------------ the end

    def _finish(self) -> None:
        s = self.session
        if s is None or self.mock_id is None:
            return
        services = self.app.services
        report = mock_store.finish(services.get_store(), services.get_library(), self.mock_id, s)
        self.session = None
        self.app.switch_screen(MockReportScreen(report))


class MockReportScreen(Screen[None]):
    """The scored report: per topic, per item, what was missed, the challenge, what to review."""

    CSS_PATH = "../mock.tcss"
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("ctrl+s", "export", "Save .md"),
    ]

    def __init__(self, report: Report) -> None:
        super().__init__()
        self.report = report

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="report-scroll"):
            yield Markdown(id="report-md")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"Mock interview report · {100 * self.report.score:.0f}%"
        lib = self.app.services.get_library()
        self.query_one("#report-md", Markdown).update(self.report.to_markdown(lib))
        self.query_one("#report-scroll").focus()

    def action_export(self) -> None:
        folder = paths.data_dir() / "reports"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"mock-{self.report.session_id}.md"
        target.write_text(self.report.to_markdown(self.app.services.get_library()), encoding="utf-8")
        self.notify(f"Saved {target}")

    def action_back(self) -> None:
        self.app.pop_screen()

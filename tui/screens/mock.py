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
from pathlib import Path
from typing import Any

from inferview.tui.screens.mock_dialogs import (
    DEFAULT_MINUTES,
    LENGTHS,
    MINUTES_SETTING,
    TICK_S,
    EndConfirmScreen,
    MockChoice,
    MockHubScreen,
    PausedScreen,
    _mmss,
)
from inferview.tui.screens.mock_report import MockReportScreen
from inferview.tui.widgets.answers import AnswerArea, AnswerInput
from inferview.tui.widgets.choices import ChoiceList
from inferview.tui.widgets.inline import inline_text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import (
    Footer,
    Header,
    Input,
    Markdown,
    SelectionList,
    Static,
    TextArea,
)

from inferview.mock import coding, probe
from inferview.mock import store as mock_store
from inferview.mock.session import MockSession
from inferview.practice.choice import display_order
from inferview.practice.units import FORMAT_EXAMPLES

__all__ = ["DEFAULT_MINUTES", "LENGTHS", "EndConfirmScreen", "MockChoice", "MockHubScreen",
           "MockReportScreen", "MockScreen", "PausedScreen"]


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
            yield AnswerInput(placeholder=f"a number with its unit, e.g. {FORMAT_EXAMPLES[0]}",
                              id="answer-numeric")
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
        if self.session.plan.note:
            self.notify(self.session.plan.note, title="Mock interview", timeout=10)
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
            sel.highlighted = 0  # as in Practice: the first arrow key moves, it does not only focus
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
        minutes = max(1, round(item.budget_s / 60))
        self.query_one("#mock-prompt", Markdown).update(
            f"**Interviewer:** Let's write some code. *{title}* — about {minutes} minute"
            f"{'s' if minutes != 1 else ''}.\n\n" + (ch.statement_text() if ch else ""))
        info = self.query_one("#challenge-info", Static)
        result = self._challenge_result
        status = f"last run: {result.get('verdict')}" if result else "not run yet"
        info.update(f"ctrl+o opens the editor (ctrl+r runs the tests there) · {status} · ctrl+n hands "
                    "it in (what the file holds is graded)")
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
            elif event.kind == "clock":
                self.app.notify(event.message, title="Mock interview", timeout=8)
            elif event.kind == "expired":
                self.app.notify(event.message, title="Mock interview", severity="warning", timeout=8)
                self._close_editor()
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
            s.submit_challenge(None, response=self._hand_in(item.ref))
        else:
            q = self.app.services.get_library().questions.get(item.ref)
            if q is not None and q.kind == "choice":
                s.answer(selected=sorted(self.query_one("#answer-choice", SelectionList).selected))
            elif q is not None and q.kind == "numeric":
                s.answer(text=self.query_one("#answer-numeric", Input).value)
            else:
                text = self.query_one("#answer-open", TextArea).text
                s.answer(text=text)
                if q is not None:
                    # the interviewer listens: a missed key point brings the question that probes it
                    probe.adapt(s, self.app.services.get_library(), q.id, text, self._rubrics())
        self._save()
        self._show_item()

    def _rubrics(self) -> Any:
        """The library's rubrics, compiled once per screen (for the silent grading of probes)."""
        if getattr(self, "_rubric_context", None) is None:
            from inferview.practice.openq import RubricContext

            self._rubric_context = RubricContext.from_library(self.app.services.get_library())
        return self._rubric_context

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
        path = coding.mock_file(self.mock_id, item.ref)
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
            # the result belongs to the source it graded, not to what the file holds now
            self._challenge_result = outcome.result.to_json()
            self._challenge_source = outcome.source
        self._show_item()

    def _close_editor(self) -> None:
        """Time is up with the editor open: save its unsaved edits and keep its last result."""
        from inferview.tui.screens.challenge import ChallengeScreen

        for screen in self.app.screen_stack:
            if isinstance(screen, ChallengeScreen) and screen.mock_id == self.mock_id:
                screen.before_quit()
                if screen.outcome is not None:
                    self._challenge_result = screen.outcome.result.to_json()
                    self._challenge_source = screen.outcome.source
        self._challenge_open = None

    def _hand_in(self, challenge_id: str) -> dict[str, Any]:
        """The coding item's response: its last result when it graded what the file holds now,
        else that source, to be graded when the interview ends."""
        ch = self.app.services.get_library().challenges.get(challenge_id)
        path = coding.mock_file(self.mock_id, challenge_id)
        try:
            text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
        except OSError:
            text = None
        return coding.hand_in_response(self._challenge_result, self._challenge_source, text,
                                       ch.starter_text() if ch else "")

    # ------------------------------------------------------------------ the end

    def _finish(self) -> None:
        s = self.session
        if s is None or self.mock_id is None:
            return
        services = self.app.services
        if s.status != "finished":
            s.end()
        coding.close_open_item(s, services.get_library(), self.mock_id, self._challenge_result,
                               self._challenge_source)
        self.session = None
        if coding.pending(s):
            # the coding item was handed in (or cut off) without a grading of that source
            self.query_one("#mock-prompt", Markdown).update(
                "**Grading your solution…** the report follows in a moment.")
            for wid in ("#answer-open", "#answer-numeric", "#answer-choice", "#challenge-info"):
                self.query_one(wid).display = False
            self._finish_grading(s)
            return
        self._show_report(mock_store.finish(services.get_store(), services.get_library(), self.mock_id, s))

    @work(thread=True, exclusive=True, exit_on_error=False, group="mock report")
    def _finish_grading(self, s: MockSession) -> None:
        services = self.app.services
        report = mock_store.finish(services.get_store(), services.get_library(), self.mock_id, s,
                                   backend=services.get_backend(), now=services.now())
        self.app.call_from_thread(self._show_report, report)

    def _show_report(self, report: Any) -> None:
        self.app.switch_screen(MockReportScreen(report))



"""Practice: a question card, an answer box, grading by kind, the model answer, key points hit
and missed (correctable), misconceptions flagged, follow-ups, and a self-rating that feeds FSRS."""

from __future__ import annotations

import time

from inferview.tui.practice_session import RATINGS, Feedback, PracticeSession, kind_hint
from inferview.tui.widgets.choices import ChoiceList
from inferview.tui.widgets.inline import inline_text
from rich.console import Group
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import (
    ContentSwitcher,
    Footer,
    Header,
    Input,
    Markdown,
    OptionList,
    SelectionList,
    Static,
    TextArea,
)
from textual.widgets.option_list import Option
from textual.widgets.selection_list import Selection

from inferview.content.models import ChoiceQuestion, NumericQuestion, OpenQuestion
from inferview.practice.units import FORMAT_EXAMPLES


def _unreadable_number(text: str, unit: str) -> str | None:
    """Why a numeric answer holds no readable number (a typo, not an attempt), else None.

    A readable number with a wrong or unknown unit is a real answer and is graded."""
    from inferview.practice.units import UnitError, parse_answer

    try:
        parse_answer(text, unit)
    except UnitError as exc:
        message = str(exc)
        if message.startswith("could not read a number") or "commas may only group thousands" in message:
            return message
    return None


def _point_label(point: str, hit: bool, matched: str | None = None) -> Text:
    label = Text.assemble(("✓ hit     " if hit else "✗ missed  ", "green" if hit else "red"), point)
    if hit and matched:
        label.append(f'  "{matched}"', style="dim italic")
    return label


def _flag_label(claim: str, flagged: bool) -> Text:
    return Text.assemble(("flagged   " if flagged else "dismissed ", "red" if flagged else "dim"), claim)


class PracticeScreen(Screen[None]):
    """One question at a time from the review queue."""

    BINDINGS = [
        # not priority: the key must queue behind the characters typed just before it
        Binding("ctrl+s", "submit", "Submit"),
        Binding("1", "rate(1)", "Again", show=False),
        Binding("2", "rate(2)", "Hard", show=False),
        Binding("3", "rate(3)", "Good", show=False),
        Binding("4", "rate(4)", "Easy", show=False),
        Binding("f", "follow_ups", "Follow-ups"),
        Binding("space", "toggle", "Toggle", show=False),
        Binding("ctrl+n", "skip", "Skip"),
        Binding("escape", "back", "Back"),
        # with feedback showing, the page keys scroll it wherever the focus is (a key-point list
        # would take them for its own highlight, and the model answer is below the fold at 80x24)
        Binding("pagedown", "feedback_page(1)", "Scroll", show=False, priority=True),
        Binding("pageup", "feedback_page(-1)", "Scroll", show=False, priority=True),
    ]

    def __init__(self, topic: str | None = None) -> None:
        super().__init__()
        self.topic = topic
        self.feedback: Feedback | None = None
        self._points: list[str] = []
        self._claims: list[str] = []
        self._shown_at = time.monotonic()

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="practice-status")
        with ContentSwitcher(id="practice-switch", initial="asking"):
            with Vertical(id="asking"):
                with VerticalScroll(id="card-scroll"):
                    yield Markdown(id="card")
                yield Static(id="answer-hint", classes="muted")
                yield TextArea(id="answer-open", soft_wrap=True, tab_behavior="focus")
                yield ChoiceList(id="answer-choice")
                yield Input(id="answer-numeric", placeholder=f"e.g. {FORMAT_EXAMPLES[0]}")
            with VerticalScroll(id="feedback"):
                yield Static(id="verdict")
                yield Static("Key points — enter toggles one the grader got wrong", id="kp-label", classes="muted")
                yield OptionList(id="key-points")
                yield Static("Misconceptions flagged — enter dismisses a wrong flag", id="flag-label",
                             classes="muted")
                yield OptionList(id="flags")
                yield Static(id="details")
                yield Markdown(id="model-answer")
                yield Static(id="follow-ups")
            with Vertical(id="finished"):
                yield Static(id="finished-text")
        yield Static(id="rating-bar")
        yield Footer()

    def on_mount(self) -> None:
        services = self.app.services
        library = services.get_library()
        self.session = PracticeSession(library, services.get_store(), self.topic, services.now,
                                       judge=services.get_judge())
        if services.judge_problem:
            self.notify(f"{services.judge_problem}; answers are graded by the rubric.", severity="warning")
        self.sub_title = f"Practice · {library.topic_title(self.topic)}" if self.topic else "Practice · all topics"
        self.show_current()

    # ------------------------------------------------------------------ asking

    def show_current(self) -> None:
        """Show the question at the head of the queue, or the end of the session."""
        self.feedback = None
        switch = self.query_one("#practice-switch", ContentSwitcher)
        item = self.session.current()
        self.query_one("#rating-bar", Static).display = False
        if item is None:
            switch.current = "finished"
            s = self.session
            text = Text("Nothing left to practise here today.\n\n", style="bold")
            if s.answered:
                text.append(f"{s.answered} answered, {s.right} right. ")
            text.append("Escape goes back; new questions and reviews come due over the next days.")
            self.query_one("#finished-text", Static).update(text)
            self._status()
            self.refresh_bindings()
            return
        switch.current = "asking"
        q = item.question
        self.query_one("#card", Markdown).update(item.prompt)
        self.query_one("#card-scroll").scroll_home(animate=False)
        self.query_one("#answer-hint", Static).update(kind_hint(q))
        boxes = {"answer-open": OpenQuestion, "answer-choice": ChoiceQuestion, "answer-numeric": NumericQuestion}
        for box_id, kind in boxes.items():
            self.query_one(f"#{box_id}").display = isinstance(q, kind)
        if isinstance(q, OpenQuestion):
            box = self.query_one("#answer-open", TextArea)
            box.load_text("")
        elif isinstance(q, ChoiceQuestion):
            box = self.query_one("#answer-choice", SelectionList)
            box.clear_options()
            box.add_options([Selection(inline_text(q.options[i].text), i)
                             for i in item.order or range(len(q.options))])
            box.highlighted = 0
        else:
            box = self.query_one("#answer-numeric", Input)
            box.value = ""
        box.focus()
        self._shown_at = time.monotonic()
        self._status()
        self.refresh_bindings()

    def _status(self) -> None:
        item = self.session.current()
        s = self.session
        parts = [f"{s.remaining} left", f"{s.answered} answered"]
        if item is not None:
            q = item.question
            label = item.label + (f" ({item.reason})" if item.reason else "")
            parts.insert(0, f"{label} · {self.session.library.topic_title(q.topic)} · {q.difficulty}")
        self.query_one("#practice-status", Static).update(" · ".join(parts))

    def action_submit(self) -> None:
        item = self.session.current()
        if item is None or self.feedback is not None:
            return
        q = item.question
        if isinstance(q, OpenQuestion):
            answer: str | list[int] = self.query_one("#answer-open", TextArea).text
        elif isinstance(q, ChoiceQuestion):
            answer = list(self.query_one("#answer-choice", SelectionList).selected)
        else:
            answer = self.query_one("#answer-numeric", Input).value
        if (isinstance(answer, str) and not answer.strip()) or (isinstance(answer, list) and not answer):
            self.notify("Answer first (or ctrl+n to skip).", severity="warning")
            return
        if isinstance(q, NumericQuestion) and isinstance(answer, str) and item.rendered is not None:
            problem = _unreadable_number(answer, item.rendered.unit)
            if problem:
                # a typo is not an attempt: grading it would record a miss and give the answer away
                self.notify(f"{problem[0].upper()}{problem[1:]}. Write a number with its unit, e.g. "
                            f"{FORMAT_EXAMPLES[0]}.",
                            severity="warning")
                return
        duration = round(time.monotonic() - self._shown_at, 1)
        if isinstance(q, OpenQuestion) and self.session.judge is not None:
            # the judge is a model server: never wait for it on the UI thread
            self.query_one("#answer-hint", Static).update("Grading with the judge…")
            self._grade_with_judge(answer, duration)
            return
        self.feedback = self.session.grade(answer, duration)
        self.show_feedback()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def _grade_with_judge(self, answer: str, duration: float) -> None:
        feedback = self.session.grade(answer, duration)
        self.app.call_from_thread(self._graded, feedback)

    def _graded(self, feedback: Feedback) -> None:
        if self.feedback is None and self.session.current() is feedback.item:
            self.feedback = feedback
            self.show_feedback()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_submit()

    # ------------------------------------------------------------------ feedback

    def show_feedback(self) -> None:
        """Show what grading found, and ask for the self-rating."""
        fb = self.feedback
        assert fb is not None
        r = fb.result
        self.query_one("#practice-switch", ContentSwitcher).current = "feedback"
        self._verdict()
        q = fb.item.question
        is_open = isinstance(q, OpenQuestion)
        kps = self.query_one("#key-points", OptionList)
        kps.clear_options()
        self._points = [kp.point for kp in q.key_points] if is_open else []
        if is_open:
            matched = r.get("matched", {})
            kps.add_options([Option(_point_label(p, p in r["hits"], matched.get(p)), id=f"kp-{i}")
                             for i, p in enumerate(self._points)])
            kps.highlighted = 0
        flags = self.query_one("#flags", OptionList)
        flags.clear_options()
        self._claims = [f["claim"] for f in r["flags"]]
        flags.add_options([Option(_flag_label(c, True), id=f"flag-{i}") for i, c in enumerate(self._claims)])
        for wid in ("#kp-label", "#key-points"):
            self.query_one(wid).display = is_open
        for wid in ("#flag-label", "#flags"):
            self.query_one(wid).display = bool(r["flags"])
        self.query_one("#details", Static).update(self._details(fb))
        self.query_one("#model-answer", Markdown).update(f"**Model answer.** {r['model_answer']}")
        follow = [fid for fid in r.get("follow_ups", []) if fid in self.session.library.questions]
        fu = self.query_one("#follow-ups", Static)
        fu.display = bool(follow)
        if follow:
            first = self.session.library.questions[follow[0]].prompt.strip().splitlines()[0]
            more = f" (+{len(follow) - 1} more)" if len(follow) > 1 else ""
            fu.update(Text.assemble(("Follow-up an interviewer would ask (f): ", "bold"), first, more))
        self.query_one("#feedback", VerticalScroll).scroll_home(animate=False)
        (kps if is_open else self.query_one("#feedback")).focus()
        self._rating_bar()
        self.refresh_bindings()

    def _verdict(self) -> None:
        fb = self.feedback
        assert fb is not None
        r = fb.result
        mark, style = ("✓ Right", "bold green") if r["correct"] else (
            ("~ Partly", "bold yellow") if r.get("partial") else ("✗ Not yet", "bold red"))
        line = Text(f"{mark} ", style=style)
        line.append(f"score {round(100 * r['score'])}%  ", style="dim")
        line.append(str(r["message"]))
        if fb.corrected:
            line.append("  (corrected by you)", style="italic dim")
        self.query_one("#verdict", Static).update(line)

    def _details(self, fb: Feedback) -> Group:
        r = fb.result
        parts: list[Text] = []
        for f in r["flags"]:
            line = Text.assemble(("✗ ", "red"), (f["claim"], "bold"), ": ", f["correction"])
            if f.get("matched"):
                line.append(f'  (you said: "{f["matched"]}")', style="dim italic")
            parts.append(line)
        if r["kind"] == "open" and r.get("grader"):
            who = "a local-model judge" if r["grader"] == "judge" else "the rubric"
            note = f" — {r['note']}" if r.get("note") else ""
            parts.append(Text(f"Graded by {who}{note}.", style="dim"))
        if r["kind"] == "choice":
            # in the order the options were shown, code spans styled rather than in backticks
            shown = {index: n for n, index in enumerate(fb.item.order or [])}
            for o in sorted(r["options"], key=lambda o: shown.get(o.get("index"), len(shown))):
                mark = ("✓" if o["correct"] else "✗") if o["chosen"] else ("○" if o["correct"] else " ")
                style = "green" if o["correct"] else ("red" if o["chosen"] else "dim")
                option = inline_text(str(o["text"]))
                option.stylize(style)
                line = Text(f"{mark} ", style=style) + option
                if o.get("why") and (o["chosen"] or o["correct"]):
                    line.append(" — ")
                    line.append_text(inline_text(str(o["why"])))
                parts.append(line)
        if r["kind"] == "numeric":
            parts.append(Text.assemble(("Expected: ", "bold"), str(r["expected_text"])))
            if r.get("diagnosis"):
                parts.append(Text.assemble(("Likely slip: ", "bold yellow"), str(r["diagnosis"])))
        return Group(*parts)

    def _rating_bar(self) -> None:
        fb = self.feedback
        bar = self.query_one("#rating-bar", Static)
        bar.display = fb is not None
        if fb is None:
            return
        text = Text("Rate yourself: ", style="bold")
        for n, name in RATINGS.items():
            style = "reverse bold" if n == fb.suggested_rating else ""
            text.append(f" {n} {name} ", style=style)
            text.append(" ")
        text.append("(highlighted: suggested)", style="dim")
        bar.update(text)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Enter on a key point toggles hit/missed; on a flagged misconception dismisses it."""
        if self.feedback is None or event.option_id is None:
            return
        kind, _, index = event.option_id.partition("-")
        if kind == "kp":
            point = self._points[int(index)]
            self.session.toggle_key_point(self.feedback, point)
            hit = point in self.feedback.result["hits"]
            label = _point_label(point, hit, self.feedback.result.get("matched", {}).get(point))
        elif kind == "flag":
            claim = self._claims[int(index)]
            if not any(f["claim"] == claim for f in self.feedback.result["flags"]):
                return  # already dismissed
            self.session.dismiss_flag(self.feedback, claim)
            label = _flag_label(claim, False)
        else:
            return
        event.option_list.replace_option_prompt(event.option_id, label)
        self._verdict()
        self.query_one("#details", Static).update(self._details(self.feedback))
        self._rating_bar()

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle":
            return self.feedback is not None and isinstance(self.app.focused, OptionList)
        if action in ("rate", "follow_ups"):
            if self.feedback is None:
                return False
            if action == "follow_ups":
                return bool(self.feedback.result.get("follow_ups"))
        if action == "submit":
            return self.feedback is None and self.session.current() is not None
        if action == "skip":
            return self.session.current() is not None
        if action == "feedback_page":
            return self.feedback is not None
        return True

    def action_feedback_page(self, direction: int) -> None:
        scroll = self.query_one("#feedback", VerticalScroll)
        if direction > 0:
            scroll.scroll_page_down(animate=False)
        else:
            scroll.scroll_page_up(animate=False)

    def action_toggle(self) -> None:
        """Space on a key point or a flag does what enter does."""
        focused = self.app.focused
        if isinstance(focused, OptionList) and focused.highlighted is not None:
            focused.action_select()

    def action_rate(self, rating: int) -> None:
        if self.feedback is None:
            return
        from inferview.store import StoreError

        try:
            due = self.session.rate(self.feedback, rating)
        except StoreError as exc:  # e.g. a full disk: the answer stays here, rate it again later
            self.notify(f"{exc} Your answer is still here: rate it again once that is fixed.",
                        severity="error", timeout=10)
            return
        days = (due - self.app.services.now()).total_seconds() / 86400
        when = "again today" if days < 1 else f"in {round(days)} day{'s' if round(days) != 1 else ''}"
        self.notify(f"{RATINGS[rating]} — next review {when}.", timeout=3)
        self.show_current()

    def action_follow_ups(self) -> None:
        if self.feedback is None:
            return
        added = self.session.ask_follow_ups(list(self.feedback.result.get("follow_ups", [])))
        self.notify(f"{len(added)} follow-up{'s' if len(added) != 1 else ''} next." if added
                    else "The follow-ups are already queued.", timeout=3)

    def action_skip(self) -> None:
        if self.feedback is not None:
            from inferview.store import StoreError

            try:
                self.session.abandon(self.feedback)
            except StoreError as exc:
                self.notify(f"{exc} The answer was not kept.", severity="error", timeout=10)
        self.session.skip()
        self.show_current()

    def _draft(self) -> bool:
        """Whether an answer is written (or options chosen) but not yet submitted."""
        item = self.session.current()
        if self.feedback is not None or item is None:
            return False
        q = item.question
        if isinstance(q, OpenQuestion):
            return bool(self.query_one("#answer-open", TextArea).text.strip())
        if isinstance(q, ChoiceQuestion):
            return bool(self.query_one("#answer-choice", SelectionList).selected)
        return bool(self.query_one("#answer-numeric", Input).value.strip())

    def action_back(self) -> None:
        if self._draft():
            from inferview.tui.screens.dialogs import ConfirmScreen

            def decided(choice: str | None) -> None:
                if choice == "leave":
                    self.app.pop_screen()

            self.app.push_screen(
                ConfirmScreen("Your answer is not submitted yet. Leave and discard it?",
                              [("stay", "Keep writing"), ("leave", "Discard and leave")], title="Leave practice"),
                decided,
            )
            return
        if self.feedback is not None:
            from inferview.store import StoreError

            try:
                self.session.abandon(self.feedback)
            except StoreError as exc:  # leaving is not blocked; say what was not kept
                self.app.notify(f"{exc} The last answer was not kept.", severity="error",
                                timeout=10)
            self.feedback = None
        self.app.pop_screen()

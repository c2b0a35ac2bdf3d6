"""The mock interview in the app, with a fake clock: a whole session, expiry, pause, leaving and
resuming after a restart, the challenge without hints, and a snapshot of the report."""

from __future__ import annotations

from inferview.tests.support.tui import (  # noqa: F401
    app_factory_fixture,
    screen_text,
    settle,
)
from inferview.tui.screens.mock import MockHubScreen, MockReportScreen, MockScreen, PausedScreen

from inferview.mock.report import ItemReport, Report

SIZE = (80, 24)


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


async def _open(pilot, screen: MockScreen) -> MockScreen:
    """Let the app start, then show ``screen`` and let it settle."""
    await settle(pilot)
    pilot.app.push_screen(screen)
    await settle(pilot)
    return screen


async def _answer_current(pilot, screen) -> None:
    """Answer whatever is being asked, the way a user would."""
    item = screen.session.current
    q = pilot.app.services.get_library().questions.get(item.ref) if item.kind == "question" else None
    if item.kind == "challenge":
        await pilot.press("ctrl+n")
    elif q.kind == "choice":
        await pilot.press("space")  # the first option is the correct one in the test bank
        await pilot.press("ctrl+n")
    else:
        screen.query_one("#answer-open").text = q.answer
        await pilot.press("ctrl+n")
    await settle(pilot)


async def test_home_opens_the_hub_and_starts_a_session(app_factory):
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        assert isinstance(app.screen, MockHubScreen)
        assert "Length" in screen_text(app) and "Focus" in screen_text(app)
        await pilot.click("#len-15")
        await pilot.click("#start")
        await settle(pilot)
        assert isinstance(app.screen, MockScreen)
        assert app.screen.session.minutes == 15
        assert "⏱ 15:00" in screen_text(app) or "⏱ 14:5" in screen_text(app)


async def test_a_whole_session_ends_in_a_report_and_nothing_is_shown_before(app_factory):
    app = app_factory()
    clock = FakeClock()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, MockScreen(minutes=30, seed=1, clock=clock))
        total = len(screen.session.plan.items)
        assert total >= 3 and "**Interviewer:**" not in screen_text(app)
        for _ in range(total):
            assert "model answer" not in screen_text(app).lower()
            clock.t += 40
            await _answer_current(pilot, screen)
        assert isinstance(app.screen, MockReportScreen)
        report = app.screen.report
        assert report.reason == "completed" and len(report.items) == total
        assert all(i.time_s == 40 for i in report.items)
        text = screen_text(app)
        assert "Mock interview" in text and "Score per topic" in text
        store = app.services.get_store()
        assert store.list_mocks()[0]["status"] == "finished"


async def test_the_clock_warns_then_ends_the_interview_by_itself(app_factory):
    app = app_factory()
    clock = FakeClock()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, MockScreen(minutes=10, seed=2, clock=clock))
        clock.t += 5 * 60
        screen.tick()
        await settle(pilot)
        assert "5 minutes left" in " ".join(str(n.message) for n in app._notifications)
        clock.t += 4 * 60 + 30
        screen.tick()
        await settle(pilot)
        assert "urgent" in screen.query_one("#mock-clock").classes
        clock.t += 60
        screen.tick()
        await settle(pilot)
        assert isinstance(app.screen, MockReportScreen)
        assert app.screen.report.reason == "time up"


async def test_pause_stops_the_clock(app_factory):
    app = app_factory()
    clock = FakeClock()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, MockScreen(minutes=15, seed=3, clock=clock))
        clock.t += 60
        await pilot.press("ctrl+p")
        await settle(pilot)
        assert isinstance(app.screen, PausedScreen)
        clock.t += 3600
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen and screen.session.status == "running"
        assert abs(screen.session.remaining_s() - 14 * 60) < 1e-6


async def test_leave_and_resume_after_the_app_was_closed(app_factory, tmp_path):
    store_path = tmp_path / "resume.sqlite3"
    app = app_factory(store_path=store_path)
    clock = FakeClock()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, MockScreen(minutes=20, seed=4, clock=clock))
        clock.t += 90
        await _answer_current(pilot, screen)
        mock_id = screen.mock_id
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, MockScreen)
    again = app_factory(store_path=store_path)
    later = FakeClock()
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        resumed = MockScreen(mock_id=mock_id, clock=later)
        again.push_screen(resumed)
        await settle(pilot)
        s = resumed.session
        assert s.status == "running" and s.index == 1 and 0 in s.responses
        assert abs(s.remaining_s() - (20 * 60 - 90)) < 1e-6


async def test_the_interview_challenge_shows_the_clock_and_no_hints_or_solution(app_factory):
    app = app_factory()
    clock = FakeClock()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await _open(pilot, MockScreen(minutes=30, seed=1, clock=clock))
        while screen.session.current.kind != "challenge":
            await pilot.press("ctrl+k")
            await settle(pilot)
        assert app.focused is screen.query_one("#mock-card")  # the keys scroll the statement
        clock.t += 125
        await pilot.press("ctrl+o")
        await settle(pilot)
        from inferview.tui.screens.challenge import ChallengeScreen

        challenge = app.screen
        assert isinstance(challenge, ChallengeScreen) and challenge.mock_id == screen.mock_id
        assert challenge.sub_title == "⏱ 27:55 left in the interview"
        assert challenge.check_action("hint", ()) is False and challenge.check_action("solution", ()) is False
        challenge.query_one("#editor").text = "def add(a, b):\n    return a + b\n"
        await pilot.press("ctrl+r")
        await settle(pilot, rounds=6)
        challenge._grading_ended -= 5  # not an escape meant to cancel the grading
        challenge.action_back()
        await settle(pilot)
        assert app.screen is screen
        assert screen._challenge_result["verdict"] == "passed"
        sub = app.services.get_store().submissions("demo-sum")[0]
        assert sub["mock_id"] == screen.mock_id


async def _to_the_challenge(pilot, screen) -> None:
    while screen.session.current.kind != "challenge":
        await pilot.press("ctrl+k")
        await settle(pilot)


async def _wait_for_report(pilot, app) -> Report:
    for _ in range(40):
        if isinstance(app.screen, MockReportScreen):
            return app.screen.report
        await settle(pilot)
    raise AssertionError(f"no report; the screen shows:\n{screen_text(app)}")


async def test_a_solution_handed_in_without_running_it_is_graded(app_factory):
    """ctrl+n on the coding item, with a correct solution in the mock's file and no ctrl+r: the
    report grades the file and says passed."""
    from inferview.mock.coding import mock_file

    app = app_factory()
    clock = FakeClock()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, MockScreen(minutes=30, seed=1, clock=clock))
        await _to_the_challenge(pilot, screen)
        path = mock_file(screen.mock_id, "demo-sum")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")  # their own editor
        clock.t += 300
        await pilot.press("ctrl+n")
        await settle(pilot)
        while screen.session is not None and screen.session.current is not None:
            await pilot.press("ctrl+k")
            await settle(pilot)
        report = await _wait_for_report(pilot, app)
        (item,) = [i for i in report.items if i.kind == "challenge"]
        assert item.answered and item.verdict == "passed" and item.score == 1.0
        assert item.time_s == 300
        assert report.challenge["verdict"] == "passed"
        assert "not graded" not in report.to_markdown()
        assert app.services.get_store().submissions("demo-sum")[0]["mock_id"] == screen.mock_id


async def test_time_running_out_in_the_editor_grades_what_was_typed(app_factory):
    """The clock runs out with the editor open and the solution typed but never saved or run:
    the edits are saved, the file is graded, the report says passed with the item's time."""
    app = app_factory()
    clock = FakeClock()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await _open(pilot, MockScreen(minutes=30, seed=1, clock=clock))
        await _to_the_challenge(pilot, screen)
        started = clock.t
        await pilot.press("ctrl+o")
        await settle(pilot)
        app.screen.query_one("#editor").text = "def add(a, b):\n    return a + b\n"
        clock.t += 31 * 60
        screen.tick()
        report = await _wait_for_report(pilot, app)
        (item,) = [i for i in report.items if i.kind == "challenge"]
        assert report.reason == "time up"
        assert item.answered and item.verdict == "passed"
        assert item.time_s == screen_time_left(started, clock)


def screen_time_left(started: float, clock: FakeClock) -> float:
    """The coding item's time when the clock ran out: from its start to the end of the 30 minutes."""
    return 30 * 60 - (started - 100.0)


async def test_an_untouched_starter_is_not_attempted(app_factory):
    app = app_factory()
    clock = FakeClock()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, MockScreen(minutes=30, seed=1, clock=clock))
        await _to_the_challenge(pilot, screen)
        await pilot.press("ctrl+o")
        await settle(pilot)
        app.screen.action_back()
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        while screen.session is not None and screen.session.current is not None:
            await pilot.press("ctrl+k")
            await settle(pilot)
        report = await _wait_for_report(pilot, app)
        (item,) = [i for i in report.items if i.kind == "challenge"]
        assert not item.answered and item.verdict is None
        assert app.services.get_grader().graded == []  # nothing to grade: the starter as given


async def test_a_choice_question_starts_with_its_first_option_highlighted(app_factory):
    app = app_factory()
    clock = FakeClock()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, MockScreen(minutes=30, seed=1, clock=clock))
        lib = app.services.get_library()
        while screen.session.current is not None:
            item = screen.session.current
            q = lib.questions.get(item.ref) if item.kind == "question" else None
            if q is not None and q.kind == "choice":
                break
            await pilot.press("ctrl+k")
            await settle(pilot)
        else:
            raise AssertionError("the plan has no choice question")
        sel = screen.query_one("#answer-choice")
        assert sel.highlighted == 0
        await pilot.press("down", "space", "ctrl+n")
        await settle(pilot)
        shown = screen.session.responses[screen.session.index - 1]["selected"]
        from inferview.practice.choice import display_order

        assert shown == [display_order(q, item.seed)[1]]  # the option the user aimed at


def _fixed_report() -> Report:
    items = [
        ItemReport(0, "question", "kv-why", "kv-cache", "Why isn't the 500th token 500 times more expensive?",
                   240, 95.0, True, 0.5, answer="It caches things.", model_answer="The KV cache stores keys.",
                   key_points_missed=["only the new token needs a forward pass"]),
        ItemReport(1, "question", "fa-exact", "flash-attention", "Is flash attention exact?", 90, 30.0, True, 0.0,
                   misconceptions=[{"claim": "flash attention approximates", "correction": "It is exact."}]),
        ItemReport(2, "challenge", "demo-sum", "kv-cache", "Add two numbers", 300, 200.0, True, 0.5,
                   verdict="failed", failing_checks=[{"name": "adds", "message": "add(0, 1) returned -1",
                                                      "counterexample": "a=0, b=1", "hint": "Use plus."}]),
    ]
    return Report(7, "2026-03-02T09:30:00+00:00", 15, None, "time up", 900.0, 0.4,
                  {"kv-cache": {"score": 0.5, "items": 2}, "flash-attention": {"score": 0.0, "items": 1}},
                  items, ["kv-why", "fa-exact"],
                  {"id": "demo-sum", "verdict": "failed", "failing_checks": items[2].failing_checks})


def test_report_snapshot(app_factory, snap_compare):
    app = app_factory()

    async def show(pilot) -> None:
        await settle(pilot)
        app.push_screen(MockReportScreen(_fixed_report()))
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=show)



async def test_choice_options_are_shuffled_as_in_practice(app_factory, tmp_path):
    """The banks list the right option first; the interview must not show them in that order."""
    from inferview.tests.support.tui import make_library

    from inferview.practice.choice import display_order

    library = make_library(tmp_path / "shuffled")
    q = library.questions["kv-choice"]
    extra = [q.options[1].model_copy(update={"text": f"Distractor {i}"}) for i in range(4)]
    library.questions["kv-choice"] = q.model_copy(update={"shuffle": True, "options": [*q.options, *extra]})
    app = app_factory(library=library)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, MockScreen(minutes=30, seed=1, clock=FakeClock()))
        for _ in range(len(screen.session.plan.items)):
            if screen.session.current.ref == "kv-choice":
                break
            await pilot.press("ctrl+k")
            await settle(pilot)
        item = screen.session.current
        assert item.ref == "kv-choice"
        order = display_order(library.questions["kv-choice"], item.seed)
        assert order != list(range(6))
        sel = screen.query_one("#answer-choice")
        assert [sel.get_option_at_index(i).value for i in range(sel.option_count)] == order
        assert sel.get_option_at_index(0).value != 0  # the right answer is not simply the first line


async def test_leaving_keeps_the_answer_being_written(app_factory):
    """Escape pauses and leaves; the half-written answer is there again on resume."""
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, MockScreen(minutes=20, seed=4, clock=FakeClock()))
        box = next(w for w in screen.query("#answer-open, #answer-numeric") if w.display)
        await pilot.press(*"half")
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, MockScreen)
        resumed = MockScreen(mock_id=screen.mock_id, clock=FakeClock())
        app.push_screen(resumed)
        await settle(pilot)
        box = resumed.query_one(f"#{box.id}")
        assert (box.text if box.id == "answer-open" else box.value) == "half"
        assert app.services.get_store().get_setting(f"mock_draft:{screen.mock_id}") is None


async def test_the_hub_footer_shows_the_hub_keys(app_factory):
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        assert isinstance(app.screen, MockHubScreen)
        footer = screen_text(app).splitlines()[-1]
        assert "esc Back" in footer and "Pause" not in footer


async def test_quitting_pauses_the_interview(app_factory):
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, MockScreen(minutes=20, seed=4, clock=FakeClock()))
        await pilot.press(*"draft")
        await pilot.press("ctrl+q")
        await pilot.pause()
    store = app.services.get_store()  # closed on exit; this opens the same file again
    assert store.list_mocks()[0]["status"] == "paused"
    assert store.get_setting(f"mock_draft:{screen.mock_id}")["index"] == 0


async def test_the_hub_offers_30_minutes_then_the_last_length_chosen(app_factory):
    """The arrows start from the length shown as chosen (RadioSet highlights its first button on
    mount), the default is PRODUCT.md's 30 minutes, and the last length picked is offered next time."""
    from textual.widgets import RadioSet

    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        lengths = app.screen.query_one("#length", RadioSet)
        assert lengths.pressed_button.id == "len-30"
        await pilot.press("shift+tab", "shift+tab")  # Start -> Focus -> Length
        assert lengths.has_focus
        await pilot.press("down", "enter")  # one below the chosen 30: 45
        await pilot.press("tab", "tab", "enter")  # Focus -> Start, start
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MockScreen) and screen.session.minutes == 45
        await pilot.press("escape")  # pause and leave
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        assert app.screen.query_one("#length", RadioSet).pressed_button.id == "len-45"


async def _until(pilot, condition, timeout_s: float = 5.0) -> None:
    """Pause until ``condition()`` holds (timers fire late on a loaded machine); fail at the timeout."""
    import time

    end = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < end, "timed out waiting"
        await pilot.pause(0.1)


async def test_the_clock_runs_on_while_end_is_asked_and_the_dialog_shows_it(app_factory):
    """As in a real interview, asking to stop early does not stop the time: the dialog counts down,
    "Keep going" goes on with the time that passed, and time running out there ends the interview."""
    from inferview.tui.screens.mock import EndConfirmScreen

    app = app_factory()
    clock = FakeClock()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, MockScreen(minutes=20, seed=4, clock=clock))
        await pilot.press("ctrl+e")
        await pilot.pause()
        assert isinstance(app.screen, EndConfirmScreen)
        assert "20:00 left" in screen_text(app)
        footer = screen_text(app).splitlines()[-1]  # the dialog's keys, not the interview's
        assert "esc Cancel" in footer and "Pause" not in footer and "Skip" not in footer
        clock.t += 65
        await _until(pilot, lambda: "18:55 left" in screen_text(app))  # the dialog's own timer
        await pilot.press("escape")  # keep going
        await pilot.pause()
        assert app.screen is screen and screen.session.status == "running"
        assert round(screen.session.remaining_s()) == 20 * 60 - 65
        await pilot.press("ctrl+e")
        await pilot.pause()
        clock.t += 20 * 60
        await _until(pilot, lambda: isinstance(app.screen, MockReportScreen))
        await settle(pilot)


async def test_keys_typed_fast_stay_in_their_answer(app_factory):
    """ctrl+n right behind the last characters (a fast typist, a terminal sending a burst) must
    hand in every character, and none may spill into the next question's box."""
    from textual import events

    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, MockScreen(minutes=20, seed=4, clock=FakeClock()))
        item = screen.session.current
        q = app.services.get_library().questions[item.ref]
        assert q.kind == "open"
        for ch in "kv cache":
            app.post_message(events.Key(ch if ch != " " else "space", ch))
        app.post_message(events.Key("ctrl+n", None))
        await settle(pilot)
        assert screen.session.responses[0]["text"] == "kv cache"
        for box in screen.query("#answer-open, #answer-numeric"):
            if box.display:  # the next question's box starts empty
                assert (box.text if box.id == "answer-open" else box.value) == ""


async def test_enter_hands_in_a_number(app_factory):
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, MockScreen(minutes=30, seed=4, clock=FakeClock()))
        await pilot.press("ctrl+k")  # the plan: kv-why, then the drill kv-size-drill
        await settle(pilot)
        index = screen.session.index
        assert screen.session.current.ref == "kv-size-drill"
        await pilot.press(*"40", "space", *"GiB", "enter")
        await settle(pilot)
        assert screen.session.responses[index]["text"] == "40 GiB" and screen.session.index == index + 1


def test_the_hub_lists_sessions_in_local_time(monkeypatch):
    import time

    monkeypatch.setenv("TZ", "Asia/Kolkata")  # UTC+5:30, no daylight saving
    time.tzset()
    try:
        label = MockHubScreen._label({"id": 3, "created_at": "2026-03-02T09:30:00.000000+00:00",
                                      "config": {"minutes": 30}, "status": "paused", "state": {"elapsed_s": 60}})
    finally:
        monkeypatch.undo()
        time.tzset()
    assert label.startswith("#3  2026-03-02 15:00  30 min  paused · 29:00 left")


async def test_the_interview_keys_work_from_the_answer_box_and_list_in_order(app_factory):
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, MockScreen(minutes=20, seed=4, clock=FakeClock()))
        assert app.focused is screen.query_one("#answer-open")
        footer = screen_text(app).splitlines()[-1]
        assert footer.index("^n Next") < footer.index("^k Skip") < footer.index("^p Pause") < footer.index("^e End")
        await pilot.press(*"ab", "ctrl+k")  # skip, typed straight after the text
        await settle(pilot)
        assert screen.session.index == 1 and screen.session.responses[0].get("skipped")
        await pilot.press("ctrl+e")
        await pilot.pause()
        assert type(app.screen).__name__ == "EndConfirmScreen"


async def test_a_focus_without_a_length_opens_the_hub_with_the_focus_chosen(app_factory):
    from textual.widgets import Select

    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await _open(pilot, MockScreen(focus="flash-attention"))
        assert isinstance(app.screen, MockHubScreen)
        assert app.screen.query_one("#focus", Select).value == "flash-attention"


async def test_a_missed_key_point_brings_the_probing_question_next(app_factory):
    """In the app: the opener answered without its second point; the next screen asks the question
    that probes it, marked as a follow-up, and the answer itself is still not graded on screen."""
    app = app_factory()
    clock = FakeClock()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, MockScreen(minutes=30, seed=1, clock=clock))
        s = screen.session
        first = s.current
        lib = app.services.get_library()
        q = lib.questions[first.ref]
        assert q.kind == "open" and len(q.key_points) >= 2
        screen.query_one("#answer-open").text = "The KV cache stores the keys and values."
        clock.t += 30
        await pilot.press("ctrl+n")
        await settle(pilot)
        nxt = s.current
        assert nxt.ref == "fa-exact", [i.ref for i in s.plan.items]  # the point's probe, moved up
        assert nxt.follow_up_of == first.ref and nxt.probes == "only the new token needs a forward pass"
        assert "follow-up" in screen_text(app)
        assert "missed" not in screen_text(app).lower()

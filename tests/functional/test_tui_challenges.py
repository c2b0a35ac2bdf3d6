"""Challenges: the list, the editor and workspace file, grading in a worker (fake grader), cancel,
results with counterexamples, hints, the reference solution, disk changes and an external editor."""

from __future__ import annotations

import sys
from pathlib import Path

from inferview.tests.support.tui import (  # noqa: F401
    CORRECT,
    FAILED,
    PASSED,
    STARTER,
    WRONG,
    FakeGradingClient,
    app_factory_fixture,
    footer_text,
    screen_text,
    settle,
)
from inferview.tui.app import InitialChallenge
from inferview.tui.screens.challenge import ChallengeScreen
from inferview.tui.screens.challenges import ChallengesScreen

from inferview import paths


async def test_list_shows_status_best_time_and_backend(app_factory) -> None:
    app = app_factory()
    app.services.get_store().record_submission("demo-sum", PASSED, CORRECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ChallengesScreen)
        row = next(line for line in screen_text(app).splitlines() if "Add two numbers" in line)
        assert "passed" in row and "0.4s" in row and "cpu" in row
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ChallengeScreen)


async def test_opening_makes_the_workspace_file_and_warms_the_grader(app_factory) -> None:
    client = FakeGradingClient()
    app = app_factory(grading_client=client, initial=InitialChallenge("demo-sum"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ChallengeScreen)
        path = paths.workspace_dir() / "demo-sum" / "solution.py"
        assert screen.path == path and path.read_text() == STARTER
        assert screen.editor.text == STARTER
        assert [Path(p).name for p in client.prepared] == ["demo-sum"]  # the folder is sent
        assert "Write add(a, b)" in screen_text(app)


async def test_grading_a_correct_file_passes_and_is_stored(app_factory) -> None:
    client = FakeGradingClient()
    app = app_factory(grading_client=client, initial=InitialChallenge("demo-sum"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.screen.editor.load_text(CORRECT)
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert app.screen.last_result.verdict == "passed"
        assert "PASSED" in screen_text(app)
        assert app.screen.path.read_text() == CORRECT  # saved before grading
        assert [(Path(c).name, src) for c, src in client.graded] == [("demo-sum", CORRECT)]
        subs = app.services.get_store().submissions("demo-sum")
        assert [s["verdict"] for s in subs] == ["passed"] and subs[0]["source"] == CORRECT


async def test_a_wrong_file_shows_the_failing_check_and_its_counterexample(app_factory) -> None:
    app = app_factory(initial=InitialChallenge("demo-sum"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.screen.editor.load_text(WRONG)
        await pilot.press("ctrl+r")
        await settle(pilot)
        text = screen_text(app)
        assert "FAILED" in text
        assert "✗ adds" in text
        assert "a=0, b=1 (seed 7)" in text
        assert "hint: Use the plus operator." in text
        assert app.services.get_store().challenge_status()["demo-sum"]["status"] == "failed"
        await pilot.press("f2")  # read the results full width at 80 columns
        await pilot.pause()
        assert not app.screen.query_one("#right").display and app.screen.query_one("#left").display
        await pilot.press("f2")
        await pilot.pause()
        assert app.screen.query_one("#right").display and not app.screen.query_one("#left").display


async def test_grading_runs_in_the_background_and_escape_cancels_it(app_factory) -> None:
    client = FakeGradingClient(delay=30)
    app = app_factory(grading_client=client, initial=InitialChallenge("demo-sum"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+r")
        await pilot.pause(0.3)
        screen = app.screen
        assert screen.grading
        text = screen_text(app)  # the UI keeps drawing while it grades, with the check running
        assert "grading" in text and "check 1/1 · adds" in text and "escape cancels" in text
        await pilot.press("escape")
        await settle(pilot)
        assert not screen.grading
        assert client.cancelled.is_set()
        assert isinstance(app.screen, ChallengeScreen)  # escape cancelled; it did not go back
        assert app.services.get_store().submissions("demo-sum") == []
        screen._grading_ended -= 5  # (an escape right after the cancel would be ignored)
        await pilot.press("escape")  # now escape goes back, in one press
        await pilot.pause()
        assert type(app.screen).__name__ == "HomeScreen"


async def test_hints_one_at_a_time_and_solution_only_after_an_attempt(app_factory) -> None:
    app = app_factory(initial=InitialChallenge("demo-sum"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+g")
        await pilot.pause()
        text = screen_text(app)
        assert "Hint 1." in text and "Use the plus" in text and "Hint 2." not in text
        assert app.services.get_store().get_setting("hints_shown:demo-sum") == 1
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert isinstance(app.screen, ChallengeScreen)  # no attempt yet: no solution
        await pilot.press("ctrl+r")
        await settle(pilot)
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert type(app.screen).__name__ == "ConfirmScreen"
        await pilot.click("#choice-show")
        await pilot.pause()
        assert type(app.screen).__name__ == "SolutionScreen"
        assert "return a + b" in screen_text(app)


async def test_changes_on_disk_reload_or_ask_when_there_are_unsaved_edits(app_factory) -> None:
    app = app_factory(initial=InitialChallenge("demo-sum"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        screen.path.write_text(CORRECT + "# edited elsewhere\n")
        screen._poll_disk()
        await pilot.pause()
        assert screen.editor.text.endswith("# edited elsewhere\n")  # not dirty: reloaded
        screen.editor.load_text("unsaved work\n")
        screen.path.write_text(WRONG)
        screen._poll_disk()
        await pilot.pause()
        assert type(app.screen).__name__ == "ConfirmScreen"  # dirty: asks
        await pilot.click("#choice-keep")
        await pilot.pause()
        assert app.screen is screen and screen.editor.text == "unsaved work\n"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert screen.path.read_text() == "unsaved work\n"


async def test_external_editor_edits_the_file_and_the_screen_reloads_it(app_factory, tmp_path: Path) -> None:
    script = tmp_path / "fake_editor.py"
    script.write_text("import sys\nopen(sys.argv[1], 'w').write('def add(a, b):\\n    return a + b\\n')\n")
    app = app_factory(initial=InitialChallenge("demo-sum"), editor_command=f"{sys.executable} {script}")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert app.screen.editor.text == CORRECT


async def test_file_option_edits_that_file(app_factory, tmp_path: Path) -> None:
    mine = tmp_path / "mine.py"
    mine.write_text(WRONG)
    app = app_factory(initial=InitialChallenge("demo-sum", mine))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.screen.path == mine and app.screen.editor.text == WRONG
        assert not (paths.workspace_dir() / "demo-sum" / "solution.py").exists()


async def test_the_editor_keeps_python_indentation_on_enter(app_factory) -> None:
    """Typing a function in the editor: enter indents the body and keeps the body's level."""
    app = app_factory(grading_client=FakeGradingClient(), initial=InitialChallenge("demo-sum"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        editor = app.screen.editor
        editor.load_text("")
        editor.focus()
        for line in ("def add(a, b):", "s = a + b", "return s"):
            await pilot.press(*["space" if c == " " else c for c in line], "enter")
        await pilot.pause()
        assert editor.text == "def add(a, b):\n    s = a + b\n    return s\n    "


async def test_a_new_hint_is_scrolled_into_view(app_factory) -> None:
    """On a short terminal the hints overflow: each ctrl+g shows the hint it just revealed."""
    app = app_factory(grading_client=FakeGradingClient(), initial=InitialChallenge("demo-sum"))
    app.MIN_SIZE = (80, 10)  # this test wants the hints to overflow
    async with app.run_test(size=(80, 10)) as pilot:
        await settle(pilot)
        for _ in range(3):
            await pilot.press("ctrl+g")
            await settle(pilot)
        scroll = app.screen.query_one("#hints-scroll")
        assert scroll.max_scroll_y > 0 and scroll.scroll_y == scroll.max_scroll_y
        assert "Hint 3." in screen_text(app)


async def test_quitting_saves_unsaved_edits(app_factory) -> None:
    app = app_factory(grading_client=FakeGradingClient(), initial=InitialChallenge("demo-sum"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        path = app.screen.path
        app.screen.editor.load_text(CORRECT)
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert path.read_text() == CORRECT


async def test_quitting_after_an_outside_change_keeps_both_versions(app_factory) -> None:
    app = app_factory(grading_client=FakeGradingClient(), initial=InitialChallenge("demo-sum"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        path = app.screen.path
        app.screen.editor.load_text(CORRECT)
        path.write_text(WRONG + "# changed elsewhere, longer\n")
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert path.read_text().startswith(WRONG)
    assert path.with_name("solution.unsaved.py").read_text() == CORRECT


async def test_every_footer_key_fits_at_80_columns(app_factory) -> None:
    app = app_factory(grading_client=FakeGradingClient(), initial=InitialChallenge("demo-sum"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        assert "^l Solution" in footer and footer.rstrip().endswith("? Help")


class _LongNamesClient(FakeGradingClient):
    """Checks with long names, as the real challenges have, and a verbose result."""

    NAME = "cached generation gives the same logits as recomputing from scratch every step"

    def grade(self, challenge_id: str, path: Path, on_progress=None, **kwargs):  # noqa: ANN001, ANN003
        if on_progress is not None:
            on_progress(2, 12, self.NAME)
        super().grade(challenge_id, path, **kwargs)
        checks = [{"name": f"{self.NAME} {i}", "status": "passed" if i < 9 else "failed", "message": "x",
                   "counterexample": None, "hint": None} for i in range(12)]
        return {"schema": 1, "challenge": "demo-sum", "verdict": "failed", "backend": "cuda (NVIDIA H200)",
                "seed": 1234567890, "duration_s": 12.3, "checks": checks}


async def test_the_grading_line_keeps_verdict_count_and_time_at_80_columns(app_factory) -> None:
    client = _LongNamesClient(delay=30)
    app = app_factory(grading_client=client, initial=InitialChallenge("demo-sum"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+r")
        await pilot.pause(0.3)
        bar = screen_text(app).splitlines()[-2]
        assert "check 3/12" in bar and "escape cancels" in bar and "grading" in bar
        assert "cached generation" in bar and "…" in bar  # the long check name is cut, not the rest
        await pilot.press("escape")  # cancel the slow run, then grade quickly
        await settle(pilot)
        client.delay = 0
        client.cancelled.clear()
        await pilot.press("ctrl+r")
        await settle(pilot)
        bar = screen_text(app).splitlines()[-2]
        assert "FAILED" in bar and "9 passed, 3 failed" in bar and "12.3 s" in bar


async def test_one_escape_from_the_editor_goes_back_and_the_footer_says_what_it_does(app_factory) -> None:
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.open_challenge("demo-sum")
        await pilot.pause()
        screen = app.screen
        assert screen.editor.has_focus
        assert "esc Back" in await footer_text(pilot)
        await pilot.press("escape")  # nothing unsaved: straight back
        await pilot.pause()
        assert type(app.screen).__name__ == "HomeScreen"

        app.open_challenge("demo-sum")
        await pilot.pause()
        screen = app.screen
        await pilot.press("end", "x")
        await pilot.pause()
        assert screen.dirty
        footer = await footer_text(pilot)
        assert "esc Save+back" in footer and "? Help" in footer  # every key still fits 80 columns
        await pilot.press("escape")  # unsaved edits are saved, never dropped
        await pilot.pause()
        assert type(app.screen).__name__ == "HomeScreen"
        assert screen.path.read_text() == STARTER.replace("def add(a, b):", "def add(a, b):x", 1)


async def test_an_escape_that_comes_just_after_grading_ended_does_not_leave(app_factory, monkeypatch) -> None:
    """Escape cancels a grading; pressed a moment too late, it must not also throw the user out."""
    from inferview.tui.screens import challenge

    monkeypatch.setattr(challenge, "LATE_CANCEL_S", 30.0)  # "a moment", however slow the machine
    app = app_factory(initial=InitialChallenge("demo-sum"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert app.screen.last_result is not None and not app.screen.grading
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ChallengeScreen)
        app.screen._grading_ended -= 60  # a while later, escape goes back again
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "HomeScreen"


def test_the_list_reads_as_a_path_easy_first_then_in_topic_order() -> None:
    from inferview.content.loader import load_library

    library = load_library(include_user=False)
    order = [ch.id for ch in library.challenges_in_order()]
    levels = [library.challenges[c].spec.difficulty for c in order]
    assert levels == sorted(levels, key=["easy", "medium", "hard"].index)
    assert order.index("kv-cache") < order.index("gqa-attention") < order.index("tiled-attention")
    assert order.index("tiled-attention") < order.index("flash-attention")


async def test_the_reveal_dialog_counts_the_hints_left(app_factory) -> None:
    app = app_factory(grading_client=FakeGradingClient(), initial=InitialChallenge("demo-sum"))
    app.services.get_store().record_submission("demo-sum", FAILED, WRONG)  # the solution opens after one
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        challenge = app.screen
        await pilot.press("ctrl+l")
        await settle(pilot)
        assert "Try the next hint first: 3 left" in app.screen.question
        await pilot.press("escape")
        await settle(pilot)
        for _ in range(3):
            await pilot.press("ctrl+g")
            await settle(pilot)
        assert app.screen is challenge
        await pilot.press("ctrl+l")
        await settle(pilot)
        text = app.screen.question
        assert "Every hint is shown already" in text and "Try the next hint" not in text


async def test_a_new_result_replaces_the_old_one_at_the_top_and_never_scrolls_sideways(app_factory) -> None:
    """The results pane shows a long result from its first line, wraps long counterexamples instead
    of scrolling sideways, and a second grading starts at the top again, whatever was scrolled."""
    from inferview.tui.widgets.results import ResultsPanel

    from inferview.grading import CheckResult, GradeResult

    def result(n: int, tag: str) -> GradeResult:
        checks = [CheckResult(f"{tag} check {i}", "failed", message="wrong " * 40,
                              counterexample="x=" + "9" * 300) for i in range(n)]
        return GradeResult("demo-sum", "failed", "cpu", 7, 1.0, checks)

    app = app_factory(initial=InitialChallenge("demo-sum"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        panel = app.screen.query_one(ResultsPanel)
        app.screen.query_one("#left").active = "results"
        panel.result = result(12, "first")
        await settle(pilot)
        assert panel.max_scroll_y > 0 and panel.scroll_y == 0
        assert panel.max_scroll_x == 0
        panel.scroll_end(animate=False)
        await settle(pilot)
        assert panel.scroll_y > 0
        panel.result = result(12, "second")
        await settle(pilot)
        assert panel.scroll_y == 0
        text = screen_text(app)
        assert "second check 0" in text and "first check" not in text


async def test_a_wide_code_block_in_the_statement_scrolls_sideways_instead_of_being_cut(app_factory) -> None:
    from textual.widgets import Markdown
    from textual.widgets._markdown import MarkdownFence

    line = "def attention(q, k, v, causal=False, sm_scale=None):  # " + "shape (batch, heads, seq, dim) " * 6
    app = app_factory(initial=InitialChallenge("demo-sum"))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        md = app.screen.query_one("#statement-md", Markdown)
        await md.update(f"The signature:\n\n```python\n{line}\n    return q\n```\n")
        await settle(pilot)
        fence = md.query_one(MarkdownFence)
        assert fence.max_scroll_x > 0 and fence.show_horizontal_scrollbar
        fence.scroll_to(x=fence.max_scroll_x, animate=False)
        await settle(pilot)
        assert fence.scroll_x == fence.max_scroll_x  # the end of the line can be read
        assert "    return q" in fence.code  # indentation kept, not re-wrapped


async def test_opening_the_list_starts_warming_the_grader(app_factory) -> None:
    """The list is where a challenge gets picked: the grading service starts warming there, so
    its torch import runs while the candidate reads, not after the first ctrl+r."""
    client = FakeGradingClient()
    app = app_factory(grading_client=client)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, ChallengesScreen)
        assert [Path(p).name for p in client.prepared] == ["demo-sum"]

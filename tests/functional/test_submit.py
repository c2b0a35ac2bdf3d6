"""One grading path: the typed result round-trips the golden files, and every way in (``inferview
grade``, ``inferview watch``, ``ctrl+r`` in the app, the mock interview's coding item) goes through
``inferview.submit.submit``, which records the result and schedules the linked questions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inferview.tests.support.tui import WRONG as WRONG_SUM
from inferview.tests.support.tui import (  # noqa: F401
    FakeGradingClient,
    app_factory_fixture,
    settle,
)
from inferview.tui.app import InitialChallenge

from inferview.cli import main as cli_main
from inferview.content.loader import find_challenge, load_library
from inferview.grading import CheckResult, GradeResult, GradingUsageError, Verdict
from inferview.store import Store
from inferview.submit import LocalBackend, Outcome, submit

HERE = Path(__file__).resolve().parents[1]  # tests/
GOLDEN = sorted((HERE / "golden").glob("*.json"))
SIZE = find_challenge("kv-cache-size")
WRONG = SIZE.folder / "solutions" / "wrong" / "forgets_k_and_v.py"
RIGHT = next(iter(SIZE.solution_files("correct")))


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_golden_results_round_trip(path: Path) -> None:
    data = json.loads(path.read_text())
    result = GradeResult.from_json(data)
    assert isinstance(result.verdict, Verdict)
    assert result.to_json() == data


def test_the_result_type_reads_what_it_writes() -> None:
    r = GradeResult("x", "failed", "cpu", 3, 1.23456,
                    [CheckResult("a", "passed"), CheckResult("b", "skipped", "needs a CUDA GPU")],
                    stdout="hi\n", stderr="")
    back = GradeResult.from_json(r.to_json())
    assert back.to_json() == r.to_json() and back.verdict is Verdict.FAILED
    assert r.counts() == {"passed": 1, "failed": 0, "error": 0, "skipped": 1}
    assert r.output() == "[stdout]\nhi"
    with pytest.raises(ValueError):
        GradeResult.from_json({"schema": 2})


def _linked_cards(store: Store) -> set[str]:
    """Linked questions in the practice queue: a review due (seen before) or a suggestion (new)."""
    suggested = {row["question_id"] for row in store.suggestions()}
    return {qid for qid in SIZE.spec.questions if store.get_card(qid) or qid in suggested}


def test_submit_records_and_schedules_linked_questions(tmp_path: Path) -> None:
    with Store.open() as store:
        out = submit(SIZE, WRONG, LocalBackend(), store=store, library=load_library(), seed=1)
        assert isinstance(out, Outcome) and out.result.verdict == "failed" and out.recorded
        assert set(out.scheduled) == set(SIZE.spec.questions) == _linked_cards(store)
        sub = store.submissions("kv-cache-size")[0]
        assert sub["source"] == WRONG.read_text() and sub["result"] == out.result.to_json()


def test_submit_of_a_passing_solution_schedules_nothing() -> None:
    with Store.open() as store:
        out = submit(SIZE, RIGHT, LocalBackend(), store=store, library=load_library(), seed=1)
        assert out.result.passed and out.scheduled == [] and not _linked_cards(store)


def test_submit_rejects_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(GradingUsageError, match="no such file"):
        submit(SIZE, tmp_path / "nope.py", LocalBackend())


def test_grade_command_schedules_linked_questions(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli_main(["grade", "kv-cache-size", str(WRONG), "--seed", "1"])
    assert exc.value.code == 1
    assert "linked questions queued for practice" in capsys.readouterr().out
    with Store.open() as store:
        assert _linked_cards(store) == set(SIZE.spec.questions)


def test_watch_command_schedules_linked_questions(capsys, monkeypatch, tmp_path: Path) -> None:
    import watchfiles

    mine = tmp_path / "solution.py"
    mine.write_text(WRONG.read_text())
    monkeypatch.setattr(watchfiles, "watch", lambda *a, **k: iter(()))  # grade once, then stop
    cli_main(["watch", "kv-cache-size", str(mine), "--seed", "1"])
    out = capsys.readouterr().out
    assert "FAILED" in out and "linked questions queued for practice" in out
    with Store.open() as store:
        assert _linked_cards(store) == set(SIZE.spec.questions)
        assert store.submissions("kv-cache-size")[0]["source"] == WRONG.read_text()


def test_grade_command_shows_both_output_streams(capsys, tmp_path: Path) -> None:
    noisy = tmp_path / "noisy.py"
    noisy.write_text(RIGHT.read_text() + "\nimport sys\nprint('hello from stdout')\n"
                     "print('hello from stderr', file=sys.stderr)\n")
    with pytest.raises(SystemExit):
        cli_main(["grade", "kv-cache-size", str(noisy), "--no-record"])
    out = capsys.readouterr().out
    assert "hello from stdout" in out and "hello from stderr" in out


# ------------------------------------------------------------------------------- the app


async def test_ctrl_r_goes_through_submit_and_schedules_linked_questions(app_factory) -> None:
    app = app_factory(grading_client=FakeGradingClient(), initial=InitialChallenge("demo-sum"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.screen.editor.load_text(WRONG_SUM)
        await pilot.press("ctrl+r")
        await settle(pilot)
        outcome = app.screen.outcome
        assert outcome is not None and outcome.result.verdict == "failed"
        assert outcome.scheduled == ["kv-why"] and outcome.source == WRONG_SUM
        store = app.services.get_store()
        assert "kv-why" in {r["question_id"] for r in store.suggestions()}  # new: suggested
        assert store.submissions("demo-sum")[0]["source"] == WRONG_SUM


async def test_the_mock_coding_item_gets_its_result_from_the_challenge_screen(app_factory) -> None:
    from inferview.tui.screens.challenge import ChallengeScreen
    from inferview.tui.screens.mock import MockScreen

    app = app_factory(grading_client=FakeGradingClient())
    async with app.run_test(size=(100, 30)) as pilot:
        screen = MockScreen(minutes=30, seed=1)
        app.push_screen(screen)
        await settle(pilot)
        while screen.session.current.kind != "challenge":
            await pilot.press("ctrl+k")
            await settle(pilot)
        await pilot.press("ctrl+o")
        await settle(pilot)
        challenge = app.screen
        assert isinstance(challenge, ChallengeScreen)
        challenge.query_one("#editor").text = WRONG_SUM
        await pilot.press("ctrl+r")
        await settle(pilot, rounds=6)
        challenge._grading_ended -= 5
        challenge.action_back()
        await settle(pilot)
        assert app.screen is screen
        assert screen._challenge_result["verdict"] == "failed"  # handed back by dismiss
        assert "kv-why" in {r["question_id"] for r in app.services.get_store().suggestions()}

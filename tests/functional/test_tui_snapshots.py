"""What each screen looks like at 80x24 (pytest-textual-snapshot). Fixed library, clock and data;
regenerate with ``pytest tests/functional/test_tui_snapshots.py --snapshot-update`` after a deliberate change."""

from __future__ import annotations

from datetime import timedelta

import fsrs
from inferview.tests.support.tui import (  # noqa: F401
    CORRECT,
    FAILED,
    FIXED_NOW,
    PASSED,
    WRONG,
    app_factory_fixture,
)
from inferview.tui.app import InitialChallenge
from inferview.tui.screens.challenge import workspace_file
from textual.widgets import Input, TextArea

SIZE = (80, 24)


def _drive(*keys: str):
    """Press ``keys``, then let workers, Markdown rendering and layout finish after each, so a
    loaded CI machine draws exactly the same frame."""

    async def run(pilot) -> None:
        for key in ("", *keys):
            if key:
                await pilot.press(key)
            for _ in range(2):
                await pilot.app.workers.wait_for_complete()
                await pilot.pause()
        focused = pilot.app.focused
        if isinstance(focused, (TextArea, Input)):
            # a blinking text cursor makes the frame depend on timing: take it out of the picture
            pilot.app.screen.set_focus(None)
        await pilot.pause()

    return run


def _history(app) -> None:
    store = app.services.get_store()
    for days_ago, qid, topic, correct in ((0, "kv-why", "kv-cache", True), (1, "kv-choice", "kv-cache", False),
                                          (2, "fa-exact", "flash-attention", True)):
        at = FIXED_NOW - timedelta(days=days_ago, hours=1)
        store.record_question_attempt(qid, topic, "open", "x", {"score": float(correct)}, correct, rating=3, at=at)
        card, _ = fsrs.Scheduler(enable_fuzzing=False).review_card(fsrs.Card(), fsrs.Rating.Good, review_datetime=at)
        store.put_card(qid, topic, card.to_json(), card.due)
    store.record_submission("demo-sum", FAILED, WRONG, at=FIXED_NOW - timedelta(hours=5))
    store.record_submission("demo-sum", PASSED, CORRECT, at=FIXED_NOW - timedelta(hours=4))


def test_home(app_factory, snap_compare) -> None:
    app = app_factory()
    _history(app)
    assert snap_compare(app, terminal_size=SIZE, run_before=_drive())


def test_help(app_factory, snap_compare) -> None:
    assert snap_compare(app_factory(), terminal_size=SIZE, run_before=_drive("question_mark"))


def test_challenges(app_factory, snap_compare) -> None:
    app = app_factory()
    _history(app)
    assert snap_compare(app, terminal_size=SIZE, run_before=_drive("c"))


def test_challenge_with_a_failed_result(app_factory, snap_compare) -> None:
    app = app_factory(initial=InitialChallenge("demo-sum"))
    # the saved solution is the one graded: a result is shown only for the source it graded
    workspace_file("demo-sum", WRONG).write_text(WRONG, encoding="utf-8")
    app.services.get_store().record_submission("demo-sum", FAILED, WRONG, at=FIXED_NOW)
    assert snap_compare(app, terminal_size=SIZE, run_before=_drive())


def test_calculator(app_factory, snap_compare) -> None:
    assert snap_compare(app_factory(), terminal_size=SIZE, run_before=_drive("k"))


def test_stats(app_factory, snap_compare) -> None:
    app = app_factory()
    _history(app)
    assert snap_compare(app, terminal_size=SIZE, run_before=_drive("s"))


def test_stats_activity(app_factory, snap_compare) -> None:
    app = app_factory()
    _history(app)
    assert snap_compare(app, terminal_size=SIZE, run_before=_drive("s", "t"))


def test_practice_question(app_factory, snap_compare) -> None:
    assert snap_compare(app_factory(), terminal_size=SIZE, run_before=_drive("p"))


def test_practice_feedback(app_factory, snap_compare) -> None:
    keys = ["p", *"it stores keys and values".replace(" ", "_"), "ctrl+s"]
    keys = ["space" if k == "_" else k for k in keys]
    assert snap_compare(app_factory(), terminal_size=SIZE, run_before=_drive(*keys))

"""Stats: accuracy and mastery per topic, reviews over time, challenge history."""

from __future__ import annotations

from datetime import timedelta

from inferview.tests.support.tui import (  # noqa: F401
    FAILED,
    FIXED_NOW,
    PASSED,
    WRONG,
    app_factory_fixture,
    screen_text,
)
from inferview.tui.progress import daily_series
from inferview.tui.screens.stats import StatsScreen


def _attempts(store) -> None:
    for days_ago, qid, correct in ((0, "kv-why", True), (0, "kv-choice", False), (1, "kv-why", True),
                                   (3, "fa-exact", True)):
        topic = "flash-attention" if qid.startswith("fa") else "kv-cache"
        store.record_question_attempt(qid, topic, "choice", "x", {"score": float(correct)}, correct,
                                      rating=3, at=FIXED_NOW - timedelta(days=days_ago, hours=1))


async def test_stats_show_accuracy_per_topic_and_challenge_history(app_factory) -> None:
    app = app_factory()
    store = app.services.get_store()
    _attempts(store)
    store.record_submission("demo-sum", FAILED, WRONG, at=FIXED_NOW - timedelta(hours=3))
    store.record_submission("demo-sum", PASSED, WRONG, at=FIXED_NOW - timedelta(hours=2))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, StatsScreen)
        lines = screen_text(app).splitlines()
        kv = next(line for line in lines if "The KV cache" in line).split()
        assert kv[4:6] == ["3", "67%"]  # 3 tries, 2 of 3 right
        fa = next(line for line in lines if "Flash attention" in line).split()
        assert fa[3:5] == ["1", "100%"]
        await pilot.press("t")
        await pilot.pause()
        assert "Reviews per day" in screen_text(app)
        await pilot.press("t")
        await pilot.pause()
        history = screen_text(app)
        assert "passed" in history and "failed" in history and "Add two numbers" in history
        assert history.index("passed") < history.index("failed")  # newest first
        assert "No challenge graded yet" not in history


async def test_empty_stats_say_what_to_do(app_factory) -> None:
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("t")
        await pilot.pause()
        assert "No reviews in the last 14 days: press p on Home" in screen_text(app)
        await pilot.press("t")
        await pilot.pause()
        assert "No challenge graded yet" in screen_text(app)


def test_daily_series_counts_attempts_and_accuracy_per_day() -> None:
    rows = [
        {"created_at": (FIXED_NOW - timedelta(days=d)).isoformat(), "correct": c}
        for d, c in ((0, True), (0, False), (1, None), (20, True))
    ]
    labels, counts, accuracy = daily_series(rows, 3, FIXED_NOW.date())
    assert labels == ["02-28", "03-01", "03-02"]
    assert counts == [0, 1, 2]
    assert accuracy == [None, None, 0.5]

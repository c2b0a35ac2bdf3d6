"""FSRS scheduling over the progress store."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from inferview.content.models import KeyPoint, OpenQuestion
from inferview.practice.scheduler import ReviewScheduler, suggest_rating
from inferview.store import Store

T0 = datetime(2026, 1, 1, 12, tzinfo=timezone.utc)


def _q(i: str, topic: str, difficulty: str) -> OpenQuestion:
    return OpenQuestion(id=i, topic=topic, difficulty=difficulty, prompt="Question?", answer="Answer.",
                        source="test", key_points=[KeyPoint(point="p p", phrases=["p"])])


def test_review_then_due_then_queue(tmp_path):
    store = Store.open(tmp_path / "p.db")
    s = ReviewScheduler(store, enable_fuzzing=False, now=lambda: T0)
    qs = [_q("b-hard", "kv-cache", "hard"), _q("a-easy", "kv-cache", "easy"),
          _q("m-moe", "moe", "easy"), _q("c-med", "kv-cache", "medium")]
    assert s.new_questions(qs, ["kv-cache", "moe"]) == ["a-easy", "c-med", "b-hard", "m-moe"]
    assert s.new_questions(qs, ["moe", "kv-cache"], limit=2) == ["m-moe", "a-easy"]

    due_good = s.review("a-easy", "kv-cache", 3, when=T0)
    due_again = s.review("c-med", "kv-cache", 1, when=T0)
    assert due_again < due_good
    assert s.card("a-easy") is not None and s.card("zzz") is None
    assert s.due(when=T0) == []
    later = T0 + timedelta(days=30)
    assert set(s.due(when=later)) == {"a-easy", "c-med"}
    assert s.due(when=later, topic="moe") == []
    q = s.queue(qs, ["kv-cache", "moe"], when=later, new_limit=1)
    assert q[:2] == ["c-med", "a-easy"] and q[2:] == ["b-hard"]
    # a rating of Good again pushes the card further out
    nxt = s.review("a-easy", "kv-cache", 3, when=later)
    assert nxt - later > due_good - T0
    assert 0.0 < s.retrievability("a-easy", later + timedelta(days=1)) <= 1.0
    store.close()


def test_suggest_rating():
    assert suggest_rating(0.0, False) == 1
    assert suggest_rating(0.5, False) == 2
    assert suggest_rating(1.0, True) == 3

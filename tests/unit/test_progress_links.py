"""Concepts and code: failing a challenge schedules its linked questions; Home's suggestion."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import fsrs
from inferview.tests.support.mock_library import make_library

from inferview.progress import record_challenge_result, schedule_reviews, suggest_next
from inferview.store import Store

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


def test_failed_challenge_schedules_linked_questions():
    lib = make_library()
    with Store.open() as store:
        scheduled = record_challenge_result(store, lib, "kv-cache", {"verdict": "failed", "checks": []}, "src")
        assert scheduled == ["kv-why"]
        # never seen: a suggested new question, not a review due
        assert store.due_question_ids(datetime.now(timezone.utc) + timedelta(seconds=1)) == []
        [row] = store.suggestions()
        assert row["question_id"] == "kv-why" and "challenge" in row["reason"]
        assert store.submissions("kv-cache")[0]["verdict"] == "failed"


def test_a_failed_challenge_makes_a_seen_question_due_again():
    lib = make_library()
    with Store.open() as store:
        card = fsrs.Card(due=NOW + timedelta(days=30), stability=12.0, difficulty=5.0, state=fsrs.State.Review)
        store.put_card("kv-why", "kv-cache", card.to_json(), card.due)
        record_challenge_result(store, lib, "kv-cache", {"verdict": "failed", "checks": []}, "src", now=NOW)
        assert store.due_question_ids(NOW) == ["kv-why"] and store.suggestions() == []


def test_passed_challenge_schedules_nothing():
    lib = make_library()
    with Store.open() as store:
        assert record_challenge_result(store, lib, "kv-cache", {"verdict": "passed"}, "src") == []
        assert store.due_question_ids() == []


def test_schedule_reviews_pulls_a_future_card_forward_and_keeps_its_memory():
    lib = make_library()
    with Store.open() as store:
        card = fsrs.Card(due=NOW + timedelta(days=30), stability=12.0, difficulty=5.0, state=fsrs.State.Review)
        store.put_card("kv-why", "kv-cache", card.to_json(), card.due)
        assert schedule_reviews(store, lib, ["kv-why", "missing-id"], now=NOW) == ["kv-why"]
        again = fsrs.Card.from_json(store.get_card("kv-why"))
        assert again.due == NOW and again.stability == 12.0
        assert store.due_question_ids(NOW) == ["kv-why"]


def test_suggestion_prefers_due_reviews_then_failed_challenge_of_weakest_topic():
    lib = make_library()
    with Store.open() as store:
        for t in lib.topics:
            store.record_question_attempt(f"{t}-q0", t, "open", "x", {"score": 1.0}, True)
        store.record_question_attempt("kv-cache-q1", "kv-cache", "open", "x", {"score": 0.0}, False)
        store.record_submission("kv-cache", {"verdict": "failed"}, "src")
        s = suggest_next(store, lib, now=NOW)
        assert s.topic == "kv-cache" and s.action == "challenge" and s.target == "kv-cache"
        schedule_reviews(store, lib, ["moe-q0"], now=NOW, reason="missed in a mock interview")
        s = suggest_next(store, lib, now=NOW + timedelta(seconds=1))
        assert s.action == "practice" and "1 suggested question waiting" in s.text
        card = fsrs.Card(due=NOW, state=fsrs.State.Review)
        store.put_card("moe-q1", "moe", card.to_json(), card.due)
        s = suggest_next(store, lib, now=NOW + timedelta(seconds=1))
        assert s.action == "review" and "1 review due" in s.text


def test_unpractised_topic_is_weakest():
    lib = make_library(with_challenge=False)
    with Store.open() as store:
        store.record_question_attempt("serving-q0", "serving", "open", "x", {"score": 0.2}, False)
        s = suggest_next(store, lib, now=NOW)
        assert s.topic == "kv-cache" and "not practised" in s.text

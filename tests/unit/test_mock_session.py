"""Mock interviews with a fake clock: planning, the countdown, pause and resume across a restart."""

from __future__ import annotations

import pytest
from inferview.tests.support.mock_library import make_library

from inferview.mock import store as mock_store
from inferview.mock.plan import CHALLENGE_SHARE, build_plan
from inferview.mock.session import MockSession
from inferview.store import Store


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def test_plan_opens_with_why_is_generation_slow_and_follows_the_story():
    plan = build_plan(make_library(), minutes=45, seed=1)
    refs = [i.ref for i in plan.items]
    assert refs[0] == "serve-why-slow"
    topics = [i.topic for i in plan.items if i.kind == "question"]
    # The story order: serving, then the KV cache before GQA/MLA, quantization, flash attention, speculation.
    firsts = [topics.index(t) for t in ("kv-cache", "attention-variants", "quantization", "flash-attention",
                                         "speculative-decoding")]
    assert firsts == sorted(firsts)
    assert sum(i.kind == "challenge" for i in plan.items) == 1
    assert plan.total_budget_s <= 45 * 60 + 60
    # A follow-up is taken right after its question.
    follow = [i for i in plan.items if i.follow_up_of]
    assert follow and all(refs[refs.index(i.ref) - 1] == i.follow_up_of for i in follow)


def test_plan_is_deterministic_and_sized_to_the_time():
    lib = make_library()
    assert build_plan(lib, 30, seed=7).items == build_plan(lib, 30, seed=7).items
    short, long = build_plan(lib, 15, seed=7), build_plan(lib, 60, seed=7)
    assert len(short.items) < len(long.items)
    (ch,) = [i for i in short.items if i.kind == "challenge"]
    # a coding item gets its whole budget, and only when that fits the session's coding share
    assert ch.budget_s == lib.challenges[ch.ref].spec.time_budget_min * 60
    assert ch.budget_s <= CHALLENGE_SHARE * 15 * 60


def test_a_session_too_short_for_the_coding_item_has_none_and_says_so():
    lib = make_library()
    for minutes in (2, 5):
        plan = build_plan(lib, minutes, seed=3)
        assert [i for i in plan.items if i.kind == "challenge"] == []
        assert plan.note.startswith("No coding item: the shortest challenge takes 10 minutes")
        assert plan.items and plan.total_budget_s <= minutes * 60 + 30
    assert build_plan(lib, 30, seed=3).note == ""
    assert build_plan(lib, 2, seed=3, with_challenge=False).note == ""


def test_focus_topic_comes_early_and_gets_more_questions():
    lib = make_library()
    plan = build_plan(lib, 45, focus="moe", seed=3)
    topics = [i.topic for i in plan.items]
    assert topics.index("moe") <= 2
    assert topics.count("moe") >= 2


def test_clock_warns_at_five_and_one_minute_then_expires():
    clock = FakeClock()
    s = MockSession.new(make_library(), 10, seed=1, clock=clock)
    assert s.tick() == []
    clock.advance(5 * 60)
    assert [e.message for e in s.tick()] == ["5 minutes left."]
    assert s.tick() == []
    clock.advance(4 * 60)
    assert [e.message for e in s.tick()] == ["1 minute left."]
    clock.advance(61)
    events = s.tick()
    assert events[-1].kind == "expired" and s.status == "finished" and s.finished_reason == "time up"
    assert s.current is None and s.remaining_s() == 0


def test_answers_record_time_per_item_and_nothing_is_graded_yet():
    clock = FakeClock()
    s = MockSession.new(make_library(), 30, seed=2, clock=clock)
    clock.advance(42)
    s.answer(text="Decoding is sequential, one token at a time.")
    assert s.responses[0]["time_s"] == pytest.approx(42)
    assert set(s.responses[0]) == {"text", "selected", "time_s"}
    clock.advance(10)
    s.skip()
    assert s.responses[1]["skipped"] and s.responses[1]["time_s"] == pytest.approx(10)


def test_pause_stops_the_clock():
    clock = FakeClock()
    s = MockSession.new(make_library(), 15, seed=2, clock=clock)
    clock.advance(60)
    s.pause()
    clock.advance(3600)
    assert s.remaining_s() == pytest.approx(14 * 60)
    assert s.tick() == []
    s.resume()
    clock.advance(30)
    assert s.remaining_s() == pytest.approx(13.5 * 60)


def test_pause_and_resume_across_a_restart(tmp_path):
    lib = make_library()
    clock = FakeClock()
    path = tmp_path / "p.sqlite3"
    with Store.open(path) as store:
        mock_id, s = mock_store.start(store, lib, 20, seed=5, clock=clock)
        clock.advance(100)
        s.answer(text="one token at a time")
        clock.advance(20)
        mock_store.save(store, mock_id, s)  # the app is closed here without pausing
    later = FakeClock()
    with Store.open(path) as store:
        assert [m["id"] for m in mock_store.resumable(store)] == [mock_id]
        r = mock_store.load(store, mock_id, clock=later)
        assert r.status == "paused" and r.index == 1
        assert r.remaining_s() == pytest.approx(20 * 60 - 120)
        later.advance(5000)  # time while closed does not count
        r.resume()
        later.advance(30)
        assert r.remaining_s() == pytest.approx(20 * 60 - 150)
        assert r.plan.items == s.plan.items and r.responses == s.responses


def test_bad_parameters_are_refused():
    lib = make_library()
    with pytest.raises(ValueError, match="positive"):
        MockSession.new(lib, 0)
    with pytest.raises(ValueError, match="unknown topic"):
        MockSession.new(lib, 30, focus="nope")

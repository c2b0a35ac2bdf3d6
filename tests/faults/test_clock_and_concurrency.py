"""Clock and concurrency faults.

The mock interview counts time on a monotonic clock: when the system clock jumps while it runs (a
suspend and resume, a clock set by hand), the time left does not move, and the session and its
report say what the timer did. The system clock cannot be changed safely in a test, so the
session is given one that jumps while its monotonic clock advances normally.

Two apps (two real processes, through the app's own practice code) answer the same due question
at the same moment against one store: both attempts are recorded and the card is reviewed once,
never twice (the second writer reads the card inside its write transaction, after the first's).
"""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from fsrs import Card

from inferview.content.loader import load_library
from inferview.content.models import OpenQuestion
from inferview.mock.report import Report, build_report
from inferview.mock.session import MockSession
from inferview.practice.scheduler import ReviewScheduler
from inferview.store import Store

NOW = datetime(2026, 3, 2, 9, 30, tzinfo=timezone.utc)
ROUNDS = 4


@pytest.fixture(scope="module")
def library():
    return load_library(include_user=False)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_a_jumping_system_clock_leaves_the_time_left_alone_and_the_report_says_so(library) -> None:
    mono, wall = Clock(1000.0), Clock(1_772_000_000.0)
    s = MockSession.new(library, minutes=30, seed=4, clock=mono, wall_clock=wall)

    def run(seconds: float) -> list:
        """``seconds`` of the interview, ticked every second, both clocks in step."""
        events = []
        for _ in range(int(seconds)):
            mono.t += 1
            wall.t += 1
            events += s.tick()
        return events

    assert run(300) == []
    wall.t += 2 * 3600  # suspended for two hours: the monotonic clock stood still
    said = s.tick()
    assert [e.kind for e in said] == ["clock"]
    assert said[0].message == "The system clock jumped +2 h; the interview's timer ignored it."
    assert s.remaining_s() == pytest.approx(30 * 60 - 300)
    run(120)
    wall.t -= 3600 + 30 * 60  # set back by an hour and a half (a time zone fixed by hand)
    assert [e.kind for e in s.tick()] == ["clock"]
    assert s.remaining_s() == pytest.approx(30 * 60 - 420)
    assert s.clock_jumps == [7200, -5400]
    wall.t += 45  # drift under a minute between two ticks is no jump
    assert s.tick() == [] and s.clock_jumps == [7200, -5400]

    # closed and resumed: the running time travels in the state, the jumps with it; the wall
    # clock at resume plays no part (a week later by the system clock)
    s.pause()
    state = s.to_state()
    mono2, wall2 = Clock(5.0), Clock(wall.t + 7 * 86400)
    back = MockSession.from_state(state, clock=mono2)
    back.wall_clock = wall2
    back.resume()
    assert back.remaining_s() == pytest.approx(30 * 60 - 420)
    assert back.tick() == []
    mono2.t += 10
    wall2.t += 10
    assert back.tick() == [] and back.remaining_s() == pytest.approx(30 * 60 - 430)

    back.end()
    report = build_report(back, library, session_id=7)
    assert report.elapsed_s == pytest.approx(430)
    assert report.clock_note == (
        "the system clock jumped +2 h, -1 h 30 min during the interview (the computer slept, or "
        "its clock was changed); the timer counts running time on a monotonic clock and ignored it")
    md = report.to_markdown(library)
    assert "- Ended: ended early after 7:10" in md
    assert f"- Timing: {report.clock_note}" in md
    assert Report.from_dict(report.to_dict()).clock_note == report.clock_note
    # a report saved before this note existed still loads, and says nothing about the clock
    old = report.to_dict()
    del old["clock_note"]
    assert "Timing" not in Report.from_dict(old).to_markdown(library)


def test_an_interview_whose_clock_never_jumped_says_nothing_about_it(library) -> None:
    mono, wall = Clock(0.0), Clock(1_772_000_000.0)
    s = MockSession.new(library, minutes=10, seed=5, clock=mono, wall_clock=wall)
    for _ in range(30):
        mono.t += 2
        wall.t += 2.5  # a slow monotonic clock: half a second a tick is drift, not a jump
        assert all(e.kind != "clock" for e in s.tick())
    s.end()
    report = build_report(s, library)
    assert report.clock_note == "" and "Timing" not in report.to_markdown(library)


def _seed(path: Path, qid: str, topic: str) -> str:
    """A store whose only card is ``qid``'s, reviewed 10 days before NOW and due since."""
    with Store.open(path, backup=False) as store:
        ReviewScheduler(store, now=lambda: NOW - timedelta(days=10), enable_fuzzing=False).review(
            qid, topic, 3)
        card = store.get_card(qid)
    assert card is not None and Card.from_json(card).due < NOW
    return card


@pytest.mark.skipif(sys.platform == "win32", reason="the drivers are started with a POSIX path "
                    "layout in mind")
def test_two_apps_rating_the_same_due_question_at_once_record_both_and_review_once(
        library, tmp_path) -> None:
    opens = [q for q in library.questions.values() if isinstance(q, OpenQuestion)][:ROUNDS]
    stores, seeded = [], {}
    for i, q in enumerate(opens):
        path = tmp_path / f"store{i}.sqlite3"
        seeded[path] = (q, _seed(path, q.id, q.topic))
        stores.append(str(path))
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    driver = Path(__file__).with_name("rate_driver.py")
    procs = [subprocess.Popen([sys.executable, str(driver), name, str(barrier), NOW.isoformat(),
                               *stores], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in ("a", "b")]
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=90)
            assert p.returncode == 0, err[-2000:]
            outs.append(out.split())
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert len(outs[0]) == len(outs[1]) == 2 * ROUNDS
    for path, (q, before) in seeded.items():
        with Store.open(path, backup=False) as store:
            attempts = store.question_attempts(question_id=q.id)
            after = store.get_card(q.id)
        # both answers are kept, each with its rating
        assert len(attempts) == 2, attempts
        assert [a["rating"] for a in attempts] == [3, 3]
        # the card was reviewed once: exactly what one Good review of the seeded card gives
        once, _ = ReviewScheduler(store, enable_fuzzing=False).fsrs.review_card(
            Card.from_json(before), 3, review_datetime=NOW, review_duration=30_000)
        got = Card.from_json(after)
        assert got.last_review == NOW
        assert (got.state, got.step) == (once.state, once.step)
        assert got.stability == pytest.approx(once.stability)
        assert got.difficulty == pytest.approx(once.difficulty)
    # both apps were told the same next due time for every question
    assert outs[0] == outs[1]

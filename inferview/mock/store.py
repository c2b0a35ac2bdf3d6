"""Mock sessions in the progress store: start, save, resume after a restart, finish with a report."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from inferview.content.loader import Library
from inferview.mock import coding
from inferview.mock.report import REVIEW_BELOW, Report, build_report
from inferview.mock.session import MockSession
from inferview.store import Store


def start(store: Store, lib: Library, minutes: float, focus: str | None = None, seed: int | None = None,
          clock: Callable[[], float] = time.monotonic) -> tuple[int, MockSession]:
    """Plan a session, save it, and return its id with the running session."""
    session = MockSession.new(lib, minutes, focus, seed, clock=clock)
    mock_id = store.create_mock({"minutes": minutes, "focus": focus, "seed": session.seed}, session.to_state())
    return mock_id, session


def save(store: Store, mock_id: int, session: MockSession) -> None:
    """Persist the session's state (called after every answer and on pause/quit)."""
    state = session.to_state()
    previous = store.get_mock(mock_id)
    if previous and "report" in previous["state"]:
        state["report"] = previous["state"]["report"]
    store.update_mock(mock_id, state, session.status)


def load(store: Store, mock_id: int, clock: Callable[[], float] = time.monotonic) -> MockSession:
    """Restore a saved session (paused; call ``resume()``). Raises ``KeyError`` if there is none."""
    row = store.get_mock(mock_id)
    if row is None:
        raise KeyError(f"no mock interview with id {mock_id}")
    return MockSession.from_state(row["state"], clock=clock)


def resumable(store: Store) -> list[dict]:
    """Sessions that were paused or left running (e.g. the app was closed), or completed without
    their report (the app was killed before it saved one: resuming grades them), newest first."""
    return [m for m in store.list_mocks() if m["status"] in ("running", "paused")
            or (m["status"] == "finished" and "report" not in m["state"])]


def finish(store: Store, lib: Library, mock_id: int, session: MockSession, backend: Any = None,
           now: Any = None) -> Report:
    """End the session if needed, grade it (a coding item handed in without a grading of its very
    source is graded now, through ``backend``: the in-process engine by default), schedule the
    questions to review, save the report."""
    if session.status != "finished":
        session.end()
    if coding.pending(session):
        if backend is None:
            from inferview.submit import LocalBackend

            backend = LocalBackend()
        coding.grade_pending(session, lib, mock_id, backend, store=store, now=now)
    report = build_report(session, lib, mock_id)
    from inferview.progress import schedule_reviews

    # one transaction: a session is finished with its attempts and reviews, or still resumable
    # without any of them (finishing it again never records its answers twice)
    with store.transaction():
        _record_answers(store, report, mock_id)
        # answered and weak: a review due now; never reached: a suggested new question
        schedule_reviews(store, lib, report.review, reason=f"missed in mock interview {mock_id}")
        state = session.to_state()
        state["report"] = report.to_dict()
        store.update_mock(mock_id, state, "finished")
    return report


def _record_answers(store: Store, report: Report, mock_id: int) -> None:
    """Each answered question becomes an attempt in the store and a review of its card, rated from
    its score, as in Practice: the mock asked it, so it is no longer new."""
    from inferview.practice.scheduler import ReviewScheduler, suggest_rating

    scheduler = ReviewScheduler(store)
    for it in report.items:
        if it.kind != "question" or not it.answered:
            continue
        correct = it.score >= REVIEW_BELOW and not it.misconceptions
        store.record_question_attempt(it.ref, it.topic, "mock", it.answer,
                                      {"score": it.score, "key_points_missed": it.key_points_missed,
                                       "misconceptions": it.misconceptions}, correct,
                                      duration_s=it.time_s, mock_id=mock_id)
        scheduler.review(it.ref, it.topic, suggest_rating(it.score, correct), duration_s=it.time_s)


def load_report(store: Store, mock_id: int) -> Report:
    """The saved report of a finished session. Raises ``KeyError`` if there is none."""
    row = store.get_mock(mock_id)
    if row is None:
        raise KeyError(f"no mock interview with id {mock_id}")
    if "report" not in row["state"]:
        if row["status"] in ("running", "paused"):
            raise KeyError(f"mock interview {mock_id} has not finished yet (status: {row['status']}); "
                           f"resume it with 'inferview mock --resume {mock_id}'")
        raise KeyError(f"mock interview {mock_id} has no saved report (status: {row['status']})")
    try:
        return Report.from_dict(row["state"]["report"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise KeyError(f"the saved report of mock interview {mock_id} cannot be read "
                       f"({type(exc).__name__}: {exc})") from None

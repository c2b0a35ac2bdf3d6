"""The link between concepts and code, and what to do next.

- A failing challenge check brings that challenge's linked questions back: those already reviewed
  become due now in the FSRS queue, those never seen become suggested new questions (first among
  the new ones, with the reason): a bug in a KV-cache implementation usually means a gap in the
  concept.
- A mock interview's weak questions enter the queue the same way.
- :func:`suggest_next` names the weakest topic and the next thing to do, for the Home screen.

Torch-free and textual-free: used by the CLI, the TUI and the mock interview alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from inferview.content.loader import Library
from inferview.store import Store


def _now(now: datetime | None) -> datetime:
    return now or datetime.now(timezone.utc)


def schedule_reviews(store: Store, lib: Library, question_ids: list[str], now: datetime | None = None,
                     reason: str = "") -> list[str]:
    """Bring questions back: one already reviewed becomes due now (its FSRS card moves forward);
    one never seen becomes a suggested new question (``reason`` says why), not a review. Returns
    the ids handled; ids not in the library are ignored."""
    import fsrs

    now = _now(now)
    done = []
    for qid in dict.fromkeys(question_ids):
        q = lib.questions.get(qid)
        if q is None:
            continue
        raw = store.get_card(qid)
        card = None
        if raw:
            try:
                card = fsrs.Card.from_json(raw)
            except Exception:  # noqa: BLE001 - an unreadable card is replaced by a fresh one
                card = None
        if card is None:
            store.suggest(qid, q.topic, reason or "suggested", at=now)
        else:
            if card.due > now:
                card.due = now
            store.put_card(qid, q.topic, card.to_json(), card.due)
        done.append(qid)
    return done


def record_challenge_result(store: Store, lib: Library | None, challenge_id: str, result: dict[str, Any],
                            source: str, mock_id: int | None = None,
                            now: datetime | None = None) -> list[str]:
    """Save a grading result; when it did not pass, schedule the challenge's linked questions.

    Returns the ids of the questions scheduled for review. One transaction: the result is never
    saved without the questions it schedules."""
    with store.transaction():
        store.record_submission(challenge_id, result, source, mock_id=mock_id)
        if result.get("verdict") == "passed" or lib is None:
            return []
        ch = lib.challenges.get(challenge_id)
        if ch is None or not ch.spec.questions:
            return []
        return schedule_reviews(store, lib, list(ch.spec.questions), now=now,
                                reason=f"linked to the {ch.spec.title} challenge")


@dataclass(frozen=True)
class Suggestion:
    """What Home suggests."""

    topic: str | None
    """The weakest topic (None when there is no content)."""
    action: str
    """``review``, ``challenge`` or ``practice``."""
    target: str | None
    """Challenge id for ``challenge``, topic id for ``practice``, None for ``review``."""
    text: str
    """One sentence for the user."""


def topic_scores(store: Store, lib: Library, recent: int = 20) -> dict[str, float | None]:
    """Per topic: mean score of the last ``recent`` graded attempts (None when never practised),
    with failed challenges of the topic pulling it down."""
    scores: dict[str, float | None] = {}
    status = store.challenge_status()
    for topic in lib.topics:
        attempts = [a for a in store.question_attempts(topic=topic, limit=recent) if a["correct"] is not None]
        values = [float(a["result"].get("score", 1.0 if a["correct"] else 0.0)) if isinstance(a["result"], dict)
                  else float(a["correct"]) for a in attempts]
        for cid, ch in lib.challenges.items():
            if ch.spec.topic == topic and cid in status:
                values.append(1.0 if status[cid]["status"] == "passed" else 0.0)
        scores[topic] = sum(values) / len(values) if values else None
    return scores


def suggest_next(store: Store, lib: Library, now: datetime | None = None) -> Suggestion:
    """The weakest topic and the next thing to do: due reviews first, then suggested questions, then
    a failed challenge of the weakest topic, then practice (unpractised topics count as weakest,
    in story order)."""
    now = _now(now)
    topics = [t for t in lib.topics if lib.questions_for(t) or any(c.spec.topic == t for c in lib.challenges.values())]
    if not topics:
        return Suggestion(None, "practice", None, "No content loaded: add a bank or run 'inferview lint'.")
    scores = topic_scores(store, lib)
    weakest = min(topics, key=lambda t: (-1.0 if scores[t] is None else scores[t], topics.index(t)))
    title = lib.topic_title(weakest)
    due = store.due_question_ids(now)
    if due:
        n = len(due)
        return Suggestion(weakest, "review", None,
                          f"{n} review{'s' if n != 1 else ''} due — start there. Weakest topic: {title}.")
    suggested = [row for row in store.suggestions() if row["question_id"] in lib.questions]
    if suggested:
        n = len(suggested)
        return Suggestion(weakest, "practice", None,
                          f"{n} suggested question{'s' if n != 1 else ''} waiting "
                          f"({suggested[0]['reason']}) — start there. Weakest topic: {title}.")
    status = store.challenge_status()
    for cid, ch in sorted(lib.challenges.items()):
        if ch.spec.topic == weakest and status.get(cid, {}).get("status") == "failed":
            return Suggestion(weakest, "challenge", cid, f"Weakest topic: {title}. Retry the challenge “{ch.spec.title}”.")
    if scores[weakest] is None:
        return Suggestion(weakest, "practice", weakest, f"You have not practised {title} yet — try a few cards.")
    return Suggestion(weakest, "practice", weakest,
                      f"Weakest topic: {title} ({100 * scores[weakest]:.0f}% recently). Practise it next.")

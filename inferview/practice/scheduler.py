"""Spaced repetition of questions with FSRS (Free Spaced Repetition Scheduler, v6 of the ``fsrs``
package; Ye et al. 2022, "A Stochastic Shortest Path Algorithm for Optimizing Spaced Repetition
Scheduling", and the open-spaced-repetition FSRS-6 model).

Each reviewed question has one FSRS ``Card``, stored as JSON through the progress store
(``Store.get_card`` / ``put_card``) together with its topic and next due time. The review queue
is: due cards first (most overdue first), then new questions, introduced in topic order (the order
of ``questions/topics.yaml``), easy before medium before hard, in bank order within that.

Ratings are FSRS's: 1 Again, 2 Hard, 3 Good, 4 Easy. ``suggest_rating`` maps a grading score to a
default rating the user can override.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from typing import Any, Protocol

from fsrs import Card, Rating, Scheduler

DIFFICULTY_ORDER = {"easy": 0, "medium": 1, "hard": 2}
"""Order in which new questions of one topic are introduced."""


class CardStore(Protocol):
    """The part of ``inferview.store.Store`` the scheduler uses."""

    def get_card(self, question_id: str) -> str | None: ...

    def put_card(self, question_id: str, topic: str, card_json: str, due: datetime) -> None: ...

    def due_question_ids(self, now: datetime | None = None, topic: str | None = None) -> list[str]: ...


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _aware(ts: datetime) -> datetime:
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=timezone.utc)


def suggest_rating(score: float, correct: bool | None = None) -> int:
    """A default self-rating from a grading score: Again below 0.4, Hard below 0.7 (or correct
    but with little to spare), Good otherwise; Easy is left to the user."""
    if correct is False and score < 0.4:
        return int(Rating.Again)
    if score < 0.4:
        return int(Rating.Again)
    if score < 0.7 or correct is False:
        return int(Rating.Hard)
    return int(Rating.Good)


class ReviewScheduler:
    """FSRS scheduling over a store's cards."""

    def __init__(self, store: CardStore, *, desired_retention: float = 0.9,
                 enable_fuzzing: bool = True, now: Callable[[], datetime] = _utcnow) -> None:
        self.store = store
        self.fsrs = Scheduler(desired_retention=desired_retention, enable_fuzzing=enable_fuzzing)
        self._now = now

    def now(self) -> datetime:
        """The current time (UTC), from the injected clock."""
        return _aware(self._now())

    def card(self, question_id: str) -> Card | None:
        """The FSRS card of a question, or None when it was never reviewed."""
        raw = self.store.get_card(question_id)
        return Card.from_json(raw) if raw else None

    def review(self, question_id: str, topic: str, rating: int | Rating,
               when: datetime | None = None, duration_s: float | None = None) -> datetime:
        """Record a review with ``rating`` (1-4) and return the question's next due time."""
        r = Rating(int(rating))
        when = _aware(when) if when is not None else self.now()
        card = self.card(question_id) or Card()
        ms = int(duration_s * 1000) if duration_s is not None else None
        card, _log = self.fsrs.review_card(card, r, review_datetime=when, review_duration=ms)
        self.store.put_card(question_id, topic, card.to_json(), card.due)
        return card.due

    def retrievability(self, question_id: str, when: datetime | None = None) -> float | None:
        """Probability of recall now (None for a question never reviewed)."""
        card = self.card(question_id)
        if card is None:
            return None
        return float(self.fsrs.get_card_retrievability(card, when or self.now()))

    def due(self, topic: str | None = None, when: datetime | None = None) -> list[str]:
        """Ids of reviewed questions due now, most overdue first."""
        return self.store.due_question_ids(when or self.now(), topic)

    def new_questions(self, questions: Iterable[Any], topic_order: Sequence[str] = (),
                      topic: str | None = None, limit: int | None = None) -> list[str]:
        """Ids of questions never reviewed, in introduction order (topic, difficulty, bank)."""
        rank = {t: i for i, t in enumerate(topic_order)}
        fresh = [(i, q) for i, q in enumerate(questions)
                 if (topic is None or q.topic == topic) and self.store.get_card(q.id) is None]
        fresh.sort(key=lambda iq: (rank.get(iq[1].topic, len(rank)),
                                   DIFFICULTY_ORDER.get(iq[1].difficulty, 1), iq[0]))
        ids = [q.id for _, q in fresh]
        return ids if limit is None else ids[:limit]

    def queue(self, questions: Iterable[Any], topic_order: Sequence[str] = (),
              topic: str | None = None, new_limit: int = 10,
              when: datetime | None = None) -> list[str]:
        """Today's queue: due questions first, then the suggested new ones (a failed challenge or a
        mock interview asked for them), then other new ones, up to ``new_limit`` new in all (every
        suggestion is kept). Due ids that no longer exist in ``questions`` are skipped."""
        qs = list(questions)
        known = {q.id for q in qs}
        due = [i for i in self.due(topic, when) if i in known]
        suggested = [s["question_id"] for s in self.suggested(topic) if s["question_id"] in known]
        fresh = [i for i in self.new_questions(qs, topic_order, topic) if i not in suggested]
        new = (suggested + fresh)[:max(new_limit, len(suggested))]
        return due + new

    def suggested(self, topic: str | None = None) -> list[dict[str, Any]]:
        """Questions never seen that were suggested (a failed challenge, a mock interview), with
        their reason; empty for a store without suggestions."""
        get = getattr(self.store, "suggestions", None)
        return list(get(topic)) if get is not None else []

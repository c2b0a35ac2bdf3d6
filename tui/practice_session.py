"""A practice session: the review queue, rendering, grading, corrections and ratings.

The queue is the scheduler's (FSRS; due cards first, then new questions in topic order). Numeric
drills are rendered from their templates with a seed that changes with every attempt, so a retry
asks about other numbers. Each question answered is saved once, with its final result (after the
user's corrections of the key points) and its self-rating, and the rating feeds FSRS. No textual.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from inferview.content.models import ChoiceQuestion, NumericQuestion, OpenQuestion
from inferview.practice.choice import display_order
from inferview.practice.drills import RenderedDrill, render
from inferview.practice.grading import grade_answer, rescore
from inferview.practice.openq import RubricContext
from inferview.practice.scheduler import ReviewScheduler, suggest_rating
from inferview.practice.units import FORMAT_HINT

NEW_PER_SESSION = 10
RATINGS = {1: "Again", 2: "Hard", 3: "Good", 4: "Easy"}


@dataclass
class PracticeItem:
    """One question as shown: its prompt, and for numeric drills the rendered instance."""

    question: Any
    prompt: str
    due: bool
    """A review of a card (True) or a question not seen before (False)."""
    label: str = "new"
    """What it is for the user: ``review``, ``suggested`` (never seen, brought here by a failed
    challenge or a mock interview), ``follow-up`` (asked after the previous answer) or ``new``."""
    reason: str = ""
    """Why a suggested question is here ("linked to the KV cache challenge")."""
    rendered: RenderedDrill | None = None
    order: list[int] | None = None
    """Choice questions: option indices in display order."""
    card_seen: str | None = None
    """The question's FSRS card when it was shown: rating it reviews that card once, so another
    app that rated it meanwhile (the card changed) is not reviewed over a second time."""


@dataclass
class Feedback:
    """A graded answer waiting for its self-rating; ``result`` reflects the user's corrections."""

    item: PracticeItem
    answer: str
    result: dict[str, Any]
    duration_s: float | None
    corrected: bool = False

    @property
    def correct(self) -> bool:
        return bool(self.result["correct"])

    @property
    def suggested_rating(self) -> int:
        return suggest_rating(float(self.result["score"]), self.correct)


class PracticeSession:
    """Due reviews then new questions, on one topic or all of them."""

    def __init__(self, library: Any, store: Any, topic: str | None, now: Callable[[], datetime],
                 new_limit: int = NEW_PER_SESSION, judge: Any = None) -> None:
        self.library = library
        self.store = store
        self.topic = topic
        self.now = now
        self.scheduler = ReviewScheduler(store, now=now)
        due = set(self.scheduler.due(topic))
        self.queue: list[str] = self.scheduler.queue(library.questions.values(), list(library.topics),
                                                     topic, new_limit)
        self.due_ids = due
        self.suggested = {row["question_id"]: row["reason"] for row in self.scheduler.suggested(topic)}
        """Question id -> why it was suggested."""
        self.follow_up_ids: set[str] = set()
        self.context = RubricContext.from_library(library)
        self.judge = judge
        """The local-model judge for open answers (``JudgeConfig``), or None for the rubric alone."""
        self.answered = 0
        self.right = 0
        self._item: PracticeItem | None = None

    @property
    def remaining(self) -> int:
        return len(self.queue)

    def current(self) -> PracticeItem | None:
        """The question to show now (None when the queue is empty)."""
        if not self.queue:
            return None
        qid = self.queue[0]
        if self._item is not None and self._item.question.id == qid:
            return self._item
        q = self.library.questions[qid]
        seed = len(self.store.question_attempts(question_id=qid))
        item = PracticeItem(q, q.prompt, qid in self.due_ids, card_seen=self.store.get_card(qid))
        if item.due:
            item.label = "review"
        elif qid in self.follow_up_ids:
            item.label = "follow-up"
        elif qid in self.suggested:
            item.label, item.reason = "suggested", self.suggested[qid]
        if isinstance(q, NumericQuestion):
            item.rendered = render(q, seed=seed)
            item.prompt = item.rendered.prompt
        elif isinstance(q, ChoiceQuestion):
            item.order = display_order(q, seed)
        self._item = item
        return item

    def grade(self, answer: str | Iterable[int], duration_s: float | None = None) -> Feedback:
        """Grade the current question's answer (text, or chosen option indices)."""
        item = self.current()
        if item is None:
            raise IndexError("no question left")
        result = grade_answer(item.question, answer, item.rendered, context=self.context,
                              judge=self.judge).to_dict()
        shown = answer if isinstance(answer, str) else ", ".join(
            item.question.options[i].text for i in sorted(answer))
        return Feedback(item, shown, result, duration_s)

    def toggle_key_point(self, feedback: Feedback, point: str) -> None:
        """The user says the grader got a key point wrong: move it between hits and misses."""
        hits, misses = feedback.result["hits"], feedback.result["misses"]
        if point in hits:
            hits.remove(point)
            misses.append(point)
        elif point in misses:
            misses.remove(point)
            hits.append(point)
        else:
            raise KeyError(point)
        self._rescore(feedback)

    def dismiss_flag(self, feedback: Feedback, claim: str) -> None:
        """The user says a misconception was flagged wrongly (e.g. quoted to refute it)."""
        flags = feedback.result["flags"]
        kept = [f for f in flags if f["claim"] != claim]
        feedback.result.setdefault("dismissed_flags", []).extend(f for f in flags if f["claim"] == claim)
        feedback.result["flags"] = kept
        self._rescore(feedback)

    def _rescore(self, feedback: Feedback) -> None:
        rescore(feedback.result)
        feedback.result["corrected_by_user"] = True
        feedback.corrected = True

    def rate(self, feedback: Feedback, rating: int) -> datetime:
        """Save the attempt with its rating, schedule the next review, and move on. Returns the
        question's next due time."""
        if rating not in RATINGS:
            raise ValueError(f"rating must be 1-4, not {rating}")
        now = self.now()
        q = feedback.item.question
        with self.store.transaction():  # the attempt and its card's review, or neither
            self.store.record_question_attempt(
                q.id, q.topic, q.kind, feedback.answer, copy.deepcopy(feedback.result),
                feedback.correct, rating=rating, duration_s=feedback.duration_s, at=now,
            )
            # read inside the write transaction: a second app rating the same question at once
            # waits for the first, sees its review, and schedules nothing more
            card = self.store.get_card(q.id)
            if card is not None and card != feedback.item.card_seen:
                due = self.scheduler.card(q.id).due  # type: ignore[union-attr]
            else:
                due = self.scheduler.review(q.id, q.topic, rating, when=now,
                                            duration_s=feedback.duration_s)
        self.answered += 1
        self.right += int(feedback.correct)
        self._advance()
        return due

    def abandon(self, feedback: Feedback) -> None:
        """Save a graded answer that was never rated (the user left): kept, but not scheduled."""
        q = feedback.item.question
        self.store.record_question_attempt(
            q.id, q.topic, q.kind, feedback.answer, copy.deepcopy(feedback.result), feedback.correct,
            duration_s=feedback.duration_s, at=self.now(),
        )

    def skip(self) -> None:
        """Move the current question to the end of the queue."""
        if self.queue:
            self.queue.append(self.queue.pop(0))
            self._item = None

    def ask_follow_ups(self, ids: list[str]) -> list[str]:
        """Put follow-up questions right after the current one, labelled "follow-up"; a question
        that nearly repeats the current one is skipped. Returns those added."""
        current = self.library.questions.get(self.queue[0]) if self.queue else None
        added = [i for i in ids if i in self.library.questions and i not in self.queue[:1]
                 and not (current is not None and near_duplicate(current, self.library.questions[i]))]
        rest = [i for i in self.queue[1:] if i not in added]
        self.queue = self.queue[:1] + added + rest
        self.follow_up_ids.update(added)
        return added

    def _advance(self) -> None:
        if self.queue:
            self.queue.pop(0)
        self._item = None


DUPLICATE_OVERLAP = 0.6
"""Share of content words two prompts have in common above which one nearly repeats the other."""


def near_duplicate(a: Any, b: Any) -> bool:
    """Whether question ``b`` nearly repeats ``a``: their prompts share most of their content
    words (lemmas), or ``b``'s prompt contains ``a``'s."""
    from inferview.practice import textnorm

    def words(q: Any) -> set[str]:
        return {t.lemma for t in textnorm.read(q.prompt).tokens if not t.stop and len(t.lemma) > 2}

    wa, wb = words(a), words(b)
    if not wa or not wb:
        return False
    return len(wa & wb) / min(len(wa), len(wb)) >= DUPLICATE_OVERLAP


def kind_hint(question: Any) -> str:
    """What the answer box expects."""
    if isinstance(question, OpenQuestion):
        return "Answer in a few sentences, as you would out loud. ctrl+s submits."
    if isinstance(question, ChoiceQuestion):
        return ("Select every correct option (space), then ctrl+s." if question.multiple
                else "Select one option (space), then ctrl+s.")
    return f"A number with its unit, e.g. {FORMAT_HINT}. Enter submits."

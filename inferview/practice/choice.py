"""Grading ``choice`` questions: one or several correct options.

Selections are indices into ``question.options`` in the bank's order (the order shown may be
shuffled with ``display_order``; map back before grading). Letters ``"a"``, ``"B"`` and option
texts are accepted too. A single-answer question is right or wrong. A multiple-answer question is
right when exactly the correct set is chosen; otherwise it scores
``max(0, (correct chosen - wrong chosen) / number correct)``.
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterable
from dataclasses import dataclass

from inferview.content.models import ChoiceQuestion
from inferview.text import plural


@dataclass(frozen=True)
class ChoiceGrade:
    """The outcome of grading one selection."""

    correct: bool
    """Exactly the correct options were chosen."""
    score: float
    """1 when correct; partial credit for multiple-answer questions."""
    selected: list[int]
    """Chosen option indices (bank order)."""
    right: list[int]
    """Indices of the correct options."""
    explanations: list[tuple[int, bool, str]]
    """For every option: (index, is_correct, why), in bank order."""
    message: str
    """A sentence for the user."""


def display_order(question: ChoiceQuestion, seed: int = 0) -> list[int]:
    """Option indices in the order to show them (shuffled deterministically when asked to)."""
    order = list(range(len(question.options)))
    if question.shuffle:
        random.Random(f"{question.id}:{seed}").shuffle(order)
    return order


def _index(question: ChoiceQuestion, sel: int | str) -> int:
    n = len(question.options)
    if isinstance(sel, bool):
        raise ValueError(f"not an option: {sel!r}")
    if isinstance(sel, int):
        if 0 <= sel < n:
            return sel
        raise ValueError(f"option {sel} out of range 0..{n - 1}")
    s = str(sel).strip()
    if len(s) == 1 and s.lower() in string.ascii_lowercase[:n]:
        return string.ascii_lowercase.index(s.lower())
    if s.isdigit() and 1 <= int(s) <= n:
        return int(s) - 1
    for i, o in enumerate(question.options):
        if o.text.strip().lower() == s.lower():
            return i
    raise ValueError(f"not an option: {sel!r}")


def grade_choice(question: ChoiceQuestion, selected: Iterable[int | str]) -> ChoiceGrade:
    """Grade a selection of options."""
    chosen = sorted({_index(question, s) for s in selected})
    right = [i for i, o in enumerate(question.options) if o.correct]
    expl = [(i, o.correct, o.why) for i, o in enumerate(question.options)]
    ok = chosen == right
    if ok:
        score, msg = 1.0, "Correct."
    elif question.multiple:
        hits = len(set(chosen) & set(right))
        wrong = len(set(chosen) - set(right))
        score = max(0.0, (hits - wrong) / len(right))
        msg = (f"Partly right: {hits} of {len(right)} correct options chosen"
               + (f", {plural(wrong, 'wrong one')}." if wrong else "."))
    else:
        score, msg = 0.0, "Not quite."
    if not chosen:
        msg = "No option chosen."
    return ChoiceGrade(ok, score, chosen, right, expl, msg)

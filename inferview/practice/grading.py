"""One entry point for grading any question kind: ``grade_answer``.

The result (``AnswerResult``) is what the TUI shows after a submission and what the progress
store records (``to_dict``). Open answers are graded by key points and misconceptions
(``openq``), choices by option sets (``choice``), numeric answers by relative tolerance with unit
parsing and a diagnosis of typical slips (``numeric``), against a drill rendered from the template
(``drills.render``) when none is given.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from inferview.content.models import ChoiceQuestion, NumericQuestion, OpenQuestion
from inferview.practice.choice import grade_choice
from inferview.practice.drills import RenderedDrill, render
from inferview.practice.numeric import grade_numeric
from inferview.practice.openq import PASS_SCORE, grade_open
from inferview.text import plural


@dataclass
class AnswerResult:
    """What grading one answer found."""

    question_id: str
    """The question graded."""
    kind: str
    """``open``, ``choice`` or ``numeric``."""
    correct: bool
    """The answer is right."""
    partial: bool
    """Neither right nor wholly wrong (some key points, some options, or close)."""
    score: float
    """0..1."""
    message: str
    """One or two sentences for the user."""
    model_answer: str
    """The model answer (numeric: filled in with the computed value)."""
    hits: list[str] = field(default_factory=list)
    """Key points the answer made (open)."""
    misses: list[str] = field(default_factory=list)
    """Key points it missed (open)."""
    flags: list[dict[str, str]] = field(default_factory=list)
    """Misconceptions stated: ``{"claim", "correction"}`` (open)."""
    options: list[dict[str, Any]] = field(default_factory=list)
    """Per option: ``{"index", "text", "correct", "chosen", "why"}`` (choice)."""
    expected: float | None = None
    """The computed value (numeric)."""
    expected_text: str = ""
    """The computed value in a friendly unit (numeric)."""
    value: float | None = None
    """The answer read in the question's unit (numeric)."""
    diagnosis: str | None = None
    """The likely slip (numeric)."""
    prompt: str = ""
    """The prompt as shown (numeric: rendered)."""
    params: dict[str, Any] = field(default_factory=dict)
    """The drill's parameters (numeric)."""
    follow_ups: list[str] = field(default_factory=list)
    """Ids of follow-up questions."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (stored as the attempt's result)."""
        return asdict(self)


def grade_answer(question: OpenQuestion | ChoiceQuestion | NumericQuestion,
                 answer: str | Iterable[int | str],
                 rendered: RenderedDrill | None = None) -> AnswerResult:
    """Grade ``answer`` (text, or selected options for a choice question) for ``question``."""
    follow = list(question.follow_ups)
    if isinstance(question, OpenQuestion):
        if not isinstance(answer, str):
            raise TypeError("an open question takes a text answer")
        g = grade_open(question, answer)
        correct = g.score >= PASS_SCORE and not g.flagged
        if not answer.strip():
            msg = "No answer given."
        elif correct:
            msg = f"Good: {len(g.hits)} of {len(g.hits) + len(g.missed)} key points."
        else:
            msg = f"{len(g.hits)} of {len(g.hits) + len(g.missed)} key points"
            msg += f", {plural(len(g.flagged), 'misconception')} flagged." if g.flagged else "."
        return AnswerResult(
            question.id, "open", correct, (not correct) and g.score > 0, g.score, msg,
            question.answer, hits=[k.point for k in g.hits], misses=[k.point for k in g.missed],
            flags=[{"claim": m.claim, "correction": m.correction} for m in g.flagged],
            prompt=question.prompt, follow_ups=follow,
        )
    if isinstance(question, ChoiceQuestion):
        selected = [answer] if isinstance(answer, (str, int)) else list(answer)
        c = grade_choice(question, selected)
        opts = [{"index": i, "text": question.options[i].text, "correct": ok,
                 "chosen": i in c.selected, "why": why} for i, ok, why in c.explanations]
        return AnswerResult(question.id, "choice", c.correct, (not c.correct) and c.score > 0,
                            c.score, c.message, question.answer, options=opts,
                            prompt=question.prompt, follow_ups=follow)
    if isinstance(question, NumericQuestion):
        if not isinstance(answer, str):
            raise TypeError("a numeric question takes a text answer")
        drill = rendered if rendered is not None else render(question)
        n = grade_numeric(answer, drill.value, drill.unit, drill.tolerance, drill.factors)
        return AnswerResult(
            question.id, "numeric", n.correct, n.score == 0.5, n.score, n.message, drill.answer,
            expected=drill.value, expected_text=drill.value_text, value=n.value,
            diagnosis=n.diagnosis, prompt=drill.prompt, params=drill.params, follow_ups=follow,
        )
    raise TypeError(f"not a question: {type(question).__name__}")

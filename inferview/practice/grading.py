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
from typing import TYPE_CHECKING, Any

from inferview.content.models import ChoiceQuestion, NumericQuestion, OpenQuestion
from inferview.practice.choice import grade_choice
from inferview.practice.drills import RenderedDrill, render
from inferview.practice.numeric import grade_numeric
from inferview.practice.openq import (
    PASS_SCORE,
    RubricContext,
    builtin_context,
    score_of,
    verdict_of,
)
from inferview.text import plural

if TYPE_CHECKING:
    from inferview.practice.judge import JudgeConfig

__all__ = ["PASS_SCORE", "AnswerResult", "grade_answer", "rescore"]


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
    main: list[str] = field(default_factory=list)
    """The key points an answer must make to pass (open)."""
    matched: dict[str, str] = field(default_factory=dict)
    """Key point -> the answer's words that made it (open)."""
    flags: list[dict[str, str]] = field(default_factory=list)
    """Errors the answer makes: ``{"claim", "correction", "matched", "origin"}`` (open)."""
    verdict: str = ""
    """``pass``, ``partial`` or ``fail``."""
    grader: str = ""
    """Which grader decided an open answer: ``rubric`` or ``judge``."""
    note: str = ""
    """Why a configured judge did not decide, or what it discarded (open)."""
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


def _verdict(correct: bool, partial: bool) -> str:
    return "pass" if correct else ("partial" if partial else "fail")


def open_message(hits: int, points: int, errors: int, main_missed: int, verdict: str) -> str:
    """The one-line summary of an open answer's grade."""
    msg = f"{hits} of {points} key points"
    if errors:
        msg += f", {plural(errors, 'error')} flagged"
    elif main_missed and verdict != "pass":
        msg += ", the main point missing"
    return ("Good: " + msg + ".") if verdict == "pass" else (msg + ".")


def rescore(result: dict[str, Any]) -> None:
    """Recompute an open result's score, verdict and message in place, after the user toggled a
    key point or dismissed a flag: the same rules as grading (``openq.score_of``/``verdict_of``)."""
    hits, misses, flags = result["hits"], result["misses"], result["flags"]
    total = len(hits) + len(misses)
    main_missed = sum(1 for m in result.get("main", []) if m not in hits)
    result["score"] = score_of(len(hits), total, len(flags))
    result["verdict"] = verdict_of(result["score"], len(flags), main_missed)
    result["correct"] = result["verdict"] == "pass"
    result["partial"] = result["verdict"] == "partial"
    result["message"] = open_message(len(hits), total, len(flags), main_missed, result["verdict"])


def grade_answer(question: OpenQuestion | ChoiceQuestion | NumericQuestion,
                 answer: str | Iterable[int | str],
                 rendered: RenderedDrill | None = None, *,
                 context: RubricContext | None = None,
                 judge: JudgeConfig | None = None) -> AnswerResult:
    """Grade ``answer`` (text, or selected options for a choice question) for ``question``.

    Open answers use ``context`` (a library's rubric context; the built-in one by default) and,
    when ``judge`` is given, the local-model judge with the rubric as its fallback."""
    follow = list(question.follow_ups)
    if isinstance(question, OpenQuestion):
        if not isinstance(answer, str):
            raise TypeError("an open question takes a text answer")
        rubric = (context or builtin_context()).rubric(question)
        g = rubric.grade(answer)
        if judge is not None and answer.strip():
            from inferview.practice.judge import grade_with_judge

            g = grade_with_judge(rubric, answer, judge, g)
        hits = [p.point.point for p in g.points if p.hit]
        misses = [p.point.point for p in g.points if not p.hit]
        msg = ("No answer given." if not answer.strip() else
               open_message(len(hits), len(g.points), len(g.errors), len(g.main_missed), g.verdict))
        return AnswerResult(
            question.id, "open", g.verdict == "pass", g.verdict == "partial", g.score, msg,
            question.answer, hits=hits, misses=misses,
            main=[kp.point for kp in question.key_points if kp.main],
            matched={p.point.point: p.matched for p in g.points if p.hit and p.matched},
            flags=[{"claim": e.claim, "correction": e.correction, "matched": e.matched,
                    "origin": e.origin} for e in g.errors],
            verdict=g.verdict, grader=g.grader, note=g.note,
            prompt=question.prompt, follow_ups=follow,
        )
    if isinstance(question, ChoiceQuestion):
        selected = [answer] if isinstance(answer, (str, int)) else list(answer)
        c = grade_choice(question, selected)
        opts = [{"index": i, "text": question.options[i].text, "correct": ok,
                 "chosen": i in c.selected, "why": why} for i, ok, why in c.explanations]
        partial = (not c.correct) and c.score > 0
        return AnswerResult(question.id, "choice", c.correct, partial,
                            c.score, c.message, question.answer, options=opts,
                            verdict=_verdict(c.correct, partial), prompt=question.prompt,
                            follow_ups=follow)
    if isinstance(question, NumericQuestion):
        if not isinstance(answer, str):
            raise TypeError("a numeric question takes a text answer")
        drill = rendered if rendered is not None else render(question)
        n = grade_numeric(answer, drill.value, drill.unit, drill.tolerance, drill.factors)
        return AnswerResult(
            question.id, "numeric", n.correct, n.score == 0.5, n.score, n.message, drill.answer,
            expected=drill.value, expected_text=drill.value_text, value=n.value,
            diagnosis=n.diagnosis, prompt=drill.prompt, params=drill.params, follow_ups=follow,
            verdict=_verdict(n.correct, n.score == 0.5),
        )
    raise TypeError(f"not a question: {type(question).__name__}")

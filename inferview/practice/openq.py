"""Grading free-text answers against a rubric of claims: key points to make, errors not to make.

A question's **key points** are claims a strong answer makes; each has patterns
(``inferview.practice.patterns``) that recognise the claim in the candidate's own words. Its
**errors** are wrong claims: the question's own ``misconceptions``, the catalogue of its topic
(a bank's ``errors:``) and, for every reversible key point, the key point's reversal: the claim
negated ("memory bandwidth is not the limit" against "decode is bound by memory bandwidth") or
with one word of a thesaurus antonym pair turned around ("higher temperature sharpens" against
"higher temperature softens", "grows quadratically" against "grows linearly").

- A key point is **hit** when one of its patterns has an affirmed match.
- An error is **flagged** when one of its patterns has an affirmed match in a sentence that asserts
  it: not a question, and not after "if", "unless", "suppose", "imagine", or words that report a
  mistake ("a common misconception is..."). A key point's reversal is flagged the same way, when no
  pattern of that key point is affirmed anywhere in the answer.
- ``score = hits / key points - 0.25 * errors``, clipped to [0, 1].
- The verdict is ``pass`` when the score is at least 0.6, no error is flagged and every ``main``
  key point is hit; ``fail`` when the score is 0; ``partial`` otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from inferview.content.models import KeyPoint, Misconception, OpenQuestion
from inferview.practice import lexicon as lexicon_mod
from inferview.practice.lexicon import Lexicon
from inferview.practice.patterns import (
    Match,
    Pattern,
    PatternError,
    Reading,
    compile_pattern,
    match,
    reversals,
)

FLAG_PENALTY = 0.25
"""Score subtracted per flagged error."""
PASS_SCORE = 0.6
"""The least score of a passing answer."""

CONDITIONAL: frozenset[str] = frozenset({
    "if", "unless", "suppose", "supposing", "imagine", "hypothetically", "whether",
})
"""Words that make the rest of their clause a condition, not a claim ("if decode were
compute-bound, ..."): the consequence after the comma is still a claim, and so is a modal one
("I would ship weight-only first" recommends, it does not suppose)."""
REPORTING: frozenset[str] = frozenset({
    "myth", "misconception", "mistake", "misunderstanding", "fallacy", "wrongly", "mistakenly",
    "incorrectly", "naively", "tempting", "pitfall", "say", "think", "believe", "claim", "assume",
    "misconceive", "misread", "confuse", "assumption",
})
"""Words that report a claim rather than make it ("people say...", "a common misconception is
that..."), up to the end of the sentence or a contrast ("..., but that is wrong")."""

Verdict = Literal["pass", "partial", "fail"]
Origin = Literal["question", "topic", "reversal"]


def score_of(hits: int, points: int, errors: int) -> float:
    """The score rule: key points hit / key points, less 0.25 per error, clipped to [0, 1]."""
    base = hits / points if points else 1.0
    return max(0.0, min(1.0, base - FLAG_PENALTY * errors))


def verdict_of(score: float, errors: int, main_missed: int) -> Verdict:
    """The verdict rule: ``pass`` at PASS_SCORE with no error and every main point hit; ``fail``
    at a score of 0; ``partial`` otherwise."""
    if score >= PASS_SCORE and not errors and not main_missed:
        return "pass"
    return "fail" if score == 0 else "partial"


@dataclass(frozen=True)
class PointResult:
    """One key point, hit or missed."""

    point: KeyPoint
    hit: bool
    matched: str | None = None
    """The answer's words that made the point."""
    pattern: str | None = None
    """The pattern that matched."""


@dataclass(frozen=True)
class ErrorResult:
    """One wrong claim the answer makes."""

    claim: str
    """The wrong claim, in the bank's words."""
    correction: str
    """One sentence on why it is wrong."""
    matched: str
    """The answer's words that make the claim."""
    pattern: str = ""
    origin: Origin = "question"
    """Where the error comes from: the question, its topic's catalogue, or a reversed key point."""


@dataclass(frozen=True)
class OpenGrade:
    """The outcome of grading one free-text answer."""

    points: tuple[PointResult, ...] = ()
    errors: tuple[ErrorResult, ...] = ()
    grader: Literal["rubric", "judge"] = "rubric"
    """Which grader decided."""
    note: str = ""
    """Why the judge's decision was not used, when one was configured."""

    @property
    def hits(self) -> list[KeyPoint]:
        """Key points the answer makes."""
        return [p.point for p in self.points if p.hit]

    @property
    def missed(self) -> list[KeyPoint]:
        """Key points it lacks."""
        return [p.point for p in self.points if not p.hit]

    @property
    def score(self) -> float:
        """Share of key points hit, less 0.25 per error, clipped to [0, 1]."""
        return score_of(len(self.hits), len(self.points), len(self.errors))

    @property
    def main_missed(self) -> list[KeyPoint]:
        """``main`` key points the answer lacks."""
        return [p.point for p in self.points if p.point.main and not p.hit]

    @property
    def verdict(self) -> Verdict:
        """``pass``, ``partial`` or ``fail`` (module docstring)."""
        return verdict_of(self.score, len(self.errors), len(self.main_missed))

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def to_json(self, question_id: str) -> dict[str, Any]:
        """The object ``inferview answer --json`` prints (``docs/answer-result.md``)."""
        return {
            "id": question_id,
            "verdict": self.verdict,
            "score": round(self.score, 4),
            "key_points": [{"text": p.point.point, "hit": p.hit, "matched": p.matched}
                           for p in self.points],
            "errors": [{"text": e.claim, "matched": e.matched, "correction": e.correction}
                       for e in self.errors],
            "grader": self.grader,
        }


@dataclass
class Rubric:
    """A question's key points and errors, compiled against its lexicon."""

    question: OpenQuestion
    lexicon: Lexicon
    points: list[tuple[KeyPoint, list[Pattern], list[Pattern]]]
    """Each key point with its patterns and their reversals (one opposite group swapped in)."""
    errors: list[tuple[Misconception, Origin, list[Pattern]]]
    problems: list[str] = field(default_factory=list)
    """Patterns that did not compile (``field: message``), for ``lint``."""

    @classmethod
    def build(cls, question: OpenQuestion, lex: Lexicon,
              catalogue: Sequence[Misconception] = ()) -> Rubric:
        problems: list[str] = []

        def compiled(where: str, patterns: Sequence[str]) -> list[Pattern]:
            out = []
            for j, source in enumerate(patterns):
                try:
                    out.append(compile_pattern(source, lex))
                except PatternError as exc:
                    problems.append(f"{where}.match[{j}]: {exc}")
            return out

        points = []
        for i, kp in enumerate(question.key_points):
            pats = compiled(f"key_points[{i}]", kp.match)
            points.append((kp, pats, [r for p in pats for r in reversals(p, lex)] if kp.reversible else []))
        errors: list[tuple[Misconception, Origin, list[Pattern]]] = [
            (m, "question", compiled(f"misconceptions[{i}]", m.match))
            for i, m in enumerate(question.misconceptions)]
        own = {m.claim for m in question.misconceptions}
        errors += [(m, "topic", compiled(f"topic errors ({m.claim!r})", m.match))
                   for m in catalogue if m.claim not in own]
        return cls(question, lex, points, errors, problems)

    def grade(self, text: str) -> OpenGrade:
        """Grade one answer."""
        reading = Reading(text, self.lexicon)
        results: list[PointResult] = []
        errors: list[ErrorResult] = []
        spans: list[tuple[int, int]] = []
        for kp, patterns, flipped in self.points:
            matches = [m for p in patterns for m in match(p, reading, "sentence")]
            hit = next((m for m in matches if m.affirmed), None)
            results.append(PointResult(kp, hit is not None, hit.words if hit else None,
                                       hit.pattern if hit else None))
            if kp.reversible:
                # a negated claim contradicts the point only when the answer never makes it
                # ("softens the distribution ... at T = 1 it does not soften it" is no error)
                rev = None if hit is not None else next(
                    (m for p in patterns if not p.negative
                     for m in match(p, reading, "clause", ordered=True)
                     if not m.affirmed and _asserted(m, reading)), None)
                if rev is None:
                    rev = next((m for p in flipped for m in match(p, reading, "clause", ordered=True)
                                if m.affirmed and _asserted(m, reading)), None)
                if rev is not None:
                    errors.append(ErrorResult(f"Says the opposite of: {kp.point}", _sentence(kp.point),
                                              rev.words, rev.pattern, "reversal"))
                    spans.append((rev.first, rev.last))
        claimed: list[tuple[int, int]] = []
        named: list[ErrorResult] = []
        for mis, origin, patterns in self.errors:
            found = next((m for p in patterns for m in match(p, reading, "clause", ordered=True)
                          if m.affirmed and _asserted(m, reading)), None)
            if found is not None:
                named.append(ErrorResult(mis.claim, mis.correction, found.words, found.pattern, origin))
                claimed.append((found.first, found.last))
        # a reversal at the words of a named error is that error: keep its own correction
        errors = [e for e, span in zip(errors, spans, strict=True)
                  if not any(a <= span[1] and span[0] <= b for a, b in claimed)]
        return OpenGrade(tuple(results), tuple(errors + named))


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "!", "?")) else ".")


def _asserted(m: Match, reading: Reading) -> bool:
    """The answer asserts the match: no conditional word before it in its clause, no reporting
    word before it in its block of the sentence."""
    toks = reading.doc.tokens
    first = toks[m.first]
    opens = next((t.surface for t in toks if t.segment == first.segment), "")
    for t in toks[:m.first]:
        if t.sentence != m.sentence:
            continue
        if t.lemma in CONDITIONAL and t.segment == first.segment:
            return False
        if t.lemma in REPORTING and t.block == first.block:
            return False
        # "unlike X, which trades accuracy for speed, ...": said of what is being contrasted
        if t.surface == "unlike" and (t.segment == first.segment or (
                t.segment == first.segment - 1 and opens in ("which", "that", "who"))):
            return False
    return True


@dataclass
class RubricContext:
    """What grading needs beyond the question: the thesaurus of its bank, its topic's catalogue."""

    catalogues: dict[str, list[Misconception]] = field(default_factory=dict)
    synonyms: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """Bank id -> its own thesaurus groups."""
    question_bank: dict[str, str] = field(default_factory=dict)
    _lexicons: dict[str, Lexicon] = field(default_factory=dict)
    _rubrics: dict[str, Rubric] = field(default_factory=dict)

    @classmethod
    def from_library(cls, lib: Any) -> RubricContext:
        """The context of a loaded :class:`~inferview.content.loader.Library`."""
        return cls(dict(lib.catalogues), dict(lib.synonyms), dict(lib.question_bank))

    def lexicon_for(self, question: OpenQuestion) -> Lexicon:
        bank = self.question_bank.get(question.id, "")
        if bank not in self._lexicons:
            self._lexicons[bank] = lexicon_mod.shared().extended(self.synonyms.get(bank, {}))
        return self._lexicons[bank]

    def rubric(self, question: OpenQuestion) -> Rubric:
        """The compiled rubric of ``question`` (cached by id and content)."""
        cached = self._rubrics.get(question.id)
        if cached is None or cached.question != question:
            cached = Rubric.build(question, self.lexicon_for(question),
                                  self.catalogues.get(question.topic, []))
            self._rubrics[question.id] = cached
        return cached


@lru_cache(maxsize=1)
def builtin_context() -> RubricContext:
    """The context of the built-in content (what grading uses when given none)."""
    from inferview.content.loader import load_library

    return RubricContext.from_library(load_library(include_user=False))


def grade_open(question: OpenQuestion, answer: str, context: RubricContext | None = None) -> OpenGrade:
    """Grade ``answer`` to ``question`` by its rubric (``context`` defaults to the built-in one)."""
    return (context or builtin_context()).rubric(question).grade(answer)


def self_check(question: OpenQuestion, context: RubricContext | None = None) -> list[str]:
    """Problems an author should fix (for ``lint``): patterns that cannot work, a model answer
    that misses a key point or makes an error, examples that do not grade as labelled."""
    rubric = (context or builtin_context()).rubric(question)
    out = list(rubric.problems)
    g = rubric.grade(question.answer)
    out += [f"key_points: {k.point!r} is not detected in the model answer" for k in g.missed]
    out += [f"misconceptions: the model answer states {e.claim!r} (matched {e.matched!r})"
            for e in g.errors]
    for i, text in enumerate(question.examples.good):
        g = rubric.grade(text)
        if g.errors:
            out.append(f"examples.good[{i}]: flagged {g.errors[0].claim!r} (matched {g.errors[0].matched!r})")
        elif not g.passed:
            out.append(f"examples.good[{i}]: scores {g.score:.2f}, missing "
                       + "; ".join(repr(k.point) for k in g.missed))
    for i, text in enumerate(question.examples.bad):
        if not rubric.grade(text).errors:
            out.append(f"examples.bad[{i}]: no error is flagged")
    for i, text in enumerate(question.examples.vague):
        g = rubric.grade(text)
        if g.score >= PASS_SCORE:
            out.append(f"examples.vague[{i}]: scores {g.score:.2f}, at least the pass score, hitting "
                       + "; ".join(repr(p.point.point) for p in g.points if p.hit))
    return out

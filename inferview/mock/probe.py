"""The interviewer who listens: when an open answer misses a key point, probe it next.

After each open answer the mock grades it silently with the rubric (nothing is shown before the
report) and looks at the key points it missed, the ``main`` one first. A key point may name the
question that probes it (``probe:`` in the bank); otherwise the question chosen is the one that
covers the missed concept best: the most of the point's meaning-bearing words (lemmas, small words
left out) among a candidate's prompt and key points, preferring the same topic and then the next
topics of the story, so the conversation stays connected. A probe is asked right after the answer,
and at most one per answer; a probe's own answer is not probed again.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from inferview.content.loader import Library
from inferview.content.models import KeyPoint, OpenQuestion
from inferview.mock.plan import BUDGET_S, STORY, PlanItem
from inferview.mock.session import MockSession
from inferview.practice import textnorm

MIN_SHARED = 2
"""A candidate must share at least this many of the missed point's content lemmas..."""
MIN_COVER = 0.4
"""...and at least this share of them."""
SAME_TOPIC_BONUS = 0.25


@dataclass(frozen=True)
class Probe:
    """The question to ask next, and the key point it probes."""

    question_id: str
    point: str


@functools.lru_cache(maxsize=4096)
def _lemmas(text: str) -> frozenset[str]:
    """Content lemmas of ``text`` (cached: every candidate is read once per process)."""
    return frozenset({t.lemma for t in textnorm.read(text).tokens
            if not t.stop and not t.negator and len(t.lemma) > 2 and not t.lemma.isdigit()})


def _story_distance(a: str, b: str) -> int:
    if a not in STORY or b not in STORY:
        return len(STORY)
    d = STORY.index(b) - STORY.index(a)
    return d if d >= 0 else len(STORY) - d  # later topics first, earlier ones after


def _by_concept(lib: Library, question: OpenQuestion, point: KeyPoint, asked: set[str]) -> str | None:
    want = _lemmas(point.point)
    if len(want) < MIN_SHARED:
        return None
    best: tuple[float, int, str] | None = None
    for q in lib.questions.values():
        if not isinstance(q, OpenQuestion) or q.id in asked or q.id == question.id:
            continue
        have = _lemmas(" ".join([q.prompt, *(kp.point for kp in q.key_points)]))
        shared = len(want & have)
        cover = shared / len(want)
        if shared < MIN_SHARED or cover < MIN_COVER:
            continue
        score = cover + (SAME_TOPIC_BONUS if q.topic == question.topic else 0.0)
        key = (score, -_story_distance(question.topic, q.topic), q.id)
        if best is None or key[:2] > best[:2] or (key[:2] == best[:2] and key[2] < best[2]):
            best = key
    return best[2] if best else None


def probe_for(lib: Library, question: OpenQuestion, answer: str, asked: set[str],
              context: object = None) -> Probe | None:
    """The question that probes what ``answer`` missed, or None (nothing missed, nothing fits)."""
    from inferview.practice.openq import grade_open

    if not answer.strip():
        return None
    grade = grade_open(question, answer, context)  # type: ignore[arg-type]
    missed = sorted(grade.missed, key=lambda kp: not kp.main)
    for kp in missed:
        if kp.probe and kp.probe in lib.questions and kp.probe not in asked:
            return Probe(kp.probe, kp.point)
        found = _by_concept(lib, question, kp, asked)
        if found is not None:
            return Probe(found, kp.point)
    return None


def adapt(session: MockSession, lib: Library, question_id: str, answer: str,
          context: object = None) -> Probe | None:
    """After the answer to ``question_id`` was recorded: put the probing question next (and drop
    the last question not yet asked when the time left cannot hold both). Returns the probe."""
    answered = session.index - 1
    if answered < 0 or session.current is None:
        return None
    item = session.plan.items[answered]
    question = lib.questions.get(question_id)
    if item.probes or not isinstance(question, OpenQuestion):
        return None
    asked = {i.ref for i in session.plan.items[:session.index]}  # a planned one may move up
    probe = probe_for(lib, question, answer, asked, context)
    if probe is None:
        return None
    target = lib.questions[probe.question_id]
    session.insert_next(PlanItem("question", target.id, target.topic, BUDGET_S[target.kind],
                                 seed=item.seed, follow_up_of=question_id, probes=probe.point))
    return probe

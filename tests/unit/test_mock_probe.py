"""The mock interviewer follows up on what an answer missed (inferview.mock.probe)."""

from __future__ import annotations

from inferview.tests.support.mock_library import make_library

from inferview.content.loader import load_library
from inferview.content.models import KeyPoint
from inferview.mock.probe import adapt, probe_for
from inferview.mock.session import MockSession

LIB = load_library(include_user=False)


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _session(lib, minutes=30, seed=1) -> MockSession:
    return MockSession.new(lib, minutes, seed=seed, clock=FakeClock())


def test_a_key_point_that_names_its_probe_brings_that_question_next():
    lib = make_library()
    q = lib.questions["serve-why-slow"]
    lib.questions[q.id] = q.model_copy(update={"key_points": [
        q.key_points[0], q.key_points[1].model_copy(update={"probe": "quantization-q1"})]})
    s = _session(lib)
    assert s.current.ref == "serve-why-slow"
    s.answer(text="Decoding is sequential, one token at a time.")  # the memory-bound point missed
    before = [i.ref for i in s.plan.items[s.index:]]
    probe = adapt(s, lib, "serve-why-slow", "Decoding is sequential, one token at a time.")
    assert probe is not None and probe.question_id == "quantization-q1"
    nxt = s.current
    assert nxt.ref == "quantization-q1" and nxt.follow_up_of == "serve-why-slow"
    assert nxt.probes == "memory bound"
    assert "quantization-q1" not in [i.ref for i in s.plan.items[s.index + 1:]]  # moved, not doubled
    assert s.plan.total_budget_s - sum(i.budget_s for i in s.plan.items[:s.index]) <= s.remaining_s() + 30
    assert len(before) >= len(s.plan.items[s.index:]) - 1


def test_an_answer_that_makes_every_point_is_not_probed():
    lib = make_library()
    s = _session(lib)
    text = "Decoding is sequential, one token at a time, and each step must read all the weights."
    s.answer(text=text)
    nxt = s.current
    assert adapt(s, lib, "serve-why-slow", text) is None
    assert s.current is nxt and not nxt.probes


def test_without_a_named_probe_the_question_on_the_missed_concept_comes_next():
    """The opener answered without the cache: the interviewer asks about the KV cache."""
    q = LIB.questions["serve-why-slow"]
    missed = [kp for kp in q.key_points]
    answer = "Every token needs a forward pass through the model, one after the other."
    probe = probe_for(LIB, q, answer, asked={q.id})
    assert probe is not None and probe.point in [kp.point for kp in missed]
    target = LIB.questions[probe.question_id]
    assert target.id != q.id
    words = {w for w in probe.point.lower().split() if len(w) > 3}
    text = " ".join([target.prompt, *(kp.point for kp in target.key_points)]).lower()
    assert sum(w.rstrip("s") in text for w in words) >= 2, (probe, target.prompt)


def test_a_probe_is_not_probed_again_and_empty_answers_bring_none():
    lib = make_library()
    q = lib.questions["serve-why-slow"]
    lib.questions[q.id] = q.model_copy(update={"key_points": [
        q.key_points[0], KeyPoint(point="memory bound", match=["decode @memory-bound"],
                                  probe="quantization-q1")]})
    s = _session(lib)
    s.answer(text="")
    assert adapt(s, lib, "serve-why-slow", "") is None
    s2 = _session(lib)
    s2.answer(text="It is sequential: one token at a time.")
    adapt(s2, lib, "serve-why-slow", "It is sequential: one token at a time.")
    s2.answer(text="no idea")
    assert adapt(s2, lib, "quantization-q1", "no idea") is None  # the probe's answer: no chain


def test_a_named_probe_must_exist():
    from inferview.content.loader import cross_reference_errors

    lib = make_library()
    q = lib.questions["serve-why-slow"]
    lib.questions[q.id] = q.model_copy(update={"key_points": [
        q.key_points[0].model_copy(update={"probe": "no-such-question"})]})
    errors = [str(e) for e in cross_reference_errors(lib)]
    assert any("key_points[0].probe" in e and "no-such-question" in e for e in errors)

"""Content tests over every built-in question bank (questions/*.yaml)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml
from inferview.reference.formulas import QUANTITIES

from inferview.content.loader import cross_reference_errors, load_library
from inferview.content.models import Bank, ChoiceQuestion, NumericQuestion, OpenQuestion
from inferview.practice.drills import render
from inferview.practice.grading import grade_answer
from inferview.practice.openq import grade_open
from inferview.practice.units import alternative_answers

QUESTIONS_DIR = Path(__file__).resolve().parents[1] / "questions"
LIB = load_library(include_user=False)
OPEN = [q for q in LIB.questions.values() if isinstance(q, OpenQuestion)]
CHOICE = [q for q in LIB.questions.values() if isinstance(q, ChoiceQuestion)]
NUMERIC = [q for q in LIB.questions.values() if isinstance(q, NumericQuestion)]


def _ids(qs):
    return [q.id for q in qs]


def test_every_bank_loads_without_errors():
    assert [str(e) for e in LIB.errors] == []
    assert [str(e) for e in cross_reference_errors(LIB)] == []


@pytest.mark.parametrize("path", sorted(QUESTIONS_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_bank_file_validates(path):
    Bank.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def test_ids_unique_across_banks():
    ids = Counter()
    for path in QUESTIONS_DIR.glob("*.yaml"):
        for q in yaml.safe_load(path.read_text(encoding="utf-8")).get("questions") or []:
            ids[q["id"]] += 1
    assert [i for i, n in ids.items() if n > 1] == []


def test_follow_ups_exist():
    missing = [(q.id, f) for q in LIB.questions.values() for f in q.follow_ups if f not in LIB.questions]
    assert missing == []


@pytest.mark.parametrize("q", OPEN, ids=_ids(OPEN))
def test_open_model_answer_hits_every_key_point_and_no_misconception(q):
    g = grade_open(q, q.answer)
    assert [k.point for k in g.missed] == [], "key points not detected in the model answer"
    assert [m.claim for m in g.flagged] == [], "model answer states a misconception"


@pytest.mark.parametrize("q", CHOICE, ids=_ids(CHOICE))
def test_choice_has_correct_option_and_explanations(q):
    assert any(o.correct for o in q.options)
    assert all(o.why.strip() for o in q.options), "every option needs a 'why'"
    right = [i for i, o in enumerate(q.options) if o.correct]
    assert grade_answer(q, right).correct


def _cases():
    for q in NUMERIC:
        models = q.params.get("model")
        if models:
            for m in models:
                yield pytest.param(q, {"model": m}, id=f"{q.id}-{m}")
        else:
            for seed in range(3):
                yield pytest.param(q, {"seed": seed}, id=f"{q.id}-seed{seed}")


@pytest.mark.parametrize("q, pin", list(_cases()))
def test_numeric_template_renders_and_grades_its_own_answer(q, pin):
    assert q.quantity in QUANTITIES
    seed = pin.pop("seed", 0)
    d = render(q, seed=seed, **pin)
    assert "{" not in d.prompt and "{" not in d.answer
    assert d.value_text.split(" (")[0] in d.answer, "the model answer must show {value}"
    alts = alternative_answers(d.value, d.unit)
    assert len(alts) >= 2
    for text in alts:
        r = grade_answer(q, text, rendered=d)
        assert r.correct, (text, r.message)
    for wrong in (d.value * 2, d.value / 2):
        r = grade_answer(q, f"{wrong!r}", rendered=d)
        assert not r.correct, wrong


def test_numeric_drills_cover_the_quantities():
    used = {q.quantity for q in NUMERIC}
    for name in ("kv_cache_bytes", "kv_bytes_per_token", "weight_bytes", "moe_total_params",
                 "moe_active_params", "max_batch_size", "max_context_tokens", "spec_expected_tokens",
                 "spec_walltime_factor", "attention_flops", "decode_arithmetic_intensity"):
        assert name in used, name
    assert len(NUMERIC) >= 25


def test_enough_questions_per_topic():
    assert len(LIB.questions) >= 150
    topics = yaml.safe_load((QUESTIONS_DIR / "topics.yaml").read_text(encoding="utf-8"))["topics"]
    counts = Counter(q.topic for q in LIB.questions.values())
    thin = {t["id"]: counts.get(t["id"], 0) for t in topics if counts.get(t["id"], 0) < 12}
    assert thin == {}

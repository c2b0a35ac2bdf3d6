"""Numeric grading, diagnoses, choice grading and grade_answer."""

from __future__ import annotations

import pytest

from inferview.content.models import (
    ChoiceOption,
    ChoiceQuestion,
    KeyPoint,
    NumericQuestion,
    OpenQuestion,
)
from inferview.practice.choice import display_order, grade_choice
from inferview.practice.drills import DrillError, combinations, render
from inferview.practice.grading import grade_answer
from inferview.practice.numeric import grade_numeric

GIB40 = 40 * 2**30


def test_correct_in_several_units():
    for text in ("40 GiB", "42.9 GB", "4.29e10 bytes", "42949672960"):
        assert grade_numeric(text, GIB40, "bytes").correct, text


def test_gb_vs_gib_diagnosis():
    g = grade_numeric("40 GB", GIB40, "bytes", tolerance=0.02)
    assert not g.correct and "GiB" in g.diagnosis


def test_bits_diagnosis():
    g = grade_numeric("40 Gb", GIB40, "bytes")
    assert not g.correct and "bits" in g.diagnosis


def test_contextual_factor_wins():
    g = grade_numeric("320 GiB", GIB40, "bytes", factors=[(8.0, "used num_attention_heads")])
    assert "num_attention_heads" in g.diagnosis and "too large" in g.diagnosis


def test_close_answer_scores_half():
    g = grade_numeric("43.5 GiB", GIB40, "bytes", tolerance=0.05)
    assert not g.correct and g.score == 0.5


def test_unreadable_answer():
    g = grade_numeric("a lot", GIB40, "bytes")
    assert not g.correct and g.value is None and "number" in g.message


def _numeric(**kw) -> NumericQuestion:
    base = dict(id="n-kv", topic="kv-cache", prompt="KV cache of {model} at {seq_len} tokens in {dtype}?",
                answer="{layers} x 2 x {kv_heads} x {head_dim} x {bytes_per_value} x {seq_len} = {value}",
                source="seed: KV cache", quantity="kv_cache_bytes", unit="bytes",
                params={"model": ["llama-3-70b", "mistral-7b"], "seq_len": [131072], "dtype": ["bf16"]})
    base.update(kw)
    return NumericQuestion(**base)


def test_render_is_deterministic_and_fills_templates():
    q = _numeric()
    a, b = render(q, seed=3), render(q, seed=3)
    assert a == b
    d = render(q, model="llama-3-70b")
    assert d.value == 42_949_672_960
    assert d.prompt == "KV cache of Llama-3-70B at 131,072 tokens in bf16?"
    assert d.answer == "80 x 2 x 8 x 128 x 2 x 131,072 = 40 GiB (42.95 GB)"
    assert "config.json" in d.source


def test_drill_diagnoses_gqa_and_window():
    q = _numeric()
    d = render(q, model="llama-3-70b")
    r = grade_answer(q, "320 GiB", rendered=d)
    assert not r.correct and "num_key_value_heads" in r.diagnosis
    m = render(q, model="mistral-7b")
    r = grade_answer(q, f"{m.value * 32:.6g} bytes", rendered=m)
    assert "sliding window" in r.diagnosis


def test_render_errors():
    with pytest.raises(DrillError, match="unknown placeholder"):
        render(_numeric(prompt="What is {nonsense}?"))
    with pytest.raises(DrillError, match="unknown model"):
        render(_numeric(params={"model": ["gpt-9"], "seq_len": [1]}))
    with pytest.raises(DrillError, match="unknown quantity"):
        render(_numeric(quantity="nope"))
    assert len(list(combinations(_numeric()))) == 2


def _choice(multiple: bool) -> ChoiceQuestion:
    return ChoiceQuestion(
        id="c-q", topic="kv-cache", prompt="Which?", answer="A and maybe C.", source="test",
        options=[ChoiceOption(text="A", correct=True, why="yes"), ChoiceOption(text="B", why="no"),
                 ChoiceOption(text="C", correct=multiple, why="maybe")],
    )


def test_choice_single_and_multiple():
    assert grade_choice(_choice(False), [0]).correct
    assert not grade_choice(_choice(False), ["b"]).correct
    g = grade_choice(_choice(True), [0])
    assert not g.correct and g.score == pytest.approx(0.5)
    assert grade_choice(_choice(True), ["a", "C"]).correct
    assert grade_choice(_choice(True), [0, 1]).score == 0.0
    assert sorted(display_order(_choice(True), 5)) == [0, 1, 2]
    with pytest.raises(ValueError):
        grade_choice(_choice(True), [7])


def test_grade_answer_all_kinds():
    oq = OpenQuestion(id="o-q", topic="kv-cache", prompt="Why cache?", answer="We avoid recomputing keys.",
                      source="test", key_points=[KeyPoint(point="no recompute", phrases=["avoid recomputing"])],
                      follow_ups=["c-q"])
    r = grade_answer(oq, "It avoids recomputation... we avoid recomputing keys")
    assert r.correct and r.hits == ["no recompute"] and r.follow_ups == ["c-q"]
    assert r.to_dict()["kind"] == "open"
    r = grade_answer(_choice(True), [0, 2])
    assert r.correct and len(r.options) == 3
    q = _numeric(params={"model": ["llama-3-70b"], "seq_len": [131072]})
    r = grade_answer(q, "40 GiB")
    assert r.correct and r.expected == 42_949_672_960 and r.expected_text.startswith("40 GiB")


def test_template_problems():
    from inferview.practice.drills import template_problems

    assert template_problems(_numeric()) == []
    assert "unknown 'nope'" in template_problems(_numeric(quantity="nope"))[0]
    assert any("unknown placeholder" in p for p in template_problems(_numeric(answer="{oops} {value}")))
    assert any("needs 'seq_len'" in p for p in template_problems(_numeric(params={"model": ["llama-3-8b"]})))
    assert any("is in 'bytes'" in p for p in template_problems(_numeric(unit="params")))


def test_documented_placeholders_exist():
    import re

    from inferview.practice import drills

    documented = set(re.findall(r"``\{([a-z_]+)\}``", drills.__doc__))
    q = _numeric(quantity="max_batch_size", unit="count",
                 params={"model": ["llama-3-8b"], "seq_len": [4096], "gpu": ["h100-sxm"]})
    fields = drills.placeholders(q, {"model": "llama-3-8b", "seq_len": 4096, "gpu": "h100-sxm"})
    missing = documented - set(fields) - {"value", "alpha", "batch", "param"}
    assert missing == set()


def test_close_gb_for_gib_is_named_but_a_plain_near_miss_is_not():
    g = grade_numeric("40 GB", GIB40, "bytes", tolerance=0.05)
    assert g.score == 0.5 and "Read in GiB instead of GB" in g.diagnosis
    g = grade_numeric("1 TB", 2**40, "bytes", tolerance=0.05)
    assert g.score == 0.5 and "2^40 bytes = 1.100 TB" in g.diagnosis
    g = grade_numeric("46 GiB", GIB40, "bytes", tolerance=0.05)
    assert g.score == 0.5 and g.diagnosis is None


def test_drill_factor_silences_the_generic_one():
    g = grade_numeric("320 GiB", GIB40, "bytes", factors=[(8.0, "used num_attention_heads")])
    assert "num_attention_heads" in g.diagnosis and "bits" not in g.diagnosis
    g = grade_numeric("80 GiB", GIB40, "bytes", factors=[(2.0, "forgot K and V")])
    assert g.diagnosis == "Your answer is 2x too large. Likely: forgot K and V."
    # without a drill factor the generic explanation still fires
    assert "bits" in grade_numeric("320 GiB", GIB40, "bytes").diagnosis


@pytest.mark.parametrize("answer", ["47 GiB", "61 GiB", "3 GiB", "130 GiB", "0.1 GiB"])
def test_no_spurious_diagnosis(answer):
    factors = [(8.0, "GQA"), (80.0, "one layer"), (2.0, "K and V")]
    assert grade_numeric(answer, GIB40, "bytes", factors=factors).diagnosis is None


def test_drill_diagnoses_a_rounded_count_and_a_quantized_dtype():
    q = _numeric(id="n-batch", quantity="max_batch_size", unit="count", tolerance=0.01,
                 prompt="{model} on {gpu}, {seq_len} tokens?", answer="{value}",
                 params={"model": ["llama-2-7b"], "gpu": ["a100-80gb"], "seq_len": [8192]})
    d = render(q)
    assert d.value == 16  # floor(67.45 GiB / 4 GiB)
    # forgetting K and V halves the per-sequence cache: floor(33.7) = 33, not 2 x 16
    assert "keys and values" in grade_answer(q, "33", rendered=d).diagnosis
    assert grade_answer(q, "17", rendered=d).diagnosis is None  # off by one is not a slip
    q = _numeric(params={"model": ["llama-3-70b"], "seq_len": [32768], "dtype": ["int4"]})
    d = render(q)
    r = grade_answer(q, f"{d.value * 4:.6g} bytes", rendered=d)
    assert "2 bytes per value instead of int4's 0.5 bytes" in r.diagnosis


def test_bytes_each_reads_as_english():
    for dtype, text in (("fp8", "1 byte"), ("bf16", "2 bytes"), ("int4", "0.5 bytes")):
        q = _numeric(answer="{bytes_each} {weight_bytes_each}",
                     params={"model": ["llama-3-8b"], "seq_len": [8], "dtype": [dtype]})
        assert render(q).answer == f"{text} 2 bytes"


def _bank_templates() -> list[NumericQuestion]:
    import yaml

    from inferview.paths import builtin_questions_dir

    bank = builtin_questions_dir() / "numeric-drills.yaml"
    return [NumericQuestion(**q) for q in yaml.safe_load(bank.read_text())["questions"]]


def test_every_combination_of_every_bank_template_has_an_answer():
    from inferview.reference.formulas import QUANTITIES

    from inferview.practice.drills import _render_with

    for q in _bank_templates():
        for params in combinations(q):
            d = _render_with(q, QUANTITIES[q.quantity], params)
            assert d.value > 0, (q.id, params)
            assert "FLOP/byte FLOP/byte" not in d.answer and " 1 bytes" not in d.answer, q.id


def test_context_note_only_past_max_position_embeddings():
    q = _numeric(prompt="{model} at {seq_len}.{context_note}",
                 params={"model": ["llama-2-70b", "llama-3.1-405b"], "seq_len": [131072]})
    assert "max_position_embeddings to 4,096" in render(q, model="llama-2-70b").prompt
    assert render(q, model="llama-3.1-405b").prompt == "Llama-3.1-405B at 131,072."


def test_rendered_source_names_the_gpu_datasheet():
    q = _numeric(id="n-ridge", quantity="ridge_point", unit="flop/byte", prompt="{gpu}?",
                 answer="{value}", params={"gpu": ["h100-sxm"]})
    d = render(q)
    assert d.value == pytest.approx(989.4e12 / 3.35e12)
    assert "GPU: NVIDIA H100 Tensor Core GPU datasheet" in d.source


def test_slips_are_one_way():
    # forgetting K and V can only shrink a cache; ignoring a window can only grow it
    q = _numeric(params={"model": ["gpt-oss-120b"], "seq_len": [131072], "dtype": ["bf16"]})
    d = render(q)
    big = grade_answer(q, f"{d.value * 2:.6g} bytes", rendered=d).diagnosis
    small = grade_answer(q, f"{d.value / 2:.6g} bytes", rendered=d).diagnosis
    assert "sliding window" in big and "keys and values" not in big
    assert "keys and values" in small and "sliding window" not in small
    # for the batch that fits, the same slips point the other way
    q = _numeric(id="n-batch", quantity="max_batch_size", unit="count", tolerance=0.01,
                 prompt="{model} on {gpu}, {seq_len} tokens?", answer="{value}",
                 params={"model": ["llama-3-8b"], "gpu": ["h100-sxm"], "seq_len": [4096]})
    d = render(q)
    assert "num_attention_heads" in grade_answer(q, str(int(d.value) // 4), rendered=d).diagnosis


def test_spec_all_accepted_slip():
    q = _numeric(id="n-spec", quantity="spec_expected_tokens", unit="tokens", prompt="{alpha}",
                 answer="{value}", params={"alpha": [0.7], "gamma": [3]})
    d = render(q)
    assert "every drafted token is accepted" in grade_answer(q, "4", rendered=d).diagnosis
    assert grade_answer(q, "1.6", rendered=d).diagnosis is None


def test_bare_number_for_bytes_asks_for_a_unit():
    g = grade_numeric("40", GIB40, "bytes")
    assert not g.correct and "without a unit is read as bytes" in g.diagnosis
    assert grade_numeric("42949672960", GIB40, "bytes").correct


def test_the_format_examples_answer_no_drill():
    """The answer boxes' examples (units.FORMAT_EXAMPLES) must never be a drill's answer."""
    from inferview.content.loader import load_library
    from inferview.content.models import NumericQuestion
    from inferview.practice.drills import render
    from inferview.practice.grading import grade_answer
    from inferview.practice.units import FORMAT_EXAMPLES

    lib = load_library(include_user=False)
    drills = [q for q in lib.questions.values() if isinstance(q, NumericQuestion)]
    assert drills
    for q in drills:
        for seed in range(12):
            drill = render(q, seed=seed)
            for example in FORMAT_EXAMPLES:
                result = grade_answer(q, example, rendered=drill)
                assert not result.correct, (q.id, seed, example, drill.answer)

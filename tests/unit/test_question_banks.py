"""Content tests over every built-in question bank (questions/*.yaml)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml
from inferview.reference.formulas import QUANTITIES

from inferview.content.loader import cross_reference_errors, load_library
from inferview.content.models import Bank, ChoiceQuestion, NumericQuestion, OpenQuestion
from inferview.practice.drills import render, template_problems
from inferview.practice.grading import grade_answer
from inferview.practice.openq import PASS_SCORE, grade_open, self_check
from inferview.practice.units import alternative_answers

QUESTIONS_DIR = Path(__file__).resolve().parents[2] / "questions"
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
    assert [(e.claim, e.matched) for e in g.errors] == [], "model answer states a misconception"


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


@pytest.mark.parametrize("q", NUMERIC, ids=_ids(NUMERIC))
def test_numeric_template_has_no_lint_problem(q):
    """What ``inferview lint`` says of the template (every parameter combination renders)."""
    assert template_problems(q) == []


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


FIRST_TOPICS = {"kv-cache", "attention-variants", "moe", "quantization", "pruning", "distillation",
                "flash-attention", "speculative-decoding", "serving", "framing"}
"""The first release's topics: at least 20 questions each; every later topic at least 10."""


def test_enough_questions_per_topic():
    assert len(LIB.questions) >= 360
    topics = yaml.safe_load((QUESTIONS_DIR / "topics.yaml").read_text(encoding="utf-8"))["topics"]
    counts = Counter(q.topic for q in LIB.questions.values())
    thin = {t["id"]: counts.get(t["id"], 0) for t in topics
            if counts.get(t["id"], 0) < (20 if t["id"] in FIRST_TOPICS else 10)}
    assert thin == {}


# One answer per open question that name-drops the topic's keywords without the reasoning a key
# point asks for. Each must stay below PASS_SCORE: a phrase generic enough to let one of these
# pass ("memory", "faster", "cache" on their own) rewards keyword lists instead of explanations.
VAGUE_ANSWERS: dict[str, str] = {
    "serve-why-slow": (
        "Generation is slow because of memory and compute. The KV cache and batching help, and "
        "GPUs are getting faster."
    ),
    "serve-prefill-vs-decode": (
        "Prefill is big and decode is small, so one is compute bound and the other memory bound. "
        "It's about arithmetic."
    ),
    "serve-decode-memory-bound": (
        "It depends on the GPU. Quantizing to 4 bits makes the model smaller and faster."
    ),
    "serve-batching": (
        "Batching helps because the GPU does more at once. It stops helping when the batch is too"
        " big."
    ),
    "serve-continuous-batching": (
        "Continuous batching is a better way to batch that is continuous rather than static, so "
        "it's faster."
    ),
    "serve-paged-attention": (
        "PagedAttention uses pages to make attention faster and use less memory in vLLM."
    ),
    "serve-prefix-caching": (
        "The engine caches the prompt so it is faster. Caching is limited by memory."
    ),
    "serve-long-context-pricing": (
        "Long context is more expensive because it has more tokens and uses more memory."
    ),
    "serve-kv-limits-concurrency": (
        "The number of requests is limited by the GPU. You can fit a lot of requests on 80 GB."
    ),
    "serve-ttft-itl": (
        "TTFT is the first token and ITL is between tokens. Long prompts make things slower for "
        "everybody."
    ),
    "serve-disaggregation": (
        "They separate prefill and decode to make both faster, but it costs more GPUs."
    ),
    "serve-preemption": "The scheduler frees up memory somehow and things slow down.",
    "kv-500th-token": "Because the model uses a cache, so it is efficient and doesn't get slower.",
    "kv-why-slow-without-cache": (
        "Without a cache generation is slow because there is a lot of work. Caching makes it "
        "fast."
    ),
    "kv-why-memory": (
        "The cache takes a lot of memory because models are big and contexts are long."
    ),
    "kv-estimate-long-context": (
        "It's a lot of memory, maybe tens of gigabytes, and long requests cost more because "
        "they're long."
    ),
    "kv-exceeds-weights": (
        "The KV cache is big, comparable to the weights, so memory matters in serving."
    ),
    "kv-understand-first": (
        "The KV cache makes things faster and those three are optimizations of the KV cache."
    ),
    "kv-why-not-q": (
        "Queries aren't cached because you don't need them. Keys and values are what matters."
    ),
    "kv-prefill-decode": (
        "In prefill the cache gets created and in decode it is used. Both use the cache."
    ),
    "kv-per-layer": (
        "Every layer is different, so every layer needs a cache. Sharing wouldn't work."
    ),
    "kv-eviction": (
        "Eviction removes things from the cache to save memory, and there may be some trade-offs."
    ),
    "kv-quantized-cache": (
        "Quantizing the cache saves memory. It is harder because the cache is different from the "
        "weights."
    ),
    "kv-decode-reads-cache": "The KV cache also takes time because it is big and memory is slow.",
    "attn-what-each-gives-up": (
        "They all shrink the cache by using fewer heads and lose a bit of quality."
    ),
    "attn-why-not-mqa-everywhere": (
        "MQA isn't always best because there are trade-offs; GQA is more popular now."
    ),
    "attn-gqa-middle": "GQA is between MHA and MQA, a compromise with groups.",
    "attn-gqa-uptraining": "You convert the model to GQA and then train it a bit more.",
    "attn-mla-how": "MLA compresses the cache with a latent, and RoPE is handled specially.",
    "attn-mla-absorb": (
        "MLA is smart about it and doesn't need to expand everything, using some matrix tricks."
    ),
    "attn-kv-formula-changes": (
        "Each variant uses a different formula with fewer heads, so the cache is smaller."
    ),
    "attn-what-stays-same": (
        "With GQA some things change and some stay the same; the heads are grouped."
    ),
    "attn-sliding-window": "Sliding window and GQA both make the cache smaller in different ways.",
    "attn-gqa-tensor-parallel": (
        "The KV cache is split over the GPUs, and MQA has fewer heads so it's more efficient."
    ),
    "attn-decode-intensity": (
        "GQA makes decode faster because it's more efficient with fewer heads and better "
        "arithmetic intensity."
    ),
    "fa-inference-help": (
        "Yes, flash attention is fast, so it helps inference too since attention is used there."
    ),
    "fa-speedup-exact": (
        "It's faster because it is optimized and uses the GPU better. It gives basically the same"
        " answer."
    ),
    "fa-quadratic": (
        "Flash attention makes attention much more efficient for long sequences so quadratic is "
        "less of a problem."
    ),
    "fa-memory-hierarchy": "The bottleneck is memory. Flash attention uses memory better.",
    "fa-online-softmax": (
        "Softmax is computed in blocks, in a numerically stable way, using the max."
    ),
    "fa-vs-approximate": (
        "Flash attention is different from approximate schemes. Sparse is good sometimes."
    ),
    "fa-hardware-serving": "It needs a good GPU, and you turn it on in the config.",
    "fa-versions": "Each version is faster than the last and supports newer GPUs.",
    "fa-buys-nothing": "It doesn't help when it's not needed or when things are already fast.",
    "fa-write-kernel": (
        "You split attention into blocks and process them in SRAM, then write the output."
    ),
    "fa-causal-skip": "It uses the causal mask to avoid work and saves a good amount.",
    "fa-backward-lse": "It recomputes because it is more efficient to do so.",
    "fa-flash-decoding": (
        "Flash-Decoding is a faster version of flash attention for decoding with better "
        "parallelism."
    ),
    "quant-first-lever": "I'd make the model smaller somehow, maybe by compressing it.",
    "quant-honest-tradeoff": "It may cost some quality. You'd test it to see if it's acceptable.",
    "quant-weight-only-vs-wa": (
        "Weight-only does the weights and the other does both. I'd deploy the one that's simpler."
    ),
    "quant-fewer-bits-outliers": (
        "Fewer bits saves memory, but outliers are a problem because they're big."
    ),
    "quant-bf16-vs-fp16": (
        "bf16 is better for training because it's designed for it; fp16 is older."
    ),
    "quant-fp8-formats": (
        "E4M3 and E5M2 are the two FP8 formats, with different bits, used for different things."
    ),
    "quant-mixed-precision": (
        "Mixed precision uses different precisions for different parts to be faster and save "
        "memory."
    ),
    "quant-granularity": (
        "Per-group is finer, so it's more accurate. 4-bit uses groups because it needs it."
    ),
    "quant-llm-int8": "LLM.int8() quantizes to int8 and deals with outliers in a special way.",
    "quant-smoothquant": "SmoothQuant smooths the activations so W8A8 works better.",
    "quant-gptq-awq": (
        "GPTQ and AWQ are both good 4-bit methods that minimize error in different ways."
    ),
    "quant-decode-speedup": (
        "4-bit is faster because it's smaller. It stops being faster when the GPU is busy."
    ),
    "quant-kv-cache": "Quantizing the cache saves memory, and keys and values are a bit different.",
    "quant-mx-formats": (
        "MX formats are new low-precision formats that the industry likes for efficiency."
    ),
    "quant-qat-vs-ptq": (
        "QAT is quantization during training and PTQ after training; QAT is better but costs "
        "more."
    ),
    "spec-how-speed-up": (
        "Use a smaller model to help the big model be faster, like speculative decoding."
    ),
    "spec-bad-draft": "If the draft model is bad, speculative decoding doesn't work as well.",
    "spec-one-sentence": "It's a technique to make generation faster using a draft model.",
    "spec-why-exact": (
        "The acceptance rule makes sure the distribution comes out right because it uses p and q."
    ),
    "spec-expected-tokens": (
        "Alpha is the acceptance rate; you get more tokens when alpha is high, so speedup depends"
        " on alpha."
    ),
    "spec-choose-gamma": "You choose gamma by trying different values and picking the best one.",
    "spec-choose-draft": "Pick a small model that's good and fast.",
    "spec-greedy-vs-sampling": (
        "Greedy and sampling work differently with speculative decoding; sampling is more "
        "complicated."
    ),
    "spec-medusa-eagle": (
        "There are methods like Medusa and EAGLE that make the model draft itself."
    ),
    "spec-mtp": "MTP predicts multiple tokens, which is related to speculative decoding.",
    "spec-when-no-speedup": (
        "It stops paying off when the draft isn't good enough or the system is busy."
    ),
    "moe-total-vs-active": (
        "Total is all the parameters, active is fewer. Routing needs to be managed."
    ),
    "moe-router": "The router decides which experts to use, and combines the experts' outputs.",
    "moe-routing-collapse": (
        "Routing collapse is when routing stops working well and it's bad for the model."
    ),
    "moe-aux-loss": "The loss encourages balance between experts using two quantities.",
    "moe-capacity-factor": (
        "The capacity factor limits how many tokens an expert can take; when full, something else"
        " happens."
    ),
    "moe-aux-free": "DeepSeek-V3 balances experts with a bias trick instead of a loss.",
    "moe-shared-experts": (
        "Shared experts are shared and fine-grained experts are smaller; both improve MoE."
    ),
    "moe-expert-parallelism": (
        "You put experts on different GPUs and they communicate, which costs time."
    ),
    "moe-memory-vs-compute": (
        "MoE needs memory for all experts because they're part of the model, so serving needs "
        "lots of memory."
    ),
    "moe-decode-memory-bound": (
        "MoE can still be memory bound because it has a lot of parameters, and batch size "
        "matters."
    ),
    "moe-why-moe": "MoE is efficient and lets you build bigger models, but it's more complex.",
    "frame-group-by-change": (
        "They all make inference faster and cheaper in different ways, so you use the best ones."
    ),
    "frame-compose-order": "You can still optimize a trained model in several ways, in some order.",
    "frame-connected-story": (
        "There are many techniques like KV cache, flash attention, quantization and speculative "
        "decoding that all make it faster."
    ),
    "frame-kv-vs-flash": (
        "Both are important optimizations for attention. I'd choose the one that makes things "
        "faster."
    ),
    "frame-why-inference-matters": (
        "Inference is different from training and important in practice."
    ),
    "frame-estimates-ready": (
        "You should be able to estimate memory and speed quickly with formulas."
    ),
    "frame-honest-costs": "Every technique has a cost; some cost quality and some cost memory.",
    "frame-latency-target": "I'd try various optimizations until it's fast enough.",
    "frame-frontier-anatomy": "Modern models use MoE and other techniques to be efficient.",
    "frame-moe-store-less": "MoE stores and moves less because fewer experts are active.",
    "frame-flash-where": "Flash attention is about memory and makes attention faster.",
    "prune-unstructured-no-speedup": (
        "Unstructured pruning doesn't speed things up because the GPU isn't designed for it."
    ),
    "prune-two-four": "2:4 sparsity is a pattern that makes GPUs faster on Ampere and Hopper.",
    "prune-structured": "Structured pruning prunes in a structured way, so it's faster.",
    "prune-magnitude": (
        "Magnitude pruning removes weights, and it's weak for LLMs because they're big."
    ),
    "prune-sparsegpt-wanda": (
        "SparseGPT and Wanda are one-shot pruning methods that work well for LLMs."
    ),
    "prune-cheap-lossy-data": (
        "They each have pros and cons: some are cheap, some lose quality, some need data."
    ),
    "prune-recovery": "You retrain the model to get the quality back, which costs time.",
    "prune-depth-vs-width": (
        "Depth removes layers and width shrinks them; both change latency and quality."
    ),
    "prune-heads": "You can prune heads, and it saves some computation.",
    "prune-when-unstructured-pays": (
        "Unstructured sparsity can be worth it sometimes, depending on the hardware."
    ),
    "distil-what-is": "Distillation makes a model smaller so it's more efficient.",
    "distil-soft-targets": (
        "The student learns from the teacher's outputs, which are more informative than labels."
    ),
    "distil-temperature": "Temperature controls how soft the distribution is in distillation.",
    "distil-beyond-outputs": (
        "You can distil other things from the teacher as well, not just outputs."
    ),
    "distil-quantize-prune-distil": (
        "It depends on the situation. Each has trade-offs and you can use them."
    ),
    "distil-qpd-wanted": "Quantization, pruning and distillation each have uses.",
    "distil-vs-transfer": (
        "Distillation and transfer learning both transfer knowledge but differently."
    ),
    "distil-student-beats-teacher": (
        "Sometimes the student can be better than the teacher if things go well."
    ),
    "distil-ensemble": "You distil the ensemble into one model by training it.",
    "distil-bad-teacher": "A bad teacher gives a bad student.",
    "distil-different-architecture": (
        "You can still distil between architectures by adapting the pipeline."
    ),
    "distil-open-weight": "Many recent open models use distillation from bigger models.",
    "distil-fails": "Distillation can fail if the student doesn't learn well.",
    "distil-forward-reverse-kl": (
        "Forward and reverse KL are different directions and give different behaviour."
    ),
}


@pytest.mark.parametrize("q", OPEN, ids=_ids(OPEN))
def test_open_examples_grade_as_labelled(q):
    """examples.good pass with no misconception, examples.bad are flagged, phrases are usable."""
    assert self_check(q) == []


def test_every_open_question_has_a_vague_answer():
    """Here for the first banks' questions, in the bank (``examples.vague``, checked by lint) for
    the rest; never both."""
    in_bank = {q.id for q in OPEN if q.examples.vague}
    assert set(VAGUE_ANSWERS) & in_bank == set()
    assert sorted(set(VAGUE_ANSWERS) | in_bank) == sorted(q.id for q in OPEN)


@pytest.mark.parametrize("qid", sorted(VAGUE_ANSWERS))
def test_vague_keyword_answer_does_not_pass(qid):
    q = LIB.questions[qid]
    g = grade_open(q, VAGUE_ANSWERS[qid])
    assert g.score < PASS_SCORE, [(p.point.point, p.matched) for p in g.points if p.hit]

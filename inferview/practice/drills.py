"""Rendering numeric drills: a ``NumericQuestion`` template filled for one model preset and one
choice of parameters, with the answer computed by ``inferview.reference.formulas``.

Choices are deterministic: the same question id and seed give the same drill. Templates may use
``{param}`` for any of the question's ``params`` and the placeholders listed in ``placeholders()``
(model facts such as ``{layers}``, ``{kv_heads}``, ``{head_dim}``, GPU facts such as
``{gpu_memory}``, and intermediate results such as ``{kv_per_token}`` and ``{weights}``), plus
``{value}`` (the answer in a friendly unit) in the model answer. Every number in them comes from the
presets and the reference functions.

Placeholders (all formatted for reading):

- every drill parameter (``{seq_len}``, ``{batch}``, ``{dtype}``, ``{alpha}``...) and the quantity's
  defaults; ``{bits}``/``{bytes_per_value}`` of ``dtype`` and ``{bytes_each}`` (the same with its
  unit: "1 byte", "2 bytes"), ``{weight_bits}``/``{weight_bytes_per_param}``/``{weight_bytes_each}``
  of ``weight_dtype``; ``{formula}``;
- with a ``model``: ``{model}`` (title), ``{model_source}``, ``{layers}``, ``{heads}``,
  ``{kv_heads}``, ``{gqa_ratio}``, ``{head_dim}``, ``{hidden}``, ``{vocab}``, ``{ffn}``,
  ``{window}``, ``{attention_kinds}``, ``{kv_lora_rank}``, ``{rope_dim}``, ``{experts}``,
  ``{top_k}``, ``{shared_experts}``, ``{moe_ffn}``, ``{dense_layers}``,
  ``{values_per_token_layer}``, ``{kv_per_token}``, ``{kv_per_token_bytes}``, ``{total_params}``,
  ``{active_params}``, ``{max_positions}``, ``{embedding_params}``, ``{unembedding_params}``, ``{attention_params}``,
  ``{dense_mlp_params}``, ``{routed_expert_params}``, ``{active_expert_params}``,
  ``{shared_expert_params}``, ``{weights}`` (at ``weight_dtype``), ``{weights_at_dtype}``; with
  ``seq_len`` also ``{tokens_cached}``, ``{kv_per_seq}`` and ``{context_note}`` (empty, or a
  sentence, starting with a space, saying that ``seq_len`` exceeds the config's
  ``max_position_embeddings``); with ``gpu`` also ``{budget}``;
- with a ``gpu``: ``{gpu}`` (title), ``{gpu_source}``, ``{gpu_memory}``, ``{gpu_memory_bytes}``,
  ``{gpu_bandwidth}``, ``{gpu_flops}``.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from inferview.content.models import NumericQuestion
from inferview.practice.numeric import Factor
from inferview.practice.units import format_bytes, format_count, format_value
from inferview.reference import estimators as est
from inferview.reference.formulas import QUANTITIES, Quantity
from inferview.reference.presets import MODELS, get_gpu, get_model

MAX_ATTEMPTS = 64
"""Parameter draws tried before giving up on a model (a draw may give no answer, e.g. 0 fits)."""


class DrillError(ValueError):
    """A template that cannot be rendered (unknown quantity, model or placeholder)."""


@dataclass(frozen=True)
class RenderedDrill:
    """One concrete numeric question."""

    question_id: str
    """The template's id."""
    prompt: str
    """The filled-in prompt (Markdown)."""
    value: float
    """The exact answer, in ``unit``."""
    unit: str
    """Unit of ``value``."""
    tolerance: float
    """Relative tolerance accepted."""
    answer: str
    """The filled-in model answer, ``{value}`` written in a friendly unit."""
    params: dict[str, Any]
    """The chosen parameters (``model`` is a preset name)."""
    formula: str
    """The formula of the quantity."""
    source: str
    """The question's source plus the model and GPU presets' sources."""
    factors: list[Factor] = field(default_factory=list)
    """Model-specific slips the numeric grader recognises."""

    @property
    def value_text(self) -> str:
        """``value`` in a friendly unit."""
        return format_value(self.value, self.unit)


class _Fields(dict):
    def __missing__(self, key: str) -> str:
        raise DrillError(f"unknown placeholder {{{key}}}")


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _bytes_each(bits: int) -> str:
    n = bits / 8
    return f"{n:g} byte" if n == 1 else f"{n:g} bytes"


def _precision_slips(dtype: str, unit: str, units: str) -> list[tuple[float, str]]:
    """The slips of counting ``units`` instead of bytes, or bf16's 2 bytes instead of ``dtype``'s."""
    bits = est.dtype_bits(dtype)
    slips = []
    if bits != 8:
        slips.append((8 / bits, f"counted {units}, not bytes: {dtype} takes {_bytes_each(bits)} per {unit}"))
    if bits < 16:
        slips.append((16 / bits, f"used bf16's 2 bytes per {unit} instead of {dtype}'s {_bytes_each(bits)}"))
    return slips


def _tokens_cached(config: Mapping[str, Any], seq_len: int) -> int:
    """Tokens cached summed over layers divided by layers, as an integer when uniform."""
    kinds = est.layer_kinds(config)
    window = config.get("sliding_window")
    per_layer = [min(seq_len, window) if k == "sliding_attention" else seq_len for k in kinds]
    return per_layer[0] if len(set(per_layer)) == 1 else sum(per_layer)


def placeholders(question: NumericQuestion, params: Mapping[str, Any]) -> dict[str, str]:
    """Every placeholder a template may use for these parameters, already formatted."""
    q = QUANTITIES[question.quantity]
    full = {**q.defaults, **params}
    fields: dict[str, str] = {k: _fmt(v) for k, v in full.items()}
    dtype = str(full.get("dtype", "bf16"))
    bits = est.dtype_bits(dtype)
    fields["bits"] = str(bits)
    fields["bytes_per_value"] = _fmt(bits / 8)
    wdtype = str(full.get("weight_dtype", "bf16"))
    fields["weight_bits"] = str(est.dtype_bits(wdtype))
    fields["weight_bytes_per_param"] = _fmt(est.dtype_bits(wdtype) / 8)
    fields["bytes_each"] = _bytes_each(bits)
    fields["weight_bytes_each"] = _bytes_each(est.dtype_bits(wdtype))

    if "model" in full:
        preset = get_model(str(full["model"]))
        c = preset.config
        pc = est.param_counts(c)
        heads = int(c["num_attention_heads"])
        kvh = est.num_kv_heads(c)
        fields.update(
            model=preset.title, model_source=preset.source,
            layers=_fmt(int(c["num_hidden_layers"])), heads=_fmt(heads), kv_heads=_fmt(kvh),
            gqa_ratio=_fmt(heads // kvh if heads % kvh == 0 else heads / kvh),
            head_dim=_fmt(est.head_dim(c)), hidden=_fmt(int(c["hidden_size"])),
            vocab=_fmt(int(c["vocab_size"])), ffn=_fmt(int(c["intermediate_size"])),
            window=_fmt(c.get("sliding_window")) if c.get("sliding_window") else "none",
            values_per_token_layer=_fmt(est.kv_values_per_token(c)),
            kv_per_token=format_value(est.kv_bytes_per_token(c, dtype), "bytes/token"),
            kv_per_token_bytes=_fmt(est.kv_bytes_per_token(c, dtype)),
            total_params=format_count(pc.total, "params"),
            embedding_params=format_count(pc.embedding, "params"),
            unembedding_params=format_count(pc.unembedding, "params"),
            attention_params=format_count(pc.attention, "params"),
            dense_mlp_params=format_count(pc.dense_mlp, "params"),
            routed_expert_params=format_count(pc.routed_experts, "params"),
            active_expert_params=format_count(pc.routed_experts_active, "params"),
            shared_expert_params=format_count(pc.shared_experts, "params"),
            active_params=format_count(pc.active(include_embedding=False), "params"),
            weights=format_bytes(est.weight_bytes(c, wdtype)),
            weights_at_dtype=format_bytes(est.weight_bytes(c, dtype)),
            experts=_fmt(int(c.get("n_routed_experts") or c.get("num_local_experts")
                             or c.get("num_experts") or 0)),
            top_k=_fmt(int(c.get("num_experts_per_tok") or 0)),
            shared_experts=_fmt(int(c.get("n_shared_experts") or 0)),
            moe_ffn=_fmt(int(c.get("moe_intermediate_size") or c["intermediate_size"])),
            dense_layers=_fmt(int(c.get("first_k_dense_replace") or 0)),
            kv_lora_rank=_fmt(int(c.get("kv_lora_rank") or 0)),
            rope_dim=_fmt(int(c.get("qk_rope_head_dim") or 0)),
            attention_kinds=", ".join(sorted({k.replace("_attention", "")
                                              for k in est.layer_kinds(c)})),
        )
        max_pos = c.get("max_position_embeddings")
        fields["max_positions"] = _fmt(max_pos) if max_pos else "unknown"
        if "seq_len" in full:
            s = int(full["seq_len"])
            fields["context_note"] = (
                f" ({preset.title}'s config.json sets max_position_embeddings to {max_pos:,}; "
                f"count the cache for the length asked.)"
                if isinstance(max_pos, int) and s > max_pos else "")
            fields["tokens_cached"] = _fmt(_tokens_cached(c, s))
            fields["kv_per_seq"] = format_bytes(est.kv_cache_bytes(c, s, 1, dtype))
        if "gpu" in full:
            fields["budget"] = format_bytes(get_gpu(str(full["gpu"])).memory_bytes
                                            - est.weight_bytes(c, wdtype))
    if "gpu" in full:
        g = get_gpu(str(full["gpu"]))
        fields.update(
            gpu=g.title, gpu_source=g.source,
            gpu_memory=f"{g.memory_bytes / 2**30:g} GiB",
            gpu_memory_bytes=_fmt(g.memory_bytes),
            gpu_bandwidth=f"{g.bandwidth_bytes_per_s / 1e12:g} TB/s",
            gpu_flops=f"{g.bf16_flops / 1e12:g} TFLOP/s",
        )
    # a drill's own parameter wins over a model field of the same name ({window} of a streaming
    # cache is the drill's, not the model's sliding window); model and gpu render as their titles
    fields.update({k: _fmt(v) for k, v in params.items() if k not in ("model", "gpu")})
    fields["formula"] = q.formula
    return fields


def _slip(multiplier: float, why: str) -> Factor:
    """A slip that multiplies the right answer by ``multiplier``, as a one-way ``Factor``."""
    if multiplier >= 1:
        return (multiplier, why, "too large")
    return (1 / multiplier, why, "too small")


def factors_for(question: NumericQuestion, params: Mapping[str, Any]) -> list[Factor]:
    """The model-specific slips worth recognising for this drill (see ``numeric.diagnose``), each
    one-way: forgetting the factor 2 for K and V can only make a cache too small, and a batch that
    fits too large."""
    q = QUANTITIES[question.quantity]
    full = {**q.defaults, **params}
    if "model" not in full:
        if question.quantity == "spec_expected_tokens":
            return [_slip(float(int(full["gamma"]) + 1) / q.compute(None, full),
                          "gamma + 1 assumes every drafted token is accepted")]
        return []
    c = get_model(str(full["model"])).config
    name = question.quantity
    # (multiplier on the right answer, why); for the cache-size quantities the multiplier is on
    # the cache, and inverted below for the batch and context that fit
    slips: list[tuple[float, str]] = []
    if name in ("kv_cache_bytes", "kv_bytes_per_token", "max_batch_size", "max_context_tokens"):
        heads, kvh = int(c["num_attention_heads"]), est.num_kv_heads(c)
        if "seq_len" in full and c.get("sliding_window"):
            s = int(full["seq_len"])
            exact = est.kv_cache_bytes(c, s)
            full_cache = est.kv_cache_bytes({**c, "sliding_window": None}, s)
            if exact and full_cache != exact:
                slips.append((full_cache / exact, "ignored the sliding window: a sliding layer "
                              "caches only the last `window` tokens"))
        if est.is_mla(c):
            naive = 2 * heads * int(c.get("qk_nope_head_dim") or est.head_dim(c))
            slips.append((naive / est.kv_values_per_token(c),
                          "treated MLA like MHA: MLA caches one latent of kv_lora_rank + "
                          "qk_rope_head_dim values per token and layer, not keys and values per head"))
        elif heads != kvh:
            slips.append((heads / kvh,
                          f"used num_attention_heads ({heads}) instead of num_key_value_heads "
                          f"({kvh}): with GQA every {heads // kvh} query heads share one KV head"))
        slips.append((1 / float(c["num_hidden_layers"]), "counted one layer instead of all of them"))
        slips.append((0.5, "forgot the factor 2 for keys and values"))
        slips += _precision_slips(str(full.get("dtype", "bf16")), "value", "values")
        if int(full.get("batch", 1)) > 1:
            slips.append((1 / float(full["batch"]), "forgot the batch size"))
        if name in ("max_batch_size", "max_context_tokens"):
            slips = [(1 / m, why) for m, why in slips]
    if name == "decode_step_seconds":
        pc = est.param_counts(c)
        slips.append((pc.total / pc.matmul, "counted the input-embedding table, which is only "
                      "looked up, not read whole"))
        slips += _precision_slips(str(full.get("weight_dtype", "bf16")), "parameter", "parameters")
    if name in ("moe_active_params", "moe_total_params", "weight_bytes", "total_params"):
        pc = est.param_counts(c)
        act = pc.active(include_embedding=False)
        if pc.routed_experts:
            mixed = "mixed up total and active parameters: every expert is stored, only top_k " \
                    "of them run per token"
            if name == "moe_active_params":
                slips.append((pc.total / act, mixed))
                slips.append((pc.active(True) / act,
                              "counted the input-embedding table, a lookup that does no arithmetic"))
            else:
                slips.append((act / pc.total, mixed))
        if name == "weight_bytes":
            dtype = str(full.get("dtype", "bf16"))
            bits = est.dtype_bits(dtype)
            if bits != 8:
                slips.append((8 / bits, f"gave parameters, not bytes: {dtype} takes "
                              f"{_bytes_each(bits)} per parameter"))
            if bits < 16:
                slips.append((16 / bits, f"used bf16's 2 bytes per parameter instead of {dtype}'s "
                              f"{_bytes_each(bits)}"))
    if name == "decode_arithmetic_intensity" and int(full.get("batch", 1)) > 1:
        slips.append((1 / float(full["batch"]), "ignored the batch: weights are read once per "
                      "step and shared by every sequence in it"))
    return [_slip(m, why) for m, why in slips]


def _choose(question: NumericQuestion, rng: random.Random,
            fixed: Mapping[str, Any]) -> dict[str, Any]:
    return {k: fixed[k] if k in fixed else rng.choice(list(v)) for k, v in question.params.items()}


def _render_with(question: NumericQuestion, q: Quantity, params: dict[str, Any]) -> RenderedDrill:
    config = get_model(str(params["model"])).config if "model" in params else None
    if q.needs_model and config is None:
        raise DrillError(f"{question.id}: quantity {q.name!r} needs a 'model' parameter")
    value = q.compute(config, params)
    fields = _Fields(placeholders(question, params))
    fields["value"] = format_value(value, question.unit)
    try:
        prompt = question.prompt.format_map(fields)
        answer = question.answer.format_map(fields)
    except (IndexError, ValueError) as exc:
        raise DrillError(f"{question.id}: bad template: {exc}") from exc
    source = question.source
    if "model" in params:
        source += f"; model: {get_model(str(params['model'])).source}"
    if "gpu" in params:
        source += f"; GPU: {get_gpu(str(params['gpu'])).source}"
    return RenderedDrill(question.id, prompt, value, question.unit, question.tolerance, answer,
                         dict(params), q.formula, source, factors_for(question, params))


def render(question: NumericQuestion, seed: int = 0, **fixed: Any) -> RenderedDrill:
    """Render ``question`` with parameters drawn deterministically from ``seed`` (``fixed`` pins
    some, e.g. ``model="llama-3-70b"``). Draws whose answer is 0 or undefined are skipped."""
    if question.quantity not in QUANTITIES:
        raise DrillError(f"{question.id}: unknown quantity {question.quantity!r}")
    q = QUANTITIES[question.quantity]
    if q.unit != question.unit:
        raise DrillError(f"{question.id}: quantity {q.name!r} is in {q.unit}, not {question.unit}")
    for m in question.params.get("model", []):
        if str(m) not in MODELS:
            raise DrillError(f"{question.id}: unknown model preset {m!r}")
    rng = random.Random(f"{question.id}:{seed}")
    last: Exception | None = None
    for _ in range(MAX_ATTEMPTS):
        params = _choose(question, rng, fixed)
        try:
            drill = _render_with(question, q, params)
        except DrillError:
            raise
        except (ValueError, KeyError, ZeroDivisionError) as exc:
            last = exc
            continue
        if drill.value != 0:
            return drill
        last = ValueError("the answer is 0 for this choice")
    raise DrillError(f"{question.id}: no renderable choice of parameters ({fixed or 'any'}): {last}")


def combinations(question: NumericQuestion) -> Iterator[dict[str, Any]]:
    """Every combination of the question's parameter values (for content tests)."""
    keys = list(question.params)
    for values in itertools.product(*(question.params[k] for k in keys)):
        yield dict(zip(keys, values, strict=True))


def template_problems(question: NumericQuestion) -> list[str]:
    """Everything wrong with a numeric template, as messages naming the field (for ``lint``):
    unknown quantity or preset, a unit that differs from the quantity's, a missing required
    parameter, a model that renders to no answer, an unknown placeholder."""
    problems: list[str] = []
    q = QUANTITIES.get(question.quantity)
    if q is None:
        return [f"quantity: unknown {question.quantity!r}; known: {', '.join(QUANTITIES)}"]
    if q.unit != question.unit:
        problems.append(f"unit: quantity {q.name!r} is in {q.unit!r}, not {question.unit!r}")
    for name in q.required:
        if name not in question.params:
            problems.append(f"params: quantity {q.name!r} needs {name!r}")
    if q.needs_model and "model" not in question.params:
        problems.append(f"params: quantity {q.name!r} needs 'model' (a list of preset names)")
    for k, values in question.params.items():
        if not values:
            problems.append(f"params.{k}: empty list")
    for m in question.params.get("model", []):
        if str(m) not in MODELS:
            problems.append(f"params.model: unknown preset {m!r}; known: {', '.join(MODELS)}")
    if problems:
        return problems
    models = [str(m) for m in question.params.get("model", [])] or [None]
    for m in models:
        try:
            render(question, **({"model": m} if m else {}))
        except DrillError as exc:
            problems.append(f"prompt/answer: {exc}")
            break
    return problems

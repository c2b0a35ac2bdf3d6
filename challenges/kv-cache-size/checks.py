"""Checks for the kv-cache-size challenge: exact KV-cache bytes and the largest batch that fits.

Ground truth: ``inferview.reference.estimators`` (``kv_cache_bytes``, ``max_batch_size``), which
follows CHALLENGES.md; real configurations come from ``inferview.reference.presets``. Configs are
drawn by ``model_configs()`` over MHA, GQA, MQA, explicit and default ``head_dim``, sliding windows
with and without ``layer_types``, MLA, and every dtype.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import example, given, note
from hypothesis import strategies as st
from inferview.graders.api import CheckFailed, Ctx, check, expect
from inferview.reference import estimators as est
from inferview.reference.presets import MODELS

DTYPES = ["fp32", "fp16", "bf16", "fp8", "int8", "int4"]


def preset(name: str) -> dict[str, Any]:
    """A real model's config (a copy)."""
    return MODELS[name].config_copy()


def _describe(cfg: dict[str, Any]) -> str:
    keys = ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "hidden_size",
            "head_dim", "sliding_window", "layer_types", "kv_lora_rank", "qk_rope_head_dim")
    shown = {k: cfg[k] for k in keys if k in cfg}
    if "layer_types" in shown:
        shown["layer_types"] = ["S" if t == "sliding_attention" else "F" for t in shown["layer_types"]]
        shown["layer_types"] = "".join(shown["layer_types"]) + "  (S=sliding, F=full)"
    return ", ".join(f"{k}={v}" for k, v in shown.items())


@st.composite
def model_configs(
    draw: st.DrawFn,
    *,
    attention: tuple[str, ...] = ("mha", "gqa", "mqa"),
    sliding: tuple[str, ...] = ("none",),
    defaults: bool = False,
    max_layers: int = 6,
    max_window: int = 48,
    odd_mla: bool = False,
) -> dict[str, Any]:
    """A valid config.json-style dict.

    ``attention``: any of ``mha gqa mqa mla``. ``sliding``: any of ``none`` (no window), ``null``
    (``sliding_window: null``), ``all`` (a window, no ``layer_types``), ``mixed`` (a window and a
    random ``layer_types``). ``defaults``: omit ``num_key_value_heads``/``head_dim`` at times.
    ``odd_mla``: MLA with an odd ``kv_lora_rank + qk_rope_head_dim``.
    """
    layers = draw(st.integers(1, max_layers))
    kind = draw(st.sampled_from(attention))
    heads = draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64]))
    if kind == "mqa":
        kv = 1
    elif kind == "gqa":
        kv = draw(st.sampled_from([d for d in (1, 2, 4, 8, 16, 32) if d < heads and heads % d == 0]
                                  or [1]))
    else:
        kv = heads
    head_dim = draw(st.sampled_from([8, 16, 64, 128]))
    cfg: dict[str, Any] = {"num_hidden_layers": layers, "num_attention_heads": heads,
                           "hidden_size": heads * head_dim}
    if kind == "mla":
        cfg["num_key_value_heads"] = heads
        cfg["head_dim"] = head_dim
        rank = draw(st.integers(1, 96))
        rope = draw(st.integers(0, 32))
        if odd_mla and (rank + rope) % 2 == 0:
            rank += 1
        cfg["kv_lora_rank"] = rank
        cfg["qk_rope_head_dim"] = rope
        cfg["qk_nope_head_dim"] = head_dim
        if odd_mla and layers % 2 == 0:
            cfg["num_hidden_layers"] = layers - 1  # an odd total needs an odd layer count too
    else:
        omit_kv = defaults and kind == "mha" and draw(st.booleans())
        if not omit_kv:
            cfg["num_key_value_heads"] = kv
        if defaults and draw(st.booleans()):
            pass  # head_dim from hidden_size // num_attention_heads
        elif draw(st.booleans()):
            # an explicit head_dim that differs from hidden_size // heads (as in gpt-oss)
            cfg["head_dim"] = head_dim
            cfg["hidden_size"] = heads * head_dim + draw(st.integers(1, head_dim - 1))
        else:
            cfg["head_dim"] = head_dim
    mode = draw(st.sampled_from(sliding))
    if mode == "null":
        cfg["sliding_window"] = None
    elif mode in ("all", "mixed"):
        cfg["sliding_window"] = draw(st.integers(1, max_window))
        if mode == "mixed":
            cfg["layer_types"] = draw(st.lists(
                st.sampled_from(["full_attention", "sliding_attention"]),
                min_size=layers, max_size=layers))
    return cfg


def _call_bytes(ctx: Ctx, cfg: dict[str, Any], seq_len: int, batch: int, dtype: str) -> int:
    got = ctx.sub.call("kv_cache_bytes", cfg, seq_len, batch, dtype)
    expect(isinstance(got, int) and not isinstance(got, bool),
           f"kv_cache_bytes must return an int (an exact byte count), got {type(got).__name__} {got!r}")
    return got


def _expect_bytes(ctx: Ctx, cfg: dict[str, Any], seq_len: int, batch: int, dtype: str) -> None:
    note(f"config: {_describe(cfg)}")
    note(f"kv_cache_bytes(config, seq_len={seq_len}, batch_size={batch}, dtype={dtype!r})")
    got = _call_bytes(ctx, cfg, seq_len, batch, dtype)
    want = est.kv_cache_bytes(cfg, seq_len, batch, dtype)
    if got != want:
        ratio = f" ({got / want:.4g}x the right value)" if want else ""
        raise CheckFailed(f"kv_cache_bytes returned {got:,}, expected {want:,}{ratio}")


@check("keys and values for every layer, KV head and token (MHA, GQA, MQA)",
       hint="Per token and layer: 2 (a key AND a value) x num_key_value_heads x head_dim values. "
            "Query heads do not matter: with GQA several query heads share one KV head.")
@given(cfg=model_configs(), seq_len=st.integers(1, 300), batch=st.integers(1, 8))
@example(cfg=preset("llama-3-70b"), seq_len=131072, batch=1)
@example(cfg=preset("llama-2-7b"), seq_len=4096, batch=2)
def gqa_bytes(ctx: Ctx, cfg: dict[str, Any], seq_len: int, batch: int) -> None:
    _expect_bytes(ctx, cfg, seq_len, batch, "bf16")
    # the signature's defaults are part of the interface: batch_size=1, dtype="bf16"
    got = ctx.sub.call("kv_cache_bytes", cfg, seq_len)
    want = est.kv_cache_bytes(cfg, seq_len, 1, "bf16")
    if got != want:
        raise CheckFailed(f"kv_cache_bytes(config, seq_len={seq_len}) with the default batch_size and dtype "
                          f"returned {got!r}, expected {want:,} (batch_size=1, dtype='bf16')")


@check("defaults: num_key_value_heads = num_attention_heads, head_dim = hidden_size // heads",
       hint="Use config.get(...) with those fallbacks; an explicit head_dim wins even when it "
            "differs from hidden_size // num_attention_heads.")
@given(cfg=model_configs(attention=("mha", "gqa"), defaults=True), seq_len=st.integers(1, 64))
@example(cfg={"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64}, seq_len=3)
@example(cfg={"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64, "sliding_window": None,
              "kv_lora_rank": None, "qk_rope_head_dim": None}, seq_len=3)  # null MLA keys: not MLA
def defaults(ctx: Ctx, cfg: dict[str, Any], seq_len: int) -> None:
    _expect_bytes(ctx, cfg, seq_len, 1, "fp16")


@check("bits per value for every dtype",
       hint="fp32 32 bits, fp16 and bf16 16, fp8 and int8 8, int4 4: count bits and divide by 8 "
            "at the end. int4 is half a byte per value, not one byte.")
@given(cfg=model_configs(), seq_len=st.integers(1, 200), batch=st.integers(1, 5),
       dtype=st.sampled_from(DTYPES))
@example(cfg=preset("llama-3-8b"), seq_len=8192, batch=1, dtype="int4")
def dtypes(ctx: Ctx, cfg: dict[str, Any], seq_len: int, batch: int, dtype: str) -> None:
    _expect_bytes(ctx, cfg, seq_len, batch, dtype)


@check("sliding layers cache only the last sliding_window tokens",
       hint="A sliding layer caches min(seq_len, sliding_window) tokens. Without layer_types every "
            "layer slides when sliding_window is set; with layer_types only the "
            "'sliding_attention' layers do; sliding_window null means no layer slides.")
@given(cfg=model_configs(sliding=("all", "mixed", "null")), seq_len=st.integers(1, 120),
       batch=st.integers(1, 4))
@example(cfg=preset("mistral-7b"), seq_len=32768, batch=1)
@example(cfg=preset("gpt-oss-120b"), seq_len=131072, batch=1)
@example(cfg={"num_hidden_layers": 2, "num_attention_heads": 1, "hidden_size": 8,
              "sliding_window": 4, "layer_types": ["full_attention", "full_attention"]},
         seq_len=10, batch=1)
def sliding(ctx: Ctx, cfg: dict[str, Any], seq_len: int, batch: int) -> None:
    _expect_bytes(ctx, cfg, seq_len, batch, "bf16")


@check("latent attention (MLA) caches kv_lora_rank + qk_rope_head_dim values per token and layer",
       hint="With kv_lora_rank set, a layer caches one latent of kv_lora_rank values plus the "
            "qk_rope_head_dim RoPE key per token, shared by every head: no factor 2 and no "
            "num_key_value_heads x head_dim.")
@given(cfg=model_configs(attention=("mla",)), seq_len=st.integers(1, 200), batch=st.integers(1, 4),
       dtype=st.sampled_from(["fp32", "bf16", "fp8"]))
@example(cfg=preset("deepseek-v3"), seq_len=131072, batch=1, dtype="bf16")
def mla(ctx: Ctx, cfg: dict[str, Any], seq_len: int, batch: int, dtype: str) -> None:
    _expect_bytes(ctx, cfg, seq_len, batch, dtype)


@check("int4 rounds the total up to a whole byte",
       hint="An odd number of 4-bit values needs one more byte: ceil(bits / 8) = (bits + 7) // 8, "
            "taken once for the whole cache.")
@given(cfg=model_configs(attention=("mla",), odd_mla=True), seq_len=st.integers(1, 9).map(lambda n: 2 * n - 1),
       batch=st.sampled_from([1, 3, 5]))
@example(cfg={"num_hidden_layers": 1, "num_attention_heads": 1, "hidden_size": 8,
              "kv_lora_rank": 3, "qk_rope_head_dim": 0}, seq_len=1, batch=1)
def int4_rounding(ctx: Ctx, cfg: dict[str, Any], seq_len: int, batch: int) -> None:
    _expect_bytes(ctx, cfg, seq_len, batch, "int4")


@st.composite
def budgets(draw: st.DrawFn, *, exact: bool = False) -> dict[str, Any]:
    """A config, a sequence length, a dtype and GPU/weight sizes around the fitting boundary."""
    cfg = draw(model_configs(attention=("mha", "gqa", "mqa", "mla"), sliding=("none", "all", "mixed")))
    seq_len = draw(st.integers(1, 200))
    dtype = draw(st.sampled_from(DTYPES))
    per_seq_bits = est.kv_cache_values(cfg, seq_len, 1) * est.dtype_bits(dtype)
    k = draw(st.integers(0, 40))
    if exact:
        # k' sequences fill the budget to the bit, with k' * bits a whole number of bytes; or one
        # byte less, where only k' - 1 fit
        per_byte_boundary = 8 // math.gcd(per_seq_bits, 8)
        fit = max(1, k) * per_byte_boundary
        budget = fit * per_seq_bits // 8 - draw(st.sampled_from([0, 1]))
    else:
        slack = per_seq_bits // 8 + 1
        budget = (k * per_seq_bits) // 8 + draw(st.integers(-slack, slack))
    weight = draw(st.integers(0, 2**34))
    return {"cfg": cfg, "seq_len": seq_len, "dtype": dtype, "gpu_bytes": weight + budget,
            "weight_bytes": weight}


def _expect_batch(ctx: Ctx, case: dict[str, Any]) -> None:
    cfg = case["cfg"]
    note(f"config: {_describe(cfg)}")
    note(f"max_batch_size(config, seq_len={case['seq_len']}, gpu_bytes={case['gpu_bytes']}, "
         f"weight_bytes={case['weight_bytes']}, dtype={case['dtype']!r}); budget = "
         f"{case['gpu_bytes'] - case['weight_bytes']:,} bytes, one sequence = "
         f"{est.kv_cache_bytes(cfg, case['seq_len'], 1, case['dtype']):,} bytes")
    got = ctx.sub.call("max_batch_size", cfg, case["seq_len"], case["gpu_bytes"],
                       case["weight_bytes"], case["dtype"])
    expect(isinstance(got, int) and not isinstance(got, bool),
           f"max_batch_size must return an int, got {type(got).__name__} {got!r}")
    want = est.max_batch_size(cfg, case["seq_len"], case["gpu_bytes"], case["weight_bytes"],
                              case["dtype"])
    if got != want:
        raise CheckFailed(f"max_batch_size returned {got}, expected {want}")


@check("max_batch_size: the largest batch whose cache fits in gpu_bytes - weight_bytes",
       hint="budget = gpu_bytes - weight_bytes; 0 when it is negative. The answer is the largest B "
            "with kv_cache_bytes(config, seq_len, B, dtype) <= budget.")
@given(case=budgets())
@example(case={"cfg": preset("llama-3-8b"), "seq_len": 8192, "dtype": "bf16",
               "gpu_bytes": 80 * 2**30, "weight_bytes": 16_060_522_496})
@example(case={"cfg": preset("llama-3-70b"), "seq_len": 8192, "dtype": "bf16",
               "gpu_bytes": 80 * 2**30, "weight_bytes": 141_107_412_992})
@example(case={"cfg": preset("llama-3-8b"), "seq_len": 512, "dtype": "bf16",
               "gpu_bytes": 80 * 2**30, "weight_bytes": 16_060_522_496})  # 1040: past a scan capped at 1024
@example(case={"cfg": {"num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 1,
                       "hidden_size": 512}, "seq_len": 16, "dtype": "int4",
               "gpu_bytes": 2**34 + 2048 * 100_000 + 2047, "weight_bytes": 2**34})  # 100,000 sequences
@example(case={"cfg": preset("llama-3-8b"), "seq_len": 8192, "dtype": "bf16",
               "gpu_bytes": 16 * 10**9, "weight_bytes": 16_060_522_496})  # the weights alone do not fit
def batch_fits(ctx: Ctx, case: dict[str, Any]) -> None:
    _expect_batch(ctx, case)
    if case["dtype"] == "bf16":  # and once with the default dtype
        got = ctx.sub.call("max_batch_size", case["cfg"], case["seq_len"], case["gpu_bytes"], case["weight_bytes"])
        want = est.max_batch_size(case["cfg"], case["seq_len"], case["gpu_bytes"], case["weight_bytes"], "bf16")
        if got != want:
            raise CheckFailed(f"max_batch_size without a dtype returned {got!r}, expected {want} (dtype='bf16')")


@check("max_batch_size: a cache that fits exactly fits",
       hint="Compare with <=, not <: when the budget equals B sequences' cache exactly, B fit. "
            "Compare in bits so int4's rounding cannot push you off by one.")
@given(case=budgets(exact=True))
@example(case={"cfg": {"num_hidden_layers": 1, "num_attention_heads": 1, "hidden_size": 4},
               "seq_len": 1, "dtype": "bf16", "gpu_bytes": 16 * 3, "weight_bytes": 0})
@example(case={"cfg": {"num_hidden_layers": 1, "num_attention_heads": 1, "hidden_size": 8,
                       "kv_lora_rank": 3, "qk_rope_head_dim": 0},
               "seq_len": 1, "dtype": "int4", "gpu_bytes": 3, "weight_bytes": 0})
def batch_exact_fit(ctx: Ctx, case: dict[str, Any]) -> None:
    _expect_batch(ctx, case)

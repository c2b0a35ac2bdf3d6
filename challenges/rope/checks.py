"""Checks for ``rope``: the inverse frequencies of every ``rope_scaling`` type, and the rotation.

Ground truth: :mod:`inferview.reference.rope` (float64; the rules of Hugging Face transformers 4.57
``modeling_rope_utils``, restated in the statement), with model configs from
:mod:`inferview.reference.presets` (their ``config.json`` files).

Tolerances.

- ``inv_freq``: relative ``2e-5``. transformers itself computes ``base ** (2i / d)`` in float32:
  rounding the exponent (relative ``6e-8``) moves the power by ``ln(base^(2i/d)) * 6e-8``, at most
  ``ln(1e8) * 6e-8 = 1.1e-6`` for the largest bases here, plus a few ulps for the blends; 2e-5 is
  twenty times that, while every wrong rule moves some frequency by a percent or more.
- The attention factor: relative ``1e-6`` (float32 arithmetic on it is exact to ``1e-7``).
- ``apply_rope``, element by element against float64: ``af * (|a| + |b|) * (4 eps + 2 eps32 |theta|)
  + tiny``, ``(a, b)`` the element's pair, ``eps`` the output dtype's machine epsilon, ``theta`` the
  pair's angle. The first term covers rounding cos and sin to the output dtype, two products, a sum
  and the final rounding (at most ``2.5 eps`` together, as transformers does it in bfloat16); the
  second covers computing ``theta = position * inv_freq`` in float32 (one rounding, ``eps32 / 2 *
  |theta|``, which a derivative of at most 1 passes on to cos and sin) four times over. A solution
  that computes the angle in float16 or bfloat16, a wrong sign or a wrong pair is off by orders of
  magnitude more. Dimensions past the rotary ones must come back bit for bit.

Margins. YaRN with ``truncate`` rounds its correction dimensions with floor and ceil; drawn configs
whose correction dimensions lie within ``1e-3`` of an integer (where float32 and float64 may round
differently) are moved by nudging ``beta_fast``. Llama 3's bands meet continuously, so no margin
is needed there.

Every check is exact or deterministic: none fails a correct solution by chance.
"""

from __future__ import annotations

import torch
from hypothesis import example, given, note
from hypothesis import strategies as st
from inferview.graders import strategies as gs
from inferview.graders.api import CheckFailed, Ctx, check, expect, expect_close, expect_raises
from inferview.reference import rope as ref
from inferview.reference.presets import MODELS

FREQ_RTOL = 2e-5
FACTOR_RTOL = 1e-6
EPS32 = torch.finfo(torch.float32).eps


def _preset(name: str, **extra) -> dict:
    cfg = {k: v for k, v in MODELS[name].config.items()
           if k in ("hidden_size", "num_attention_heads", "head_dim", "rope_theta",
                    "max_position_embeddings", "rope_scaling", "partial_rotary_factor")}
    cfg.update(extra)
    return cfg


PRESETS = {
    "llama-3.1-405b": _preset("llama-3.1-405b"),
    "gpt-oss-120b": _preset("gpt-oss-120b"),
    # transformers' DeepseekV3Config sets head_dim = qk_rope_head_dim (64): only those dims rotate
    "deepseek-v3": _preset("deepseek-v3", head_dim=64),
    "llama-3-8b": _preset("llama-3-8b"),
}


# ----------------------------------------------------------------------------------------------
# Configs
# ----------------------------------------------------------------------------------------------


@st.composite
def base_configs(draw: st.DrawFn) -> dict:
    """A head size (as ``head_dim`` or as ``hidden_size // num_attention_heads``), a base, an
    optional partial rotary factor and ``max_position_embeddings``."""
    head = draw(st.sampled_from([16, 32, 64, 128, 80]))
    heads = draw(st.sampled_from([4, 8]))
    cfg: dict = {"hidden_size": head * heads, "num_attention_heads": heads,
                 "rope_theta": draw(st.sampled_from([10000.0, 500000.0, 1000000.0, 150000.0])),
                 "max_position_embeddings": draw(st.sampled_from([2048, 4096, 8192, 32768]))}
    if draw(st.booleans()):  # an explicit head_dim that differs from hidden_size // heads
        cfg["head_dim"] = head
        cfg["hidden_size"] = head * heads * 2
    factor = draw(st.sampled_from([None, 0.5, 0.25]) if head != 80 else st.sampled_from([0.4, 0.5]))
    if factor is not None:
        cfg["partial_rotary_factor"] = factor
    return cfg


def _yarn_safe(cfg: dict) -> dict:
    """Nudge ``beta_fast`` until truncated correction dimensions are ``>= 1e-3`` from an integer."""
    s = cfg["rope_scaling"]
    if not s.get("truncate", True):
        return cfg
    for _ in range(20):
        lo, hi = ref.yarn_correction_dims(cfg)
        if min(abs(lo - round(lo)), abs(hi - round(hi))) >= 1e-3:
            return cfg
        s["beta_fast"] = (s.get("beta_fast") or 32) * 1.013
    return cfg


def _frequencies(ctx: Ctx, cfg: dict, seq_len: int | None = None) -> tuple[torch.Tensor, float]:
    ctx.note(f"config = {cfg}" + (f", seq_len = {seq_len}" if seq_len is not None else ""))
    got = ctx.sub.call("rope_frequencies", cfg, seq_len)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailed(f"rope_frequencies must return (inv_freq, attention_factor), got {type(got).__name__}")
    inv, af = got
    if not isinstance(inv, torch.Tensor):
        raise CheckFailed(f"inv_freq: expected a tensor, got {type(inv).__name__}")
    if isinstance(af, bool) or not isinstance(af, (int, float)):
        raise CheckFailed(f"attention_factor: expected a Python float, got {type(af).__name__}")
    return inv.cpu(), float(af)


def _expect_frequencies(ctx: Ctx, cfg: dict, seq_len: int | None = None, *,
                        factor_only: bool = False) -> None:
    inv, af = _frequencies(ctx, cfg, seq_len)
    want, want_af = ref.rope_frequencies_f64(cfg, seq_len)
    if not factor_only:
        expect_close(inv, want.float(), what="inv_freq", rtol=FREQ_RTOL, atol=0.0)
    expect_close(af, want_af, what="attention_factor", rtol=FACTOR_RTOL, atol=0.0)


# ----------------------------------------------------------------------------------------------
# rope_frequencies
# ----------------------------------------------------------------------------------------------


@check("default frequencies are rope_theta^(-2i/d) over the rotary dimension d",
       hint="d = int(head_dim * partial_rotary_factor), head_dim from the config when present, "
            "else hidden_size // num_attention_heads; inv_freq[i] = rope_theta ** (-2i / d) for "
            "i < d/2, and the attention factor is 1.0.")
@given(cfg=base_configs())
@example(cfg={"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096})
@example(cfg={**PRESETS["llama-3-8b"]})
@example(cfg={"hidden_size": 1024, "num_attention_heads": 8, "head_dim": None, "rope_theta": 1e6,
              "max_position_embeddings": 4096})
def default_frequencies(ctx: Ctx, cfg: dict) -> None:
    _expect_frequencies(ctx, cfg)


@check("linear scaling divides every frequency by factor", max_examples=10,
       hint="rope_type 'linear' (position interpolation): inv_freq = default / factor.")
@given(cfg=base_configs(), factor=st.sampled_from([2.0, 4.0, 8.0]))
def linear_frequencies(ctx: Ctx, cfg: dict, factor: float) -> None:
    _expect_frequencies(ctx, dict(cfg, rope_scaling={"rope_type": "linear", "factor": factor}))


@check("dynamic NTK raises the base only past max_position_embeddings",
       hint="L = max(seq_len, max_position_embeddings) (just max_position_embeddings when seq_len "
            "is None); base' = base * (factor * L / max_pos - (factor - 1)) ** (d / (d - 2)).")
@given(cfg=base_configs(), factor=st.sampled_from([2.0, 4.0]),
       where=st.sampled_from(["none", "below", "at", "above", "far"]))
@example(cfg={"hidden_size": 512, "num_attention_heads": 8, "rope_theta": 10000.0,
              "max_position_embeddings": 2048}, factor=2.0, where="below")
def dynamic_frequencies(ctx: Ctx, cfg: dict, factor: float, where: str) -> None:
    m = cfg["max_position_embeddings"]
    seq_len = {"none": None, "below": m // 3 + 1, "at": m, "above": m + m // 2 + 7,
               "far": 5 * m}[where]
    _expect_frequencies(ctx, dict(cfg, rope_scaling={"rope_type": "dynamic", "factor": factor}),
                        seq_len)


@st.composite
def yarn_scalings(draw: st.DrawFn) -> dict:
    """YaRN ``rope_scaling`` dicts with each optional key present or absent."""
    s: dict = {"rope_type": "yarn", "factor": draw(st.sampled_from([2.0, 4.0, 8.0, 16.0, 32.0]))}
    if draw(st.booleans()):
        # null means max_position_embeddings, as for an absent key
        s["original_max_position_embeddings"] = draw(st.sampled_from([1024, 2048, 4096, None]))
    if draw(st.booleans()):  # null means the default, as for an absent key
        s["beta_fast"] = draw(st.sampled_from([16, 24, 32.0, None]))
        s["beta_slow"] = draw(st.sampled_from([1, 2.0, None]))
    if draw(st.booleans()):
        s["truncate"] = draw(st.booleans())
    return s


@check("YaRN ramps each pair from its own frequency to the interpolated one",
       hint="c(r) = d * ln(L / (2 pi r)) / (2 ln base) with L = original_max_position_embeddings "
            "(else max_position_embeddings); low = c(beta_fast), high = c(beta_slow), floored and "
            "ceiled when truncate; ramp_i = clamp((i - low) / (high - low), 0, 1); inv_freq = "
            "f_i * (1 - ramp_i) + (f_i / factor) * ramp_i. Use factor as configured.")
@given(cfg=base_configs(), scaling=yarn_scalings())
@example(cfg=PRESETS["gpt-oss-120b"], scaling=PRESETS["gpt-oss-120b"]["rope_scaling"])
@example(cfg=PRESETS["deepseek-v3"], scaling=PRESETS["deepseek-v3"]["rope_scaling"])
# a Qwen2.5-style extension: factor 4 over original_max_position_embeddings 32768, which here equals
# max_position_embeddings (transformers before 4.56 replaced factor by their ratio, 1)
@example(cfg={"hidden_size": 3584, "num_attention_heads": 28, "rope_theta": 1000000.0,
              "max_position_embeddings": 32768},
         scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})
# a small base puts c(beta_slow) = 33.4 above d/2 - 1 = 31: the clamp is to d - 1 = 63
@example(cfg={"hidden_size": 512, "num_attention_heads": 8, "rope_theta": 500.0,
              "max_position_embeddings": 4096}, scaling={"rope_type": "yarn", "factor": 4.0})
# betas far above the defaults: c(1024) = -1.57 and c(700) = -0.25 floor and ceil to low = high = 0,
# so high becomes 0.001 (without that guard, pair 0's ramp is 0 / 0)
@example(cfg={"hidden_size": 512, "num_attention_heads": 8, "rope_theta": 10000.0,
              "max_position_embeddings": 4096},
         scaling={"rope_type": "yarn", "factor": 4.0, "beta_fast": 1024, "beta_slow": 700})
# an explicit null original_max_position_embeddings: max_position_embeddings is used
@example(cfg={"hidden_size": 1024, "num_attention_heads": 8, "rope_theta": 1000000.0,
              "max_position_embeddings": 8192},
         scaling={"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": None})
def yarn_frequencies(ctx: Ctx, cfg: dict, scaling: dict) -> None:
    _expect_frequencies(ctx, _yarn_safe(dict(cfg, rope_scaling=dict(scaling))))


@check("YaRN's attention factor: attention_factor, or mscale over mscale_all_dim, or 0.1 ln s + 1",
       max_examples=20,
       hint="attention_factor when the config gives one; else, when mscale and mscale_all_dim are "
            "both set and non-zero, m(s, mscale) / m(s, mscale_all_dim); else m(s, 1), with "
            "m(s, c) = 0.1 * c * ln(s) + 1 for s > 1 and 1 otherwise.")
@given(factor=st.sampled_from([1.0, 4.0, 40.0]),
       extra=st.sampled_from([{}, {"attention_factor": 1.25}, {"mscale": 0.707, "mscale_all_dim": 1.0},
                              {"mscale": 1.0, "mscale_all_dim": 1.0}, {"mscale": 1.0},
                              {"mscale": 0.707, "mscale_all_dim": 1.0, "attention_factor": 0.9},
                              # null and zero mean "not set": attention_factor null, an mscale of 0
                              {"attention_factor": None}, {"mscale": 0.707, "mscale_all_dim": 0},
                              {"mscale": 0, "mscale_all_dim": 1.0},
                              {"mscale": 0.707, "mscale_all_dim": 1.0, "attention_factor": None}]))
@example(factor=40.0, extra={"mscale": 0.707, "mscale_all_dim": 1.0})
@example(factor=4.0, extra={"attention_factor": 1.25})
@example(factor=4.0, extra={"attention_factor": None})
@example(factor=40.0, extra={"mscale": 0.707, "mscale_all_dim": 0})
@example(factor=40.0, extra={"mscale": 0, "mscale_all_dim": 1.0})
def yarn_attention_factor(ctx: Ctx, factor: float, extra: dict) -> None:
    cfg = {"hidden_size": 512, "num_attention_heads": 8, "rope_theta": 10000.0,
           "max_position_embeddings": 4096,
           "rope_scaling": {"rope_type": "yarn", "factor": factor, **extra}}
    _expect_frequencies(ctx, cfg, factor_only=True)


@check("Llama 3 keeps the short waves, divides the long ones and blends between",
       hint="wavelen_i = 2 pi / f_i; keep f_i when wavelen_i < L / high_freq_factor, use f_i / "
            "factor when wavelen_i > L / low_freq_factor, and between them (1 - s) f_i / factor + "
            "s f_i with s = (L / wavelen_i - low_freq_factor) / (high_freq_factor - "
            "low_freq_factor); L = original_max_position_embeddings.")
@given(cfg=base_configs(), factor=st.sampled_from([4.0, 8.0, 32.0]),
       bands=st.sampled_from([(1.0, 4.0), (1.0, 2.0), (2.0, 8.0)]),
       original=st.sampled_from([2048, 8192]))
@example(cfg=PRESETS["llama-3.1-405b"], factor=8.0, bands=(1.0, 4.0), original=8192)
def llama3_frequencies(ctx: Ctx, cfg: dict, factor: float, bands: tuple[float, float],
                       original: int) -> None:
    scaling = {"rope_type": "llama3", "factor": factor, "low_freq_factor": bands[0],
               "high_freq_factor": bands[1], "original_max_position_embeddings": original}
    _expect_frequencies(ctx, dict(cfg, rope_scaling=scaling))


@check("rope_scaling's legacy 'type' key works and an unknown type raises ValueError",
       max_examples=1,
       hint="Read rope_scaling.get('rope_type', rope_scaling.get('type')); a null or missing "
            "rope_scaling is 'default'; anything outside the five types raises ValueError.")
def type_key(ctx: Ctx) -> None:
    cfg = {"hidden_size": 512, "num_attention_heads": 8, "rope_theta": 10000.0,
           "max_position_embeddings": 4096}
    _expect_frequencies(ctx, dict(cfg, rope_scaling={"type": "linear", "factor": 4.0}))
    _expect_frequencies(ctx, dict(cfg, rope_scaling={"type": "dynamic", "factor": 2.0}), 9000)
    _expect_frequencies(ctx, dict(cfg, rope_scaling={"rope_type": "default"}))
    bad = dict(cfg, rope_scaling={"rope_type": "su", "factor": 2.0})
    with expect_raises(ctx, "ValueError", what="rope_frequencies with rope_type 'su'"):
        ctx.sub.call("rope_frequencies", bad, None)


# ----------------------------------------------------------------------------------------------
# apply_rope
# ----------------------------------------------------------------------------------------------


@st.composite
def rope_inputs(draw: st.DrawFn, *, dtypes=(torch.float32,), max_pos: int = 4096,
                partial: bool = False) -> dict:
    """Shapes, a rotary fraction, positions (a per-row offset plus a sorted random gap pattern),
    the attention factor and the layout; the tensors are built from ``seed``."""
    head = draw(st.sampled_from([8, 16, 32, 64]))
    rot = draw(st.sampled_from([head // 2, head // 4])) if partial else head
    return {"batch": draw(st.integers(1, 3)), "heads": draw(st.integers(1, 3)),
            "seq": draw(st.integers(1, 6)), "head_dim": head, "rot": max(rot, 2),
            "theta": draw(st.sampled_from([10000.0, 500000.0])),
            "max_pos": draw(st.sampled_from([16, max_pos])), "seed": draw(gs.seeds()),
            "dtype": draw(st.sampled_from(list(dtypes))),
            "non_contiguous": draw(st.booleans())}


def _build(case: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    b, h, t, d = case["batch"], case["heads"], case["seq"], case["head_dim"]
    x = gs.tensor((b, t, h, d), case["seed"]).to(case["dtype"])
    x = x.transpose(1, 2) if case["non_contiguous"] else x.transpose(1, 2).contiguous()
    g = torch.Generator().manual_seed(case["seed"] + 1)
    start = torch.randint(0, case["max_pos"], (b, 1), generator=g)
    gaps = torch.randint(1, 3, (b, t), generator=g).cumsum(-1) - 1
    positions = start + gaps  # each row its own offset; not always consecutive
    inv = ref.rope_frequencies_f64({"head_dim": case["rot"], "rope_theta": case["theta"],
                                    "hidden_size": 1, "num_attention_heads": 1})[0].float()
    note(f"x: (batch, heads, seq, head_dim) = {tuple(x.shape)} {str(x.dtype)[6:]}"
         f"{' (a transposed view)' if case['non_contiguous'] else ''}; positions = "
         f"{positions.tolist()}; inv_freq: {inv.numel()} pairs, theta = {case['theta']:g}")
    return x, positions, inv


def _expect_rope(ctx: Ctx, x: torch.Tensor, positions: torch.Tensor, inv: torch.Tensor,
                 af: float = 1.0, interleaved: bool = False) -> None:
    kwargs = {"attention_factor": af, "interleaved": interleaved}
    got = ctx.sub.call("apply_rope", x.to(ctx.device), positions.to(ctx.device), inv.to(ctx.device),
                       **kwargs)
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"apply_rope must return a tensor, got {type(got).__name__}")
    expect(tuple(got.shape) == tuple(x.shape), f"apply_rope: expected shape {tuple(x.shape)}, got {tuple(got.shape)}")
    expect(got.dtype == x.dtype, f"apply_rope: expected dtype {x.dtype} (the input's), got {got.dtype}")
    expect(got.device.type == torch.device(ctx.device).type,
           f"apply_rope: expected a tensor on {ctx.device}, got one on {got.device.type}")
    got = got.cpu()
    rot = 2 * inv.numel()
    if rot < x.shape[-1] and not torch.equal(got[..., rot:], x[..., rot:]):
        raise CheckFailed(f"apply_rope changed dimensions {rot}..{x.shape[-1] - 1}, past the "
                          f"{rot} rotary ones: they must pass through unchanged (not scaled either)")
    want = ref.apply_rope_f64(x, positions, inv, af, interleaved)[..., :rot]
    half = rot // 2
    ia, ib = (torch.arange(half) * 2, torch.arange(half) * 2 + 1) if interleaved else (
        torch.arange(half), torch.arange(half) + half)
    xd = x.double()
    pair = torch.empty_like(want)
    pair[..., ia] = pair[..., ib] = xd[..., ia].abs() + xd[..., ib].abs()  # |a| + |b| per element
    theta = ref.angles(positions, inv)[:, None, :, :]  # (B, 1, T, R/2)
    theta_el = torch.empty_like(want)
    theta_el[..., ia] = theta_el[..., ib] = theta.abs().expand_as(want[..., ia])
    eps = torch.finfo(x.dtype).eps
    tol = abs(af) * pair * (4 * eps + 2 * EPS32 * theta_el) + 1e-30
    err = (got[..., :rot].double() - want).abs()
    bad = ~(err <= tol)
    if bool(bad.any()):
        idx = tuple(bad.nonzero()[0].tolist())
        raise CheckFailed(
            f"apply_rope{'(interleaved=True)' if interleaved else ''}: {int(bad.sum())} of "
            f"{bad.numel()} rotated elements are off; first at (batch, head, seq, dim) = {idx}: "
            f"expected {float(want[idx]):.6g}, got {float(got[idx]):.6g} (allowed error "
            f"{float(tol[idx]):.2g}; position {int(positions[idx[0], idx[2]])})")


@check("apply_rope rotates the half-split pairs (i, i + d/2)",
       hint="a = x[..., i], b = x[..., i + d/2], theta = position * inv_freq[i]; out_a = a cos - "
            "b sin, out_b = b cos + a sin (rotate_half in transformers).")
@given(case=rope_inputs())
@example(case={"batch": 1, "heads": 1, "seq": 2, "head_dim": 8, "rot": 8, "theta": 10000.0,
               "max_pos": 16, "seed": 0, "dtype": torch.float32, "non_contiguous": False})
def half_split(ctx: Ctx, case: dict) -> None:
    _expect_rope(ctx, *_build(case))


@check("apply_rope rotates the interleaved pairs (2i, 2i + 1) when interleaved=True",
       hint="GPT-J layout: a = x[..., 2i], b = x[..., 2i + 1], the same rotation; the output "
            "keeps the interleaved layout.")
@given(case=rope_inputs())
def interleaved(ctx: Ctx, case: dict) -> None:
    _expect_rope(ctx, *_build(case), interleaved=True)


@check("only the rotary dimensions are rotated and scaled by attention_factor",
       hint="With 2 * len(inv_freq) = R < head_dim, rotate x[..., :R] and return x[..., R:] as "
            "it is; attention_factor multiplies cos and sin, so it scales the rotated part only.")
@given(case=rope_inputs(partial=True), af=st.sampled_from([1.0, 1.3465735902799727, 0.8]),
       layout=st.booleans())
@example(case={"batch": 1, "heads": 1, "seq": 2, "head_dim": 16, "rot": 8, "theta": 10000.0,
               "max_pos": 16, "seed": 1, "dtype": torch.float32, "non_contiguous": False},
         af=1.3465735902799727, layout=False)
def partial_and_factor(ctx: Ctx, case: dict, af: float, layout: bool) -> None:
    _expect_rope(ctx, *_build(case), af=af, interleaved=layout)


@check("each row uses its own positions: a decode step at position p matches the full sequence",
       max_examples=10,
       hint="The angle comes from positions[b, t], not from t: a token decoded at position 517 "
            "must be rotated by 517 * inv_freq, whatever its index in this call.")
@given(seed=gs.seeds(), t=st.integers(2, 6), layout=st.booleans())
def decode_positions(ctx: Ctx, seed: int, t: int, layout: bool) -> None:
    x = gs.tensor((2, 2, t, 16), seed)
    inv = ref.rope_frequencies_f64({"head_dim": 16, "hidden_size": 1, "num_attention_heads": 1})[0].float()
    offsets = torch.tensor([[37], [515]])
    positions = offsets + torch.arange(t)
    note(f"rows at positions {positions.tolist()}; then the last token alone (seq = 1)")
    _expect_rope(ctx, x, positions, inv, interleaved=layout)
    _expect_rope(ctx, x[:, :, -1:].contiguous(), positions[:, -1:].contiguous(), inv, interleaved=layout)


@check("float16 and bfloat16 inputs, and positions up to 131072, keep their accuracy",
       max_examples=12,
       hint="Compute the angles position * inv_freq in float32 (or wider) and cos/sin from them; "
            "in float16 or bfloat16 an angle near 100000 is off by whole radians. Return x's dtype.")
@given(case=rope_inputs(dtypes=(torch.float16, torch.bfloat16, torch.float32), max_pos=131072),
       layout=st.booleans())
@example(case={"batch": 1, "heads": 1, "seq": 3, "head_dim": 16, "rot": 16, "theta": 500000.0,
               "max_pos": 131072, "seed": 2, "dtype": torch.bfloat16, "non_contiguous": True},
         layout=False)
def precision_and_long_positions(ctx: Ctx, case: dict, layout: bool) -> None:
    _expect_rope(ctx, *_build(case), interleaved=layout)


@check("Llama 3.1's frequencies rotate a head at position 100000 correctly", max_examples=1,
       hint="Feed rope_frequencies' inv_freq and attention factor straight into apply_rope.")
def end_to_end(ctx: Ctx) -> None:
    cfg = PRESETS["llama-3.1-405b"]
    inv, af = _frequencies(ctx, cfg)
    want, want_af = ref.rope_frequencies_f64(cfg)
    expect_close(inv, want.float(), what="inv_freq", rtol=FREQ_RTOL, atol=0.0)
    x = gs.tensor((1, 2, 3, ref.head_dim(cfg)), ctx.seed % 2**16)
    positions = torch.tensor([[99_998, 99_999, 100_000]])
    _expect_rope(ctx, x, positions, want.float(), want_af)
    expect_close(af, want_af, what="attention_factor", rtol=FACTOR_RTOL, atol=0.0)

"""Checks for the mla-absorb challenge: the latent cache (values, positions, shape and bytes at
DeepSeek-V3's sizes), the absorbed weights, and the naive and absorbed attention against a float64
evaluation of the model, separately and end to end."""

from __future__ import annotations

import math

import torch
from hypothesis import example, given, note
from hypothesis import strategies as st
from inferview.graders import strategies as gs
from inferview.graders import tolerances
from inferview.graders.api import CheckFailed, Ctx, check, expect_equal, expect_shape
from inferview.reference import mla

F64 = torch.float64

DEEPSEEK_V3 = {"hidden_size": 7168, "num_attention_heads": 128, "kv_lora_rank": 512,
               "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128}
"""huggingface.co/deepseek-ai/DeepSeek-V3 config.json (the sizes the cache check uses)."""

LATE_START = 8189
"""First position of the late 16-bit chunk: neither bfloat16 (8 significant bits) nor float16 (11)
holds 8189 .. 8192 or their angles exactly."""

ABSORB_ROUNDS = 6
"""Rounds of same-shaped weights :func:`absorb_not_stale` sends."""


@st.composite
def mla_cases(draw, *, decode=False, wide_latent=None, scale=1.0):
    """Sizes and a seed. ``decode``: fewer new tokens than cached ones (``Tq < Tk``);
    ``wide_latent``: ``d_c > d_n`` (True), ``d_c < d_n`` (False) or either (None)."""
    dn = draw(st.sampled_from([4, 8, 16]))
    if wide_latent is None:
        dc = draw(st.sampled_from([4, 8, 16, 24]))
    else:
        dc = draw(st.sampled_from([2 * dn, 3 * dn])) if wide_latent else max(2, dn // 2)
    tk = draw(st.integers(2 if decode else 1, 16))
    tq = draw(st.integers(1, tk - 1)) if decode else draw(st.integers(1, tk))
    case = {"batch": draw(st.integers(1, 2)), "heads": draw(st.integers(1, 4)),
            "d_model": draw(st.sampled_from([8, 16, 32])), "d_c": dc, "d_n": dn,
            "d_r": draw(st.sampled_from([2, 4, 8])), "d_v": draw(st.sampled_from([4, 8, 16])),
            "seq_k": tk, "seq_q": tq, "scale": scale, "seed": draw(gs.seeds())}
    note(_describe(case))
    return case


def _describe(c) -> str:
    return (f"B={c['batch']}, H={c['heads']}, d_model={c['d_model']}, d_c={c['d_c']}, d_n={c['d_n']}, "
            f"d_r={c['d_r']}, d_v={c['d_v']}; {c['seq_q']} new of {c['seq_k']} cached tokens; "
            f"hidden states x{c['scale']:g}; seed={c['seed']}")


def _weights(c, device) -> dict[str, torch.Tensor]:
    """Weights drawn as N(0, 1) / sqrt(fan_in), so every projection keeps O(1) values."""
    h, dm, s = c["heads"], c["d_model"], c["seed"]
    shapes = {"w_dkv": (dm, c["d_c"]), "w_kr": (dm, c["d_r"]), "w_qc": (h, dm, c["d_n"]),
              "w_qr": (h, dm, c["d_r"]), "w_uk": (h, c["d_c"], c["d_n"]), "w_uv": (h, c["d_c"], c["d_v"]),
              "w_o": (h, c["d_v"], dm)}
    return {name: gs.tensor(shape, s + 11 * (i + 1), device=device) / math.sqrt(shape[-2])
            for i, (name, shape) in enumerate(shapes.items())}


def _problem(ctx: Ctx, c) -> dict[str, torch.Tensor]:
    """Hidden states of ``seq_k`` tokens, the weights, the cache (built by the reference in
    float32) and ``x``, the newest ``seq_q`` hidden states."""
    w = _weights(c, ctx.device)
    hidden = gs.tensor((c["batch"], c["seq_k"], c["d_model"]), c["seed"], device=ctx.device, scale=c["scale"])
    c_kv, k_rope = mla.latent_kv(hidden, w["w_dkv"], w["w_kr"])
    return {**w, "hidden": hidden, "x": hidden[:, -c["seq_q"]:].contiguous(), "c_kv": c_kv, "k_rope": k_rope}


def _naive_args(p, dtype=None):
    names = ("x", "c_kv", "k_rope", "w_qc", "w_qr", "w_uk", "w_uv", "w_o")
    return [p[n] if dtype is None else p[n].to(dtype) for n in names]


def _close_to_exact(got, exact: torch.Tensor, baselines: list[torch.Tensor], what: str,
                    slack: float | None = None) -> None:
    """``err(got) <= 2 * max(err(baseline)) + slack``, every error the largest against float64.

    ``slack`` defaults to float32's allowance ``atol + rtol * max|exact|`` at the output's scale
    (:func:`inferview.graders.tolerances.within_baseline_error`'s default)."""
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"{what} must be a tensor, got {type(got).__name__}")
    expect_shape(got, tuple(exact.shape), what)
    expect_equal(got.dtype, torch.float32, what=f"dtype of {what}")
    err_base = max(tolerances.max_abs_error(b, exact) for b in baselines)
    if slack is None:
        rtol, atol = tolerances.for_dtype(torch.float32)
        slack = atol + rtol * float(exact.abs().max())
    err = tolerances.max_abs_error(got, exact)
    allowed = tolerances.ATTENTION_FACTOR * err_base + slack
    if not err <= allowed:  # NaN fails
        g, e = got.detach().cpu().double(), exact.detach().cpu()
        diff = (g - e).abs().nan_to_num(float("inf"))
        idx = tuple(int(i) for i in torch.unravel_index(diff.flatten().argmax(), e.shape)) if e.numel() else ()
        where = (f"; worst at {idx}: expected {e[idx].item():.6g}, got {g[idx].item():.6g}"
                 if idx else "")
        raise CheckFailed(f"{what}: max error {err:.3g} against float64; a PyTorch float32 computation has "
                          f"{err_base:.3g}; allowed {tolerances.ATTENTION_FACTOR:g} x that + {slack:.3g}{where}")


def _attention_slack(p, exact: torch.Tensor) -> float:
    """The attention rule's slack (:func:`inferview.graders.tolerances.attention_slack`), with its
    value bound taken as ``sum_h max|V_h @ W_o[h]|``.

    ``out = sum_h softmax(s_h) (V_h @ W_o[h])``: each head is an attention whose "values" are
    ``V_h @ W_o[h]``, and a logit error ``delta`` moves head ``h``'s share by at most ``2 * delta *
    max|V_h @ W_o[h]|``, so the heads together move by at most ``2 * delta`` times the sum. The
    scores bound is the largest visible ``|s|`` of any head (float64)."""
    args = _naive_args(p, F64)
    scores = mla.mla_scores(*args[:6]).abs()  # (B, H, Tq, Tk)
    tq, tk = scores.shape[-2:]
    hidden = torch.arange(tk, device=scores.device)[None, :] > torch.arange(tq, device=scores.device)[:, None] + tk - tq
    max_score = float(scores.masked_fill(hidden, 0.0).max())
    vo = torch.einsum("bjc,hcv,hvm->bhjm", args[1], args[6], args[7])  # V_h @ W_o[h]: (B, H, Tk, d_model)
    max_value = float(vo.abs().amax(dim=(0, 2, 3)).sum())
    return float(tolerances.attention_slack(exact, torch.float32, max_score=max_score, max_value=max_value))


def _baselines(p) -> list[torch.Tensor]:
    """The model computed by PyTorch in float32, in both forms."""
    wq, wo = mla.absorb_weights(p["w_qc"], p["w_uk"], p["w_uv"], p["w_o"])
    d_qk = p["w_qc"].shape[-1] + p["w_qr"].shape[-1]
    return [mla.mla_naive(*_naive_args(p)),
            mla.mla_absorbed(p["x"], p["c_kv"], p["k_rope"], wq, p["w_qr"], wo, d_qk)]


def _latent_check(ctx: Ctx, case, start: int) -> None:
    w = _weights(case, ctx.device)
    x = gs.tensor((case["batch"], case["seq_k"], case["d_model"]), case["seed"], device=ctx.device)
    got = ctx.sub.call("latent_kv", x, w["w_dkv"], w["w_kr"], start=start)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailed(f"latent_kv must return (c_kv, k_rope), got {type(got).__name__}")
    exact = mla.latent_kv(x.double(), w["w_dkv"].double(), w["w_kr"].double(), start=start)
    base = mla.latent_kv(x, w["w_dkv"], w["w_kr"], start=start)
    _close_to_exact(got[0], exact[0], [base[0]], "c_kv")
    _close_to_exact(got[1], exact[1], [base[1]], f"k_rope (rotated at positions {start}..{start + case['seq_k'] - 1})")


@check("latent_kv caches the latent and one shared, rotated RoPE key", max_examples=6,
       hint="c_kv = x @ w_dkv is (B, T, d_c); k_rope = rope(x @ w_kr) is (B, T, d_r), rotated at each "
            "token's position (interleaved pairs (2i, 2i + 1)). Nothing in the cache is per head.")
@given(case=mla_cases())
def latent_cache(ctx: Ctx, case) -> None:
    _latent_check(ctx, case, 0)


@check("latent_kv rotates a chunk at positions start, start + 1, ...", max_examples=5,
       hint="A chunk appended after `start` cached tokens: its token t sits at position start + t.")
@given(case=mla_cases(), start=st.integers(1, 20))
@example(case={"batch": 1, "heads": 1, "d_model": 8, "d_c": 4, "d_n": 4, "d_r": 2, "d_v": 4, "seq_k": 1,
               "seq_q": 1, "scale": 1.0, "seed": 0}, start=3)
def latent_cache_offset(ctx: Ctx, case, start: int) -> None:
    note(f"start={start}")
    _latent_check(ctx, case, start)


@check("at DeepSeek-V3's sizes the 16-bit cache is 576 values per token",
       hint="The cache is in x's dtype: (B, T, kv_lora_rank) and (B, T, qk_rope_head_dim), nothing "
            "per head. Cast back with .to(x.dtype) if you compute in float32.")
def deepseek_cache_bytes(ctx: Ctx) -> str:
    cfg, seq, seed = DEEPSEEK_V3, 3, ctx.seed % 2**16
    dm, dc, dr = cfg["hidden_size"], cfg["kv_lora_rank"], cfg["qk_rope_head_dim"]
    per_token = mla.cache_values_per_token(cfg)
    for dtype in (torch.bfloat16, torch.float16):
        dt = str(dtype).replace("torch.", "")
        ctx.note(f"x=(1, {seq}, {dm}) {dt}, w_dkv=({dm}, {dc}), w_kr=({dm}, {dr}) {dt}, seed={seed}")
        x = gs.tensor((1, seq, dm), seed, dtype, ctx.device)
        w_dkv = (gs.tensor((dm, dc), seed + 1, device=ctx.device) / math.sqrt(dm)).to(dtype)
        w_kr = (gs.tensor((dm, dr), seed + 2, device=ctx.device) / math.sqrt(dm)).to(dtype)
        got = ctx.sub.call("latent_kv", x, w_dkv, w_kr)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise CheckFailed(f"latent_kv must return (c_kv, k_rope), got {type(got).__name__}")
        exact = mla.latent_kv(x.double(), w_dkv.double(), w_kr.double())
        nbytes = 0
        for name, t, want in (("c_kv", got[0], exact[0]), ("k_rope", got[1], exact[1])):
            if not isinstance(t, torch.Tensor):
                raise CheckFailed(f"{name} must be a tensor, got {type(t).__name__}")
            expect_shape(t, tuple(want.shape), f"{name} for {dt} x")
            expect_equal(t.dtype, dtype, what=f"dtype of {name} for {dt} x")
            # 16-bit floats keep 8 (bfloat16) or 11 (float16) significant bits: rounding the result
            # and the rotation's products costs a few units of 2^-8 of the largest value at most;
            # 0.05 x max is six such units, far below what a wrong projection or a missing
            # rotation changes (the whole value)
            err = tolerances.max_abs_error(t, want)
            if not err <= 0.05 * float(want.abs().max()):
                raise CheckFailed(f"{name} for {dt} x: max error {err:.3g} against float64 "
                                  f"(allowed {0.05 * float(want.abs().max()):.3g})")
            nbytes += t.numel() * t.element_size()
        expect_equal(nbytes, seq * per_token * 2, what=f"bytes cached for {seq} token(s) in {dt}")
    full = mla.expanded_values_per_token(cfg)
    return (f"{per_token} values ({per_token * 2:,} bytes in 16 bits) per token and layer, against {full:,} "
            f"for the expanded keys and values: {full / per_token:.1f}x smaller")


@check("latent_kv rotates 16-bit x at late positions with float32 angles",
       hint="Compute the angles position * 10000^(-2i/d_r) in float32 (as the statement's rope does), "
            "whatever x's dtype: a bfloat16 angle keeps 8 significant bits, so at position 8,000 it "
            "is off by whole radians. Rotate in float32 and cast the result to x's dtype.")
def latent_cache_late_16bit(ctx: Ctx) -> None:
    seed, start, seq, dm, dc, dr = ctx.seed % 2**16, LATE_START, 4, 32, 8, 8
    for dtype in (torch.bfloat16, torch.float16):
        dt = str(dtype).replace("torch.", "")
        ctx.note(f"x=(1, {seq}, {dm}) {dt} at positions {start}..{start + seq - 1}, d_c={dc}, "
                 f"d_r={dr}, seed={seed}")
        x = gs.tensor((1, seq, dm), seed, dtype, ctx.device)
        w_dkv = (gs.tensor((dm, dc), seed + 1, device=ctx.device) / math.sqrt(dm)).to(dtype)
        w_kr = (gs.tensor((dm, dr), seed + 2, device=ctx.device) / math.sqrt(dm)).to(dtype)
        got = ctx.sub.call("latent_kv", x, w_dkv, w_kr, start=start)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise CheckFailed(f"latent_kv must return (c_kv, k_rope), got {type(got).__name__}")
        want = mla.latent_kv(x.double(), w_dkv.double(), w_kr.double(), start=start)[1]
        t = got[1]
        if not isinstance(t, torch.Tensor):
            raise CheckFailed(f"k_rope must be a tensor, got {type(t).__name__}")
        expect_shape(t, tuple(want.shape), f"k_rope for {dt} x")
        expect_equal(t.dtype, dtype, what=f"dtype of k_rope for {dt} x")
        # the same 16-bit allowance as the DeepSeek-V3 check: rounding the projection and the
        # result costs a few units of 2^-8 of the largest value; a 16-bit angle moves whole radians
        err = tolerances.max_abs_error(t, want)
        if not err <= 0.05 * float(want.abs().max()):
            raise CheckFailed(f"k_rope for {dt} x at positions {start}..{start + seq - 1}: max error "
                              f"{err:.3g} against float64 (allowed {0.05 * float(want.abs().max()):.3g})")


@check("absorb_weights folds W_uk into the query and W_uv into the output", max_examples=6,
       hint="w_q_latent[h] = w_qc[h] @ w_uk[h].T is (d_model, d_c); w_o_latent[h] = w_uv[h] @ w_o[h] is "
            "(d_c, d_model). torch.matmul batches over the head axis.")
@given(case=mla_cases())
def absorbed_weights(ctx: Ctx, case) -> None:
    w = _weights(case, ctx.device)
    args = [w[n] for n in ("w_qc", "w_uk", "w_uv", "w_o")]
    got = ctx.sub.call("absorb_weights", *args)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailed(f"absorb_weights must return (w_q_latent, w_o_latent), got {type(got).__name__}")
    exact = mla.absorb_weights(*[a.double() for a in args])
    base = mla.absorb_weights(*args)
    _close_to_exact(got[0], exact[0], [base[0]], "w_q_latent")
    _close_to_exact(got[1], exact[1], [base[1]], "w_o_latent")


@check("absorb_weights recomputes for new weights of the same shapes", max_examples=3,
       hint="Absorb once per model load, but compute it from the weights you are given: nothing may "
            "be cached between calls, neither by shape nor by id() or data_ptr() (a freed tensor's "
            "id and memory are handed to the next one).")
@given(case=mla_cases())
def absorb_not_stale(ctx: Ctx, case) -> None:
    # several rounds of same-shaped weights, each freed before the next arrives: the worker's
    # allocator then hands a later round the ids and the memory of an earlier one, which a memo
    # keyed by id() or data_ptr() mistakes for the same weights
    for seed in [case["seed"] + 7919 * r for r in range(ABSORB_ROUNDS)]:
        again = dict(case, seed=seed)
        w = _weights(again, ctx.device)
        args = [w[n] for n in ("w_qc", "w_uk", "w_uv", "w_o")]
        got = ctx.sub.call("absorb_weights", *args)
        exact = mla.absorb_weights(*[a.double() for a in args])
        base = mla.absorb_weights(*args)
        _close_to_exact(got[0], exact[0], [base[0]], f"w_q_latent (weights from seed {seed})")
        _close_to_exact(got[1], exact[1], [base[1]], f"w_o_latent (weights from seed {seed})")


def _naive_check(ctx: Ctx, case) -> None:
    p = _problem(ctx, case)
    exact = mla.mla_naive(*_naive_args(p, F64))
    got = ctx.sub.call("mla_naive", *_naive_args(p))
    _close_to_exact(got, exact, _baselines(p), "mla_naive output", _attention_slack(p, exact))


def _absorbed_check(ctx: Ctx, case) -> None:
    p = _problem(ctx, case)
    wq, wo = mla.absorb_weights(p["w_qc"], p["w_uk"], p["w_uv"], p["w_o"])
    d_qk = case["d_n"] + case["d_r"]
    # the exact answer for the absorbed weights as given (rounded to float32): the naive model
    # with the original weights differs from it by that rounding, which is not the candidate's
    exact = mla.mla_absorbed(p["x"].double(), p["c_kv"].double(), p["k_rope"].double(), wq.double(),
                             p["w_qr"].double(), wo.double(), d_qk)
    got = ctx.sub.call("mla_absorbed", p["x"], p["c_kv"], p["k_rope"], wq, p["w_qr"], wo, d_qk)
    base = mla.mla_absorbed(p["x"], p["c_kv"], p["k_rope"], wq, p["w_qr"], wo, d_qk)
    _close_to_exact(got, exact, [base, mla.mla_naive(*_naive_args(p))], "mla_absorbed output",
                    _attention_slack(p, exact))


@check("mla_naive matches float64 (decode steps and chunks)", max_examples=8,
       hint="Query i is the token at position Tk - Tq + i: rotate its RoPE part there and let it see "
            "the cached tokens j <= Tk - Tq + i. Scale by 1/sqrt(d_n + d_r). The cached k_rope is "
            "already rotated.")
@given(case=mla_cases(decode=True))
@example(case={"batch": 1, "heads": 2, "d_model": 8, "d_c": 4, "d_n": 4, "d_r": 2, "d_v": 4, "seq_k": 3,
               "seq_q": 1, "scale": 1.0, "seed": 0})
def naive_decode(ctx: Ctx, case) -> None:
    _naive_check(ctx, case)


@check("mla_naive matches float64 (prefill: every cached token is new)", max_examples=4,
       hint="With Tq == Tk the mask is the ordinary lower triangle and the positions are 0..Tk-1.")
@given(case=mla_cases())
def naive_prefill(ctx: Ctx, case) -> None:
    _naive_check(ctx, dict(case, seq_q=case["seq_k"]))


@check("mla_absorbed attends over the latent cache and matches float64", max_examples=8,
       hint="scores = (x @ w_q_latent[h]) . c_kv + rope(x @ w_qr[h]) . k_rope, scaled by "
            "1/sqrt(qk_head_dim); out = sum_h (p_h @ c_kv) @ w_o_latent[h].")
@given(case=mla_cases(decode=True))
@example(case={"batch": 1, "heads": 2, "d_model": 8, "d_c": 16, "d_n": 4, "d_r": 2, "d_v": 4, "seq_k": 3,
               "seq_q": 2, "scale": 1.0, "seed": 1})
def absorbed_decode(ctx: Ctx, case) -> None:
    _absorbed_check(ctx, case)


@check("mla_absorbed keeps the scale 1/sqrt(d_n + d_r) with a wide latent", max_examples=4,
       hint="The absorbed dot product runs over d_c + d_r numbers, but it is the same score as "
            "q_h . k_h: scale by 1/sqrt(qk_head_dim), not by the latent's width.")
@given(case=mla_cases(wide_latent=True))
def absorbed_wide_latent(ctx: Ctx, case) -> None:
    _absorbed_check(ctx, case)


@check("naive and absorbed agree end to end on your own cache", max_examples=4,
       hint="Build the cache with latent_kv, then both forms must give the model's output.")
@given(case=mla_cases())
def end_to_end(ctx: Ctx, case) -> None:
    p = _problem(ctx, case)
    c_kv, k_rope = ctx.sub.call("latent_kv", p["hidden"], p["w_dkv"], p["w_kr"])
    wq, wo = ctx.sub.call("absorb_weights", p["w_qc"], p["w_uk"], p["w_uv"], p["w_o"])
    exact_p = {**p, "c_kv": mla.latent_kv(p["hidden"].double(), p["w_dkv"].double(), p["w_kr"].double())[0],
               "k_rope": mla.latent_kv(p["hidden"].double(), p["w_dkv"].double(), p["w_kr"].double())[1]}
    exact = mla.mla_naive(*_naive_args(exact_p, F64))
    d_qk = case["d_n"] + case["d_r"]
    naive = ctx.sub.call("mla_naive", p["x"], c_kv, k_rope, *[p[n] for n in ("w_qc", "w_qr", "w_uk", "w_uv", "w_o")])
    absorbed = ctx.sub.call("mla_absorbed", p["x"], c_kv, k_rope, wq, p["w_qr"], wo, d_qk)
    bw = mla.absorb_weights(p["w_qc"], p["w_uk"], p["w_uv"], p["w_o"])
    baselines = [mla.mla_naive(*_naive_args(p)),
                 mla.mla_absorbed(p["x"], p["c_kv"], p["k_rope"], bw[0], p["w_qr"], bw[1], d_qk)]
    slack = _attention_slack(exact_p, exact)
    _close_to_exact(naive, exact, baselines, "mla_naive on your latent_kv cache", slack)
    _close_to_exact(absorbed, exact, baselines, "mla_absorbed on your cache and absorb_weights", slack)


@check("stays finite for large scores", max_examples=3, hint="Subtract each row's maximum before exp "
       "(torch.softmax does): exp of a score above ~89 is inf in float32.")
@given(case=mla_cases(decode=True, scale=12.0))
def large_logits(ctx: Ctx, case) -> None:
    _naive_check(ctx, case)
    _absorbed_check(ctx, case)

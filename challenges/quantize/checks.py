"""Checks for the ``quantize`` challenge: int8 per channel, packed int4 per group.

Ground truth: ``inferview.reference.quantization`` (absmax quantization, Jacob et al. 2018; the
outlier problem, Dettmers et al. 2022).
"""

from __future__ import annotations

import torch
from hypothesis import example, given, note
from hypothesis import strategies as st
from inferview.graders import strategies as gs
from inferview.graders.api import CheckFailed, Ctx, check, expect, expect_close, expect_equal
from inferview.reference import quantization as qz

MAGNITUDES = (1.0, 1e-3, 250.0)


@st.composite
def weights(draw: st.DrawFn, *, max_rows: int = 6, max_groups: int = 4,
            group_sizes: tuple[int, ...] = (2, 4, 8, 32)) -> dict:
    """A weight description: rows, group size, number of groups, magnitude, seed."""
    return {
        "rows": draw(st.integers(1, max_rows)),
        "group_size": draw(st.sampled_from(group_sizes)),
        "groups": draw(st.integers(1, max_groups)),
        "magnitude": draw(st.sampled_from(MAGNITUDES)),
        "seed": draw(gs.seeds()),
    }


def _build(case: dict, device: str, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    shape = (case["rows"], case["groups"] * case["group_size"])
    note(f"w = randn{shape} * {case['magnitude']:g} (seed {case['seed']}), "
         f"{str(dtype).replace('torch.', '')}, group_size = {case['group_size']}")
    return gs.tensor(shape, case["seed"], dtype, device, scale=case["magnitude"])


def _scaled(w: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``w / scale`` in float32 with the scale broadcast per row or per group: ``(out, in)``."""
    return w.float().cpu() / qz._expand(scale.float().cpu(), w.shape)


def _tensor(x: object, what: str) -> torch.Tensor:
    """``x`` must be a tensor (a clear failure instead of an attribute error later)."""
    expect(isinstance(x, torch.Tensor), f"{what}: expected a tensor, got {type(x).__name__}")
    assert isinstance(x, torch.Tensor)
    return x


def _pair(result: object, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    """A ``(tensor, tensor)`` result."""
    expect(isinstance(result, (tuple, list)) and len(result) == 2,
           f"{what} must return a pair of tensors, got {type(result).__name__}")
    assert isinstance(result, (tuple, list))
    return _tensor(result[0], f"{what}[0]"), _tensor(result[1], f"{what}[1]")


def _expect_codes(got: torch.Tensor, want: torch.Tensor, pre_round: torch.Tensor, what: str) -> None:
    """Codes equal, except one step away where ``w / scale`` is within 1e-3 of a .5 boundary
    (another valid order of float32 operations may round the other way there)."""
    _tensor(got, what)
    expect_equal(tuple(got.shape), tuple(want.shape), what=f"shape of {what}")
    expect_equal(got.dtype, want.dtype, what=f"dtype of {what}")
    g, w = got.cpu().to(torch.int32), want.cpu().to(torch.int32)
    frac = (pre_round.abs() - pre_round.abs().floor() - 0.5).abs()
    near_tie = (frac < 1e-3) & (frac > 0)
    bad = (g != w) & ~(near_tie & ((g - w).abs() == 1))
    if bool(bad.any()):
        idx = bad.nonzero()[:5].tolist()
        lines = [f"{what}: {int(bad.sum())} of {g.numel()} codes differ"]
        for r, c in idx:
            lines.append(f"  at ({r}, {c}): w / scale = {float(pre_round[r, c]):.6g}, "
                         f"expected code {int(w[r, c])}, got {int(g[r, c])}")
        raise CheckFailed("\n".join(lines))


@check("int8 scales are the row absmax / 127",
       hint="scale[r] = w[r].abs().max() / 127 — the largest magnitude, not the largest value; "
            "one scale per output row (dim 1 reduced), 1.0 for an all-zero row.")
@given(case=weights())
@example(case={"rows": 1, "group_size": 4, "groups": 1, "magnitude": 1.0, "seed": 0})
def int8_scales(ctx: Ctx, case: dict) -> None:
    w = _build(case, ctx.device)
    q, scale = _pair(ctx.sub.call("quantize_int8_per_channel", w), "quantize_int8_per_channel")
    _, want = qz.quantize_int8_per_channel(w)
    expect_close(scale, want.to(ctx.device), what="scale", rtol=1e-6, atol=0)


@check("int8 codes match the reference",
       hint="code = clamp(torch.round(w / scale[:, None]), -127, 127).to(torch.int8): round first "
            "(half to even), then clamp, then convert. `.to(torch.int8)` alone truncates.")
@given(case=weights())
def int8_codes(ctx: Ctx, case: dict) -> None:
    w = _build(case, ctx.device)
    q, scale = _pair(ctx.sub.call("quantize_int8_per_channel", w), "quantize_int8_per_channel")
    want_q, want_s = qz.quantize_int8_per_channel(w)
    _expect_codes(q, want_q, _scaled(w, want_s), "q")


@check("int8 accepts float16 and bfloat16 weights", max_examples=10,
       hint="Convert w to float32 before computing the scale; return float32 scales.")
@given(case=weights(max_rows=3), dtype=st.sampled_from([torch.float16, torch.bfloat16]))
def int8_low_precision_input(ctx: Ctx, case: dict, dtype: torch.dtype) -> None:
    w = _build(case, ctx.device, dtype)
    q, scale = _pair(ctx.sub.call("quantize_int8_per_channel", w), "quantize_int8_per_channel")
    want_q, want_s = qz.quantize_int8_per_channel(w)
    expect_close(scale, want_s.to(ctx.device), what="scale", rtol=1e-6, atol=0)
    _expect_codes(q, want_q, _scaled(w, want_s), "q")


@check("int8 rounds exact halves to even",
       hint="torch.round rounds half to even (2.5 -> 2, -0.5 -> 0); floor(x + 0.5) or rounding "
            "away from zero gives a different code on exact ties.")
def int8_ties(ctx: Ctx) -> None:
    w = torch.tensor([[127.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5],
                      [-127.0, 3.5, -3.5, 4.5, 0.0, 63.5, -64.5, 1.0]], device=ctx.device)
    ctx.note(f"w = {w.tolist()} (both scales are exactly 1.0)")
    q, _ = _pair(ctx.sub.call("quantize_int8_per_channel", w), "quantize_int8_per_channel")
    want, _ = qz.quantize_int8_per_channel(w)
    expect_equal(q, want, what="q")


@check("int8 handles an all-zero row", max_examples=10,
       hint="A row of zeros has absmax 0: give it scale 1.0 (so every code is 0), not 0 or NaN.")
@given(rows=st.integers(2, 4), cols=st.integers(1, 16), seed=gs.seeds())
def int8_zero_row(ctx: Ctx, rows: int, cols: int, seed: int) -> None:
    w = gs.tensor((rows, cols), seed, device=ctx.device)
    w[seed % rows] = 0.0
    ctx.note(f"row {seed % rows} is all zeros")
    q, scale = _pair(ctx.sub.call("quantize_int8_per_channel", w), "quantize_int8_per_channel")
    want_q, want_s = qz.quantize_int8_per_channel(w)
    expect_close(scale, want_s.to(ctx.device), what="scale", rtol=1e-6, atol=0)
    _expect_codes(q, want_q, _scaled(w, want_s), "q")


@check("dequantize_int8 multiplies each row by its scale", max_examples=10,
       hint="w_hat = q.float() * scale[:, None] — scale indexes rows, so broadcast it as a column.")
@given(rows=st.integers(1, 6), cols=st.integers(1, 20), seed=gs.seeds())
@example(rows=3, cols=3, seed=0)
def int8_dequantize(ctx: Ctx, rows: int, cols: int, seed: int) -> None:
    q = gs.tensor((rows, cols), seed, torch.int8, ctx.device, low=-127, high=128)
    scale = gs.tensor((rows,), seed + 1, device=ctx.device, low=1e-3, high=2.0)
    got = _tensor(ctx.sub.call("dequantize_int8", q, scale), "dequantize_int8")
    expect_close(got, qz.dequantize_int8(q, scale), what="dequantized weight")


@check("int8 round trip is within half a step", max_examples=10,
       hint="Every weight must come back within scale / 2: codes outside [-127, 127] or a scale "
            "that is too small clamps the extremes.")
@given(case=weights())
def int8_roundtrip(ctx: Ctx, case: dict) -> None:
    w = _build(case, ctx.device)
    q, scale = _pair(ctx.sub.call("quantize_int8_per_channel", w), "quantize_int8_per_channel")
    expect(q.dtype == torch.int8, f"q must be int8, got {q.dtype}")
    expect(int(q.min()) >= -127, f"code {int(q.min())} is outside [-127, 127]")
    w_hat = qz.dequantize_int8(q.cpu(), scale.cpu().float())
    err = (w_hat - w.cpu()).abs()
    bound = scale.cpu().float()[:, None] / 2 * (1 + 1e-5) + 1e-12
    bad = err > bound
    if bool(bad.any()):
        r, c = bad.nonzero()[0].tolist()
        raise CheckFailed(f"{int(bad.sum())} weights come back more than half a step away; at "
                          f"({r}, {c}): w = {float(w[r, c]):.6g}, w_hat = {float(w_hat[r, c]):.6g}, "
                          f"scale = {float(scale[r]):.6g}")


@check("int4 scales are per group, absmax / 7", max_examples=10,
       hint="View w as (out, in // group_size, group_size) and reduce the last dim: scale has shape "
            "(out, in // group_size), each the group's max |w| / 7.")
@given(case=weights())
def int4_scales(ctx: Ctx, case: dict) -> None:
    w = _build(case, ctx.device)
    _, scale = _pair(ctx.sub.call("quantize_int4_per_group", w, case["group_size"]),
                     "quantize_int4_per_group")
    _, want = qz.quantize_int4_per_group(w, case["group_size"])
    expect_close(scale, want.to(ctx.device), what="scale", rtol=1e-6, atol=0)


@check("unpack_int4 splits each byte low nibble first and sign-extends",
       hint="q[:, 2j] = byte & 0xF, q[:, 2j+1] = byte >> 4, then map 8..15 to -8..-1 "
            "(subtract 16). Return int8.")
@given(rows=st.integers(1, 4), m=st.integers(1, 12), seed=gs.seeds(), documented=st.just(False))
@example(rows=1, m=4, seed=0, documented=True)
def int4_unpack(ctx: Ctx, rows: int, m: int, seed: int, documented: bool) -> None:
    packed = gs.tensor((rows, m), seed, torch.uint8, ctx.device, low=0, high=256)
    if documented:  # the statement's example plus -8 and -7
        packed = torch.tensor([[0x21, 0x7F, 0x80, 0x09]], dtype=torch.uint8, device=ctx.device)
    ctx.note(f"packed = {[hex(int(b)) for b in packed.flatten()[:8]]}")
    got = _tensor(ctx.sub.call("unpack_int4", packed), "unpack_int4")
    expect_equal(got, qz.unpack_int4(packed), what="unpacked codes")


@check("int4 codes and packing match the reference",
       hint="Code 2j goes in the low nibble, code 2j+1 in the high nibble; negative codes as 4-bit "
            "two's complement (q & 0xF). Codes are clamp(round(w / scale), -7, 7).")
@given(case=weights())
@example(case={"rows": 1, "group_size": 2, "groups": 2, "magnitude": 1.0, "seed": 1})
def int4_codes(ctx: Ctx, case: dict) -> None:
    w = _build(case, ctx.device)
    packed, scale = _pair(ctx.sub.call("quantize_int4_per_group", w, case["group_size"]),
                          "quantize_int4_per_group")
    want_p, want_s = qz.quantize_int4_per_group(w, case["group_size"])
    expect_equal(tuple(packed.shape), tuple(want_p.shape), what="shape of packed")
    expect_equal(packed.dtype, torch.uint8, what="dtype of packed")
    got_q = qz.unpack_int4(packed.cpu())  # read with the documented layout
    _expect_codes(got_q, qz.unpack_int4(want_p), _scaled(w, want_s),
                  "codes read back from packed (low nibble = even column)")


@check("int4 rounds exact halves to even",
       hint="The same rounding as int8: torch.round (half to even). floor(x + 0.5) rounds 0.5 to 1 "
            "and 2.5 to 3.")
def int4_ties(ctx: Ctx) -> None:
    w = torch.tensor([[7.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 6.5],
                      [-7.0, 3.5, -3.5, 4.5, 0.0, 5.5, -5.5, 1.0]], device=ctx.device)
    ctx.note(f"w = {w.tolist()}, group_size = 8 (both scales are exactly 1.0)")
    packed, _ = _pair(ctx.sub.call("quantize_int4_per_group", w, 8), "quantize_int4_per_group")
    want, _ = qz.quantize_int4_per_group(w, 8)
    expect_equal(tuple(packed.shape), tuple(want.shape), what="shape of packed")
    expect_equal(packed.dtype, torch.uint8, what="dtype of packed")
    expect_equal(qz.unpack_int4(packed.cpu()), qz.unpack_int4(want),
                 what="codes read back from packed (low nibble = even column)")


TIE_MAGNITUDES = tuple(round(0.01 * i, 2) for i in range(1, 400))
"""Scales (``absmax = qmax * m``) searched for exact ties; almost none is a power of two."""
TIES_PER_CHECK = 24


def _exact_ties(qmax: int) -> list[tuple[float, float]]:
    """``(absmax, x)`` pairs where, with ``scale = absmax / qmax`` in float32, ``x / scale`` is an
    exact ``k + 0.5`` but ``x * (1 / scale)`` rounds to another code: the ties that tell dividing
    by the scale (the statement's rule) from multiplying by its reciprocal."""
    found = []
    for m in TIE_MAGNITUDES:
        amax = torch.tensor(qmax * m, dtype=torch.float32)
        scale = amax / qmax
        for k in range(-qmax, qmax):
            x = ((k + 0.5) * scale).to(torch.float32)
            if float(x / scale) == k + 0.5 and torch.round(x / scale) != torch.round(x * (1.0 / scale)):
                found.append((float(amax), float(x)))
                if len(found) == TIES_PER_CHECK:
                    return found
    return found


@check("exact ties round half to even with any scale, dividing by it",
       hint="code = round(w / scale): divide. w * (1 / scale) gives the same codes almost everywhere, "
            "but not on exact ties when the scale is not a power of two (about 1 in 8 rounds the "
            "other way).")
def ties_any_scale(ctx: Ctx) -> None:
    pairs8 = _exact_ties(127)
    w8 = torch.tensor([[a, x] for a, x in pairs8], device=ctx.device)
    ctx.note(f"int8: {len(pairs8)} rows [absmax, x], each x / scale an exact k + 0.5 "
             f"(first row {w8[0].tolist()})")
    q, _ = _pair(ctx.sub.call("quantize_int8_per_channel", w8), "quantize_int8_per_channel")
    want, _ = qz.quantize_int8_per_channel(w8.cpu())
    expect_equal(q, want, what="int8 codes on exact ties")
    pairs4 = _exact_ties(7)
    w4 = torch.tensor([[v for a, x in pairs4 for v in (a, x)]], device=ctx.device)
    ctx.note(f"int4: groups of 2 [absmax, x], {len(pairs4)} groups (first {w4[0, :2].tolist()})")
    packed, _ = _pair(ctx.sub.call("quantize_int4_per_group", w4, 2), "quantize_int4_per_group")
    want4, _ = qz.quantize_int4_per_group(w4.cpu(), 2)
    expect_equal(tuple(packed.shape), tuple(want4.shape), what="shape of packed")
    expect_equal(qz.unpack_int4(packed.cpu()), qz.unpack_int4(want4),
                 what="int4 codes on exact ties (low nibble = even column)")


def _expect_int4_like_reference(ctx: Ctx, w: torch.Tensor, group_size: int) -> None:
    """The submission's int4 scales, packed shape and codes equal the reference's for ``w``."""
    packed, scale = _pair(ctx.sub.call("quantize_int4_per_group", w, group_size), "quantize_int4_per_group")
    want_p, want_s = qz.quantize_int4_per_group(w, group_size)
    expect_close(scale, want_s.to(ctx.device), what="scale", rtol=1e-6, atol=0)
    expect_equal(tuple(packed.shape), tuple(want_p.shape), what="shape of packed")
    _expect_codes(qz.unpack_int4(packed.cpu()), qz.unpack_int4(want_p), _scaled(w, want_s),
                  "codes read back from packed")


@check("int4 gives an all-zero group the scale 1.0", max_examples=10,
       hint="A group of zeros has absmax 0: its scale is exactly 1.0 (every code 0), as for an int8 "
            "row — not 0, NaN or a clamped epsilon.")
@given(case=weights(max_groups=3), which=st.integers(0, 100))
@example(case={"rows": 2, "group_size": 4, "groups": 2, "magnitude": 1.0, "seed": 0}, which=1)
def int4_zero_group(ctx: Ctx, case: dict, which: int) -> None:
    w = _build(case, ctx.device)
    gsz = case["group_size"]
    r, g = which % case["rows"], (which // case["rows"]) % case["groups"]
    w[r, g * gsz:(g + 1) * gsz] = 0.0
    ctx.note(f"group {g} of row {r} is all zeros")
    _expect_int4_like_reference(ctx, w, gsz)


@check("int4 accepts float16 and bfloat16 weights", max_examples=10,
       hint="Convert w to float32 before the scale and the division, as for int8; return float32 "
            "scales.")
@given(case=weights(max_rows=3), dtype=st.sampled_from([torch.float16, torch.bfloat16]))
def int4_low_precision_input(ctx: Ctx, case: dict, dtype: torch.dtype) -> None:
    w = _build(case, ctx.device, dtype)
    _expect_int4_like_reference(ctx, w, case["group_size"])


@check("per-group int4 contains an outlier to its own group", max_examples=10,
       hint="One huge weight sets the scale of whatever shares it. With a scale per group of "
            "group_size weights, only that group loses precision; a single scale for the row or "
            "tensor rounds every ordinary weight to 0.")
@given(rows=st.integers(2, 4), seed=gs.seeds(), outlier=st.sampled_from([50.0, 200.0, -500.0]))
def int4_outlier(ctx: Ctx, rows: int, seed: int, outlier: float) -> None:
    gsz = 16
    w = gs.tensor((rows, 4 * gsz), seed, device=ctx.device)
    w[0, 0] = outlier
    ctx.note(f"w ~ N(0, 1) of shape {tuple(w.shape)}, w[0, 0] = {outlier}, group_size = {gsz}")
    packed, scale = _pair(ctx.sub.call("quantize_int4_per_group", w, gsz), "quantize_int4_per_group")
    w_hat = qz.dequantize(qz.unpack_int4(packed.cpu()), scale.cpu().float())
    normal = torch.ones_like(w, dtype=torch.bool, device="cpu")
    normal[0, :gsz] = False  # everything outside the outlier's group
    err = float((w_hat - w.cpu()).abs()[normal].mean())
    ref_q, ref_s = qz.quantize_absmax(w.cpu(), 4, "group", gsz)
    ref_err = float((qz.dequantize(ref_q, ref_s) - w.cpu()).abs()[normal].mean())
    tq, ts = qz.quantize_absmax(w.cpu(), 4, "tensor")
    tensor_err = float((qz.dequantize(tq, ts) - w.cpu()).abs()[normal].mean())
    ctx.note(f"mean error outside the outlier's group: yours {err:.4g}, per-group reference "
             f"{ref_err:.4g}, one scale per tensor {tensor_err:.4g}")
    expect(err <= ref_err * 1.01 + 1e-6,
           f"mean reconstruction error outside the outlier's group is {err:.4g}; per-group scales "
           f"give {ref_err:.4g} (a single scale for the tensor gives {tensor_err:.4g})")

"""Tests for ``inferview.reference.quantization`` against naive and torch ground truth."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st
from inferview.reference import quantization as qz


def _weight(rows: int, cols: int, seed: int, scale: float = 1.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=g) * scale


@given(rows=st.integers(1, 6), groups=st.integers(1, 4), gs=st.sampled_from([2, 4, 8, 32]),
       bits=st.sampled_from([4, 8]), gran=st.sampled_from(["tensor", "channel", "group"]),
       seed=st.integers(0, 2**16), mag=st.sampled_from([1e-3, 1.0, 300.0]))
def test_absmax_roundtrip_error_at_most_half_a_step(rows, groups, gs, bits, gran, seed, mag):
    w = _weight(rows, groups * gs, seed, mag)
    q, s = qz.quantize_absmax(w, bits, gran, gs if gran == "group" else None)
    qmax = qz.qmax_symmetric(bits)
    assert q.dtype == torch.int8 and int(q.abs().max()) <= qmax
    err = (qz.dequantize(q, s) - w).abs()
    step = qz._expand(s, w.shape).expand_as(w)
    assert bool((err <= step / 2 * (1 + 1e-5) + 1e-12).all())
    # the absmax element of every group is represented exactly (code +-qmax)
    assert int(q.abs().max()) == qmax


def test_absmax_matches_naive_loop_per_channel() -> None:
    w = _weight(5, 12, 3)
    w[2] = 0.0  # a zero row: scale 1, codes 0
    q, s = qz.quantize_int8_per_channel(w)
    for r in range(5):
        amax = max(abs(float(v)) for v in w[r])
        scale = amax / 127 if amax > 0 else 1.0
        assert math.isclose(float(s[r]), scale, rel_tol=1e-6)
        for c in range(12):
            code = max(-127, min(127, round(float(w[r, c]) / float(s[r]))))  # Python round: half-even
            assert int(q[r, c]) == code
    assert s.shape == (5,) and s.dtype == torch.float32 and float(s[2]) == 1.0
    assert torch.equal(qz.dequantize_int8(q, s), qz.dequantize(q, s))


def test_round_half_to_even_not_away_from_zero() -> None:
    w = torch.tensor([[127.0, 0.5, 1.5, 2.5, -0.5, -2.5]])
    q, s = qz.quantize_int8_per_channel(w)
    assert float(s[0]) == 1.0
    assert q.tolist() == [[127, 0, 2, 2, 0, -2]]


@given(rows=st.integers(1, 5), groups=st.integers(1, 4), gs=st.sampled_from([2, 4, 16]),
       bits=st.sampled_from([4, 8]), seed=st.integers(0, 2**16), shift=st.floats(-3, 3))
def test_zero_point_roundtrip_and_zero_exact(rows, groups, gs, bits, seed, shift):
    w = _weight(rows, groups * gs, seed) + shift
    w[0, 0] = 0.0
    q, s, z = qz.quantize_zero_point(w, bits, "group", gs)
    assert q.dtype == torch.uint8 and int(q.max()) <= 2**bits - 1
    deq = qz.dequantize(q, s, z)
    step = qz._expand(s, w.shape).expand_as(w)
    assert bool(((deq - w).abs() <= step / 2 * (1 + 1e-4) + 1e-6).all())
    assert float(deq[0, 0]) == 0.0  # zero is exactly representable


@given(rows=st.integers(1, 4), half=st.integers(1, 8), signed=st.booleans(), seed=st.integers(0, 999))
@example(rows=1, half=1, signed=True, seed=0)
def test_int4_pack_unpack_roundtrip(rows, half, signed, seed):
    g = torch.Generator().manual_seed(seed)
    lo, hi = (-8, 8) if signed else (0, 16)
    q = torch.randint(lo, hi, (rows, 2 * half), generator=g, dtype=torch.int8)
    p = qz.pack_int4(q, signed)
    assert p.dtype == torch.uint8 and p.shape == (rows, half)
    assert torch.equal(qz.unpack_int4(p, signed), q)


def test_int4_nibble_order_is_documented() -> None:
    q = torch.tensor([[1, 2, -1, 7, -8, 0]], dtype=torch.int8)
    assert qz.pack_int4(q).tolist() == [[0x21, 0x7F, 0x08]]  # element 2j in the low nibble
    assert qz.pack_int4(torch.tensor([[15, 3]]), signed=False).tolist() == [[0x3F]]
    with pytest.raises(ValueError):
        qz.pack_int4(torch.tensor([[8, 0]]), signed=True)


def test_int4_per_group_challenge_interface() -> None:
    w = _weight(3, 16, 1)
    packed, scale = qz.quantize_int4_per_group(w, 8)
    assert packed.shape == (3, 8) and scale.shape == (3, 2)
    q, s = qz.quantize_absmax(w, 4, "group", 8)
    assert torch.equal(qz.unpack_int4(packed), q) and torch.equal(scale, s)
    assert int(q.abs().max()) == 7
    assert (qz.dequantize_int4_per_group(packed, scale) - w).abs().max() <= s.max() / 2 + 1e-6


def _all_fp32_samples(n: int = 200_000) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    bits = torch.randint(-(2**31), 2**31 - 1, (n,), generator=g, dtype=torch.int32)
    special = torch.tensor([0.0, -0.0, 448.0, 464.0, 464.01, 480.0, 57344.0, 59392.0, 61440.0,
                            2.0**-9, 2.0**-10, 3 * 2.0**-11, 2.0**-16, 2.0**-17, math.inf, -math.inf,
                            math.nan, 1e-45])
    return torch.cat([bits.view(torch.float32), torch.randn(50_000, generator=g) * 50, special])


def _same(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a == b) | (a.isnan() & b.isnan())


@pytest.mark.parametrize("fmt", [qz.FP8_E4M3, qz.FP8_E5M2])
def test_fp8_emulation_matches_torch_casts(fmt) -> None:
    """Rounding (normals, subnormals, ties to even) matches torch's casts bit for bit; beyond the
    format's range torch's policy differs by dtype and version (torch 2.13 on CPU saturates E4M3
    and overflows E5M2 to inf), so there it must equal one of the two policies."""
    x = _all_fp32_samples()
    want = x.to(getattr(torch, fmt.torch_dtype)).float()
    sat = qz.round_to_format(x, fmt, saturate=True)
    nosat = qz.round_to_format(x, fmt, saturate=False)
    in_range = torch.isfinite(nosat) | x.isnan()
    ok = _same(nosat, want) & in_range
    assert bool((_same(sat, nosat) | ~in_range).all())
    bad = in_range & ~ok
    assert not bool(bad.any()), f"{int(bad.sum())} mismatches, first at {x[bad][:3].tolist()}"
    out = ~in_range
    assert bool((_same(want, sat) | _same(want, nosat))[out].all())


@pytest.mark.parametrize("dtype,fmt", [("float8_e4m3fn", qz.FP8_E4M3), ("float8_e5m2", qz.FP8_E5M2)])
def test_fp8_every_code_is_a_fixed_point(dtype, fmt) -> None:
    v = torch.arange(256, dtype=torch.uint8).view(getattr(torch, dtype)).float()
    r = qz.round_to_format(v, fmt, saturate=False)
    assert bool(((r == v) | (r.isnan() & v.isnan())).all())
    assert float(v[torch.isfinite(v)].abs().max()) == fmt.max_value


def test_fp8_saturation_and_overflow() -> None:
    x = torch.tensor([1000.0, -1e6, math.inf, 70000.0])
    assert qz.round_to_format(x, "e4m3").tolist() == [448.0, -448.0, 448.0, 448.0]
    assert qz.round_to_format(x, "e5m2").tolist() == [1024.0, -57344.0, 57344.0, 57344.0]
    assert all(math.isnan(v) for v in qz.round_to_format(x[:2] * 10, "e4m3", saturate=False).tolist())
    assert qz.round_to_format(torch.tensor([70000.0]), "e5m2", saturate=False).tolist() == [math.inf]
    # round half to even at a tie: 464 sits between 448 (even mantissa) and 480
    assert qz.round_to_format(torch.tensor([464.0, 0.25, 0.75, 5.0]), "e2m1").tolist() == [6.0, 0.0, 1.0, 4.0]
    assert qz.round_to_format(torch.tensor([464.0]), "e4m3", saturate=False).tolist() == [448.0]


def test_fp4_e2m1_grid() -> None:
    grid = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
    assert torch.equal(qz.round_to_format(grid, qz.FP4_E2M1), grid)
    assert qz.FP4_E2M1.emax == 2 and qz.FP8_E4M3.emax == 8 and qz.FP8_E5M2.emax == 15


@given(blocks=st.integers(1, 3), seed=st.integers(0, 2**16), mag=st.sampled_from([1e-30, 1e-3, 1.0, 1e4]),
       fmt=st.sampled_from(["e4m3", "e5m2", "e2m1"]))
def test_mx_block_scaling(blocks, seed, mag, fmt):
    x = _weight(2, 32 * blocks, seed, mag)
    f = qz.FORMATS[fmt]
    elems, shared = qz.mx_quantize(x, f)
    assert shared.shape == (2, blocks)
    # shared exponent = floor(log2(amax)) - emax: the largest element lands in [2^emax, 2^(emax+1))
    amax = x.reshape(2, blocks, 32).abs().amax(-1)
    assert torch.equal(shared, (torch.floor(torch.log2(amax)).to(torch.int32) - f.emax))
    assert torch.equal(qz.round_to_format(elems, f), elems)  # elements are on the format's grid
    deq = qz.mx_dequantize(elems, shared)
    # error relative to the block max: half an ulp, or the clamp of values above max_value (the
    # spec's scale leaves the block max in [2^emax, 2^(emax+1)), which can exceed max_value)
    clamp_loss = 1 - f.max_value / 2.0 ** (f.emax + 1)
    bound = max(2.0 ** -(f.man_bits + 1), clamp_loss) * 1.0001
    rel = (deq - x).abs().reshape(2, blocks, 32).amax(-1) / amax
    assert bool((rel <= bound).all())


def test_mx_zero_block_and_shape_errors() -> None:
    x = torch.zeros(1, 32)
    elems, shared = qz.mx_quantize(x)
    assert shared.tolist() == [[-127]] and float(elems.abs().sum()) == 0.0
    with pytest.raises(ValueError):
        qz.mx_quantize(torch.zeros(1, 33))


def test_outlier_demo_per_group_beats_per_tensor() -> None:
    r = qz.outlier_demo()
    assert r.per_group_error < r.per_channel_error < r.per_tensor_error
    assert r.per_tensor_error > 10 * r.per_group_error
    assert r.zeroed_fraction_per_tensor > 0.2


def test_fp8_scaled_quantization() -> None:
    x = _weight(4, 16, 5, 1000.0)
    vals, scale = qz.quantize_fp8(x, "e4m3", "channel")
    assert float(vals.abs().amax()) == 448.0
    rel = (vals * scale[:, None] - x).abs() / x.abs().amax(dim=1, keepdim=True)
    assert float(rel.max()) <= 2.0**-4 * 1.0001


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_matches_cpu_and_torch_casts() -> None:
    x = _all_fp32_samples(20_000)
    for fmt in (qz.FP8_E4M3, qz.FP8_E5M2):
        want = x.cuda().to(getattr(torch, fmt.torch_dtype)).float().cpu()
        got = qz.round_to_format(x.cuda(), fmt, saturate=False).cpu()
        in_range = torch.isfinite(got) | x.isnan()
        assert bool(_same(got, want)[in_range].all())
        assert bool(_same(got, qz.round_to_format(x, fmt, saturate=False)).all())
    w = _weight(8, 64, 0)
    for gran, gsz in [("tensor", None), ("channel", None), ("group", 16)]:
        q, s = qz.quantize_absmax(w, 4, gran, gsz)
        qc, sc = qz.quantize_absmax(w.cuda(), 4, gran, gsz)
        assert qc.is_cuda and torch.equal(qc.cpu(), q) and torch.equal(sc.cpu(), s)
    packed, _ = qz.quantize_int4_per_group(w, 16)
    assert torch.equal(qz.unpack_int4(packed.cuda()).cpu(), qz.unpack_int4(packed))
    e, sh = qz.mx_quantize(w)
    ec, shc = qz.mx_quantize(w.cuda())
    assert torch.equal(ec.cpu(), e) and torch.equal(shc.cpu(), sh)


def test_bits_per_weight() -> None:
    assert qz.bits_per_weight(4, 128) == 4.125
    assert qz.bits_per_weight(4, qz.MX_BLOCK, scale_bits=8) == 4.25
    assert qz.bits_per_weight(8, qz.MX_BLOCK, scale_bits=8) == 8.25
    assert qz.bits_per_weight(4, 64, scale_bits=16, zero_bits=16) == 4.5
    assert qz.bits_per_weight(8, None) == 8.0

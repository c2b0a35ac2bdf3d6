"""Tests for ``inferview.reference.w4a16``: the packing, the dequantization, the matmul and the
accuracy bound the ``w4a16-matmul`` grader applies (it must hold for every correct way of
computing the product and fail the classic mistakes)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from inferview.reference import w4a16 as w4


def _problem(m: int, n: int, k: int, g: int, seed: int, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randint(0, 16, (n, k), generator=gen)
    zeros = torch.randint(0, 16, (n, k // g), generator=gen).to(torch.uint8)
    scales = (torch.rand((n, k // g), generator=gen) * 0.18 + 0.02).to(dtype)
    x = torch.randn((m, k), generator=gen).to(dtype)
    return x, q, w4.pack_uint4(q), scales, zeros


def test_packing_low_nibble_first_unsigned() -> None:
    q = torch.tensor([[1, 2, 15, 0]])
    packed = w4.pack_uint4(q)
    assert packed.dtype == torch.uint8
    assert packed.tolist() == [[0x21, 0x0F]]
    assert w4.unpack_uint4(packed).tolist() == [[1, 2, 15, 0]]


@given(n=st.integers(1, 5), half=st.integers(1, 16), seed=st.integers(0, 2**16))
def test_unpack_inverts_pack(n: int, half: int, seed: int) -> None:
    q = torch.randint(0, 16, (n, 2 * half), generator=torch.Generator().manual_seed(seed))
    assert torch.equal(w4.unpack_uint4(w4.pack_uint4(q)).long(), q)


def test_dequantize_by_hand() -> None:
    q = torch.tensor([[0, 15, 8, 3]])
    zeros = torch.tensor([[8, 2]], dtype=torch.uint8)  # group_size 2
    scales = torch.tensor([[0.5, 0.25]])
    w = w4.dequantize_w4(w4.pack_uint4(q), scales, zeros, 2)
    assert w.tolist() == [[-4.0, 3.5, 1.5, 0.25]]


@given(n=st.integers(1, 4), groups=st.integers(1, 3), g=st.sampled_from([16, 32]),
       seed=st.integers(0, 2**16))
def test_quantize_roundtrip_within_half_a_step(n: int, groups: int, g: int, seed: int) -> None:
    w = torch.randn((n, groups * g), generator=torch.Generator().manual_seed(seed))
    qw = w4.quantize_w4(w, g, dtype=torch.float32)
    assert qw.packed.shape == (n, groups * g // 2) and qw.zeros.dtype == torch.uint8
    assert int(qw.zeros.max()) <= 15
    err = (w4.dequantize_w4(qw.packed, qw.scales, qw.zeros, g) - w).abs()
    step = qw.scales.repeat_interleave(g, dim=1)
    assert bool((err <= step / 2 * (1 + 1e-5) + 1e-7).all())


def test_matmul_is_x_times_w_transposed() -> None:
    x, _, packed, scales, zeros = _problem(3, 5, 64, 32, 0)
    w = w4.dequantize_w4(packed, scales, zeros, 32, torch.float64)
    exact = w4.w4a16_matmul(x, packed, scales, zeros, 32, compute_dtype=torch.float64)
    assert exact.dtype == torch.float64 and exact.shape == (3, 5)
    assert torch.allclose(exact, x.double() @ w.T, rtol=0, atol=1e-12)
    assert w4.w4a16_matmul(x, packed, scales, zeros, 32).dtype == torch.float32


def _kernel_like(x, q, scales, zeros, g, *, form: str, chunk: int, acc=torch.float32):
    """What a kernel computes: the weight dequantized in x's dtype by one of the two formulas,
    products and partial sums in ``acc`` over K chunks of ``chunk``, in reverse chunk order."""
    dt = x.dtype
    s = scales.repeat_interleave(g, dim=1)
    z = zeros.to(dt).repeat_interleave(g, dim=1)
    qd = q.to(dt)
    w = (qd - z) * s if form == "(q-z)*s" else qd * s - z * s
    y = torch.zeros((x.shape[0], q.shape[0]), dtype=acc)
    for k0 in reversed(range(0, x.shape[1], chunk)):
        y = y + (x[:, k0:k0 + chunk].to(acc) @ w[:, k0:k0 + chunk].to(acc).T).to(acc)
    return y.to(dt)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("form", ["(q-z)*s", "q*s-z*s"])
@pytest.mark.parametrize("chunk", [16, 128])
def test_bound_holds_for_correct_kernels(dtype, form, chunk) -> None:
    for seed in range(4):
        x, q, packed, scales, zeros = _problem(8, 24, 256, 32, seed, dtype)
        got = _kernel_like(x, q, scales, zeros, 32, form=form, chunk=chunk)
        exact = w4.w4a16_matmul(x, packed, scales, zeros, 32, compute_dtype=torch.float64)
        bound = w4.w4a16_error_bound(x, packed, scales, zeros, 32)
        assert bool(((got.double() - exact).abs() <= bound).all())


@pytest.mark.parametrize("mistake", ["nibbles swapped", "signed codes", "zero point 8", "per-row scale"])
def test_bound_rejects_classic_mistakes(mistake) -> None:
    x, q, packed, scales, zeros = _problem(4, 16, 128, 32, 1)
    if mistake == "nibbles swapped":
        q2 = torch.stack((q[:, 1::2], q[:, 0::2]), dim=-1).reshape(q.shape)
        got = x @ w4.dequantize_w4(w4.pack_uint4(q2), scales, zeros, 32).T
    elif mistake == "signed codes":
        qs = torch.where(q >= 8, q - 16, q).float()
        w = (qs - zeros.float().repeat_interleave(32, 1)) * scales.repeat_interleave(32, 1)
        got = x @ w.T
    elif mistake == "zero point 8":
        got = x @ w4.dequantize_w4(packed, scales, torch.full_like(zeros, 8), 32).T
    else:
        got = x @ w4.dequantize_w4(packed, scales[:, :1].expand_as(scales), zeros, 32).T
    exact = w4.w4a16_matmul(x, packed, scales, zeros, 32, compute_dtype=torch.float64)
    bound = w4.w4a16_error_bound(x, packed, scales, zeros, 32)
    assert not bool(((got.double() - exact).abs() <= bound).all())


def test_bound_rejects_a_float16_accumulator() -> None:
    """Partial sums that grow past float16's range then cancel: a float16 accumulator is far off."""
    n, k = 8, 256
    q = torch.cat([torch.full((n, k // 2), 15), torch.full((n, k // 2), 1)], dim=1)
    zeros = torch.full((n, k // 32), 8, dtype=torch.uint8)
    scales = torch.ones((n, k // 32), dtype=torch.float16)
    x = torch.full((2, k), 128.0, dtype=torch.float16)
    packed = w4.pack_uint4(q)
    got = _kernel_like(x, q, scales, zeros, 32, form="(q-z)*s", chunk=32, acc=torch.float16)
    exact = w4.w4a16_matmul(x, packed, scales, zeros, 32, compute_dtype=torch.float64)
    bound = w4.w4a16_error_bound(x, packed, scales, zeros, 32)
    assert float(exact.abs().max()) == 0.0
    assert not bool(((got.double() - exact).abs() <= bound).all())


def test_weight_bytes_4096_square_group_128() -> None:
    # 4096 * 4096 / 2 bytes of codes + 4096 * 32 groups * (2 bytes of scale + 1 of zero point)
    assert w4.weight_bytes(4096, 4096, 128) == 8_388_608 + 393_216

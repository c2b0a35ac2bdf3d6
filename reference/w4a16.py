"""W4A16 matmul reference: packed unsigned int4 weights with group-wise scales and zero points,
16-bit (or float32) activations, ``y = x @ dequant(W)^T``.

Layout (the ``w4a16-matmul`` challenge's):

- ``x``: ``(M, K)`` activations, float32 / float16 / bfloat16.
- ``w_packed``: uint8 ``(N, K // 2)``, the weight of an ``nn.Linear(K, N)`` (one row per output
  feature). Byte ``j`` of row ``n`` holds the codes of columns ``2j`` (low nibble, bits 0-3) and
  ``2j + 1`` (high nibble, bits 4-7); codes are *unsigned*, 0..15 (the packing of
  :func:`inferview.reference.quantization.pack_int4` with ``signed=False``).
- ``scales``: ``(N, K // group_size)`` in ``x``'s dtype; ``zeros``: uint8 ``(N, K // group_size)``,
  integer zero points 0..15, not packed.
- ``W[n, k] = (q[n, k] - zeros[n, k // group_size]) * scales[n, k // group_size]`` and
  ``y[m, n] = sum_k x[m, k] * W[n, k]``, returned in ``x``'s dtype.

Sources:
- Asymmetric ("zero-point") integer quantization, ``w = (q - z) * s``: Jacob et al. 2018,
  "Quantization and Training of Neural Networks for Efficient Integer-Arithmetic-Only Inference".
- 4-bit weights in groups along the input dimension, each group with its own scale and zero
  point, 16-bit activations, dequantized inside the matmul kernel: GPTQ (Frantar et al., ICLR 2023)
  and AWQ (Lin et al., MLSys 2024), whose kernels unpack the int4 weights in registers rather than
  writing an fp16 copy of the weight to memory.
- Rounding-error bound of an inner product (any summation order): Higham, "Accuracy and Stability
  of Numerical Algorithms", 2nd ed. (SIAM, 2002), section 3.1:
  ``|fl(x^T y) - x^T y| <= gamma_n |x|^T |y|`` with ``gamma_n = n u / (1 - n u)``.

Everything here is pure torch and device-agnostic.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from inferview.reference.quantization import pack_int4, quantize_zero_point, unpack_int4
from torch import Tensor


class W4Weight(NamedTuple):
    """A weight in the W4A16 layout."""

    packed: Tensor
    """uint8 ``(N, K // 2)``: two unsigned 4-bit codes per byte, column ``2j`` in the low nibble."""
    scales: Tensor
    """``(N, K // group_size)`` floating point."""
    zeros: Tensor
    """uint8 ``(N, K // group_size)``: the integer zero points, 0..15."""
    group_size: int
    """Consecutive input columns sharing one scale and one zero point."""


def pack_uint4(q: Tensor) -> Tensor:
    """Pack unsigned codes ``(N, K)`` in [0, 15] into uint8 ``(N, K // 2)``, column ``2j`` low."""
    return pack_int4(q, signed=False)


def unpack_uint4(packed: Tensor) -> Tensor:
    """uint8 ``(N, K // 2)`` -> int8 codes ``(N, K)`` in [0, 15] (the inverse of :func:`pack_uint4`)."""
    return unpack_int4(packed, signed=False)


def quantize_w4(w: Tensor, group_size: int, dtype: torch.dtype = torch.float16) -> W4Weight:
    """Round-to-nearest asymmetric 4-bit quantization of a ``(N, K)`` weight, one scale and one
    zero point per ``group_size`` columns of a row (:func:`quantize_zero_point` with 4 bits).

    The scales are returned in ``dtype`` (the activations' dtype in the matmul).
    """
    q, scale, zero = quantize_zero_point(w, bits=4, granularity="group", group_size=group_size)
    return W4Weight(pack_uint4(q), scale.to(dtype), zero.to(torch.uint8), group_size)


def _expand_groups(t: Tensor, group_size: int) -> Tensor:
    """``(N, G)`` -> ``(N, G * group_size)``: each group's value repeated over its columns."""
    return t.repeat_interleave(group_size, dim=1)


def dequantize_w4(w_packed: Tensor, scales: Tensor, zeros: Tensor, group_size: int,
                  dtype: torch.dtype = torch.float32) -> Tensor:
    """``(q - z) * s`` as a ``(N, K)`` tensor of ``dtype``.

    Computed in float64 when ``dtype`` is float64 (exact: ``q - z`` is a small integer and ``s`` has
    at most 24 significant bits), otherwise in float32 and then cast.
    """
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    q = unpack_uint4(w_packed).to(compute)  # (N, K)
    z = _expand_groups(zeros.to(compute), group_size)  # (N, K)
    s = _expand_groups(scales.to(compute), group_size)  # (N, K)
    return ((q - z) * s).to(dtype)


def w4a16_matmul(x: Tensor, w_packed: Tensor, scales: Tensor, zeros: Tensor, group_size: int,
                 *, compute_dtype: torch.dtype = torch.float32) -> Tensor:
    """``x @ dequant(W)^T``: ``(M, K) x (N, K) -> (M, N)``.

    With ``compute_dtype=float64`` the result is the exact one, returned in float64; otherwise the
    weight is dequantized and multiplied in ``compute_dtype`` and the result cast to ``x``'s dtype.
    """
    w = dequantize_w4(w_packed, scales, zeros, group_size, compute_dtype)  # (N, K)
    y = x.to(compute_dtype) @ w.T  # (M, N)
    return y if compute_dtype == torch.float64 else y.to(x.dtype)


def w4a16_error_bound(x: Tensor, w_packed: Tensor, scales: Tensor, zeros: Tensor,
                      group_size: int, *, margin: float = 2.0) -> Tensor:
    """The largest error, per output element, that a correct float32-accumulating kernel can make
    against the exact result: float64 ``(M, N)``.

    Three terms, each a worst case for *any* summation order (tiles, split-K, atomics):

    - accumulation in float32: ``gamma_K |x| @ |W|^T`` with ``gamma_K = K eps / (1 - K eps)``
      (Higham, section 3.1), using the machine epsilon ``eps = 2^-23`` rather than the unit
      roundoff ``eps / 2`` so that round-toward-zero accumulators (tensor cores) are covered too;
    - rounding the dequantized weight to ``x``'s dtype, by either formula a kernel may use:
      ``fl((q - z) * s)`` errs by at most ``u |W|``, ``fl(fl(q s) - fl(z s))`` by at most
      ``u (|W| + (q + z) s)``; the term is ``eps_x |x| @ (|W| + (q + z) s)^T``, twice the larger;
    - rounding the result to ``x``'s dtype: ``eps_x (|y| + the two terms above)``.

    The first two are multiplied by ``margin``; finally ``finfo(x.dtype).tiny`` is added for
    results in the subnormal range. Products of 16-bit inputs are exact in float32, so nothing
    else rounds.
    """
    eps32 = torch.finfo(torch.float32).eps
    eps_x = torch.finfo(x.dtype).eps
    k = x.shape[1]
    gamma = k * eps32 / (1.0 - k * eps32)
    xd = x.detach().to(torch.float64).abs()  # (M, K)
    q = unpack_uint4(w_packed).to(torch.float64)  # (N, K)
    z = _expand_groups(zeros.to(torch.float64), group_size)
    s = _expand_groups(scales.to(torch.float64), group_size).abs()
    w = ((q - z) * s).abs()
    accumulate = gamma * (xd @ w.T)
    dequant = eps_x * (xd @ (w + (q + z) * s).T)
    exact = w4a16_matmul(x, w_packed, scales, zeros, group_size, compute_dtype=torch.float64)
    body = margin * (accumulate + dequant)
    return body + eps_x * (exact.abs() + body) + torch.finfo(x.dtype).tiny


def weight_bytes(n: int, k: int, group_size: int, scale_bytes: int = 2) -> int:
    """Bytes a W4A16 kernel reads for the weight: ``n k / 2`` of codes plus one scale
    (``scale_bytes``) and one uint8 zero point per group."""
    return n * k // 2 + n * (k // group_size) * (scale_bytes + 1)

"""Fused residual add + RMSNorm reference, as a transformer block runs it between sublayers.

``new_residual = x + residual`` (rounded to the inputs' dtype: it *is* the next residual stream),
then ``normed = new_residual * rsqrt(mean(new_residual^2) + eps) * weight`` over the last
dimension, with the mean of squares and the normalisation computed in float32 and the result
rounded to the inputs' dtype.

Sources:
- RMSNorm: Zhang and Sennrich, "Root Mean Square Layer Normalization", NeurIPS 2019:
  ``a_i / RMS(a) * g_i`` with ``RMS(a) = sqrt(mean(a^2))``, no mean subtraction and no bias.
- Computing the statistics in float32 from 16-bit inputs, ``eps`` inside the square root:
  Hugging Face transformers, ``LlamaRMSNorm.forward`` (``hidden_states.to(torch.float32)``,
  ``variance = hidden_states.pow(2).mean(-1, keepdim=True)``,
  ``hidden_states * torch.rsqrt(variance + self.variance_epsilon)``; default ``eps=1e-6``).
- The fused residual add that returns the new residual: vLLM's ``fused_add_rms_norm`` kernel
  (``csrc/layernorm_kernels.cu``), which adds in the inputs' dtype, keeps the sum as the new
  residual and accumulates the sum of squares in float32. (vLLM writes both results in place;
  this module, like the challenge, returns new tensors.)
- Rounding-error bounds: Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed.
  (SIAM, 2002), section 3.1 (``gamma_n = n u / (1 - n u)`` for a sum of ``n`` terms).

Pure torch, device-agnostic.
"""

from __future__ import annotations

import torch
from torch import Tensor


def add_residual(x: Tensor, residual: Tensor) -> Tensor:
    """``x + residual`` in their dtype: one correctly rounded addition per element."""
    return x + residual


def rmsnorm(h: Tensor, weight: Tensor, eps: float = 1e-6, *,
            compute_dtype: torch.dtype = torch.float32) -> Tensor:
    """``h * rsqrt(mean(h^2, -1) + eps) * weight`` computed in ``compute_dtype``.

    Returns ``compute_dtype`` when it is float64 (the exact reference), otherwise ``h``'s dtype.
    """
    hc = h.to(compute_dtype)
    inv = torch.rsqrt(hc.pow(2).mean(dim=-1, keepdim=True) + eps)  # (..., 1)
    out = hc * inv * weight.to(compute_dtype)
    return out if compute_dtype == torch.float64 else out.to(h.dtype)


def fused_add_rmsnorm(x: Tensor, residual: Tensor, weight: Tensor, eps: float = 1e-6, *,
                      compute_dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor]:
    """``(normed, new_residual)`` with ``new_residual = x + residual`` (in the inputs' dtype) and
    ``normed = rmsnorm(new_residual, weight, eps)`` (float64 when ``compute_dtype`` is)."""
    new_residual = add_residual(x, residual)
    return rmsnorm(new_residual, weight, eps, compute_dtype=compute_dtype), new_residual


def rmsnorm_error_bound(new_residual: Tensor, weight: Tensor, eps: float = 1e-6, *,
                        margin: float = 2.0) -> Tensor:
    """The largest error, per element, of a correct float32 computation of
    ``rmsnorm(new_residual, weight, eps)`` against the exact one: float64, ``new_residual``'s shape.

    Relative to the exact element ``|y|``: the sum of ``H`` squares in float32, in any order, errs by
    at most ``gamma_(H+1)`` relatively (every term is non-negative); dividing by ``H``, adding
    ``eps`` and the reciprocal square root add a few more roundings (``rsqrt`` on a GPU is an
    approximation good to about 2 ulps), and the square root halves the relative error of its
    argument: ``(H + 1) / 2 + 6`` float32 epsilons. The products ``h * inv * w`` round in the
    output dtype once when done in float32 and cast at the store, twice in the Hugging Face order
    (``h * inv`` cast before multiplying by the weight); ``1.5 eps_out`` allows three such
    roundings. The whole is multiplied by ``margin``, and ``finfo(dtype).tiny`` covers results in
    the subnormal range.
    """
    h = new_residual.shape[-1]
    eps32 = torch.finfo(torch.float32).eps
    eps_out = torch.finfo(new_residual.dtype).eps
    rel = ((h + 1) / 2 + 6) * eps32 + 1.5 * eps_out
    exact = rmsnorm(new_residual, weight, eps, compute_dtype=torch.float64)
    return margin * rel * exact.abs() + torch.finfo(new_residual.dtype).tiny


def bytes_moved(num_tokens: int, hidden: int, itemsize: int) -> int:
    """Bytes a fused kernel must move: read ``x``, ``residual`` and ``weight``, write ``normed``
    and ``new_residual``."""
    return (4 * num_tokens * hidden + hidden) * itemsize

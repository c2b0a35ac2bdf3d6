"""Magnitude pruning reference: N:M (2:4) semi-structured and unstructured.

Sources:
- Mishra et al. 2021, "Accelerating Sparse Deep Neural Networks" (NVIDIA): the 2:4 pattern that
  Ampere and later Sparse Tensor Cores execute — in every group of 4 consecutive weights along the
  reduction (input) dimension at most 2 are non-zero. The hardware stores the 2 kept values plus a
  2-bit index each (:func:`compress_2_4`), halving the weight bytes and skipping the zero products,
  for up to 2x math throughput on the GEMM.
- Han et al. 2015, "Learning both Weights and Connections for Efficient Neural Networks": magnitude
  pruning.

Why unstructured sparsity usually gives no speed-up: a pruned weight stored in a dense tensor is
still a number — the matrix keeps its shape, every zero is read from memory and multiplied like any
other value, so memory traffic and arithmetic are unchanged. Skipping zeros needs a sparse format
(indices per non-zero) and irregular, data-dependent access that dense GEMM hardware cannot exploit;
sparse kernels only win at very high sparsity (well above 90 % for typical GPU SpMM). A fixed
pattern the hardware knows (2:4), or structured removal that actually shrinks the tensors (whole
heads, channels, layers), is what turns zeros into time saved.

Conventions: weights are ``(out_features, in_features)`` as in ``torch.nn.Linear``; groups run along
the last (input) dimension, which is the reduction dimension of ``x @ w.T``. Ties between equal
magnitudes go to the lower index (kept first, pruned last), via a stable sort.
"""

from __future__ import annotations

import torch
from torch import Tensor


def prune_n_m(w: Tensor, n: int = 2, m: int = 4) -> tuple[Tensor, Tensor]:
    """Keep the ``n`` largest-magnitude entries in every group of ``m`` consecutive entries of the
    last dimension (which must be a multiple of ``m``); ties -> the lower index is kept.

    ``w``: ``(..., in)``. Returns ``(pruned w (same dtype), mask bool (same shape))``.
    """
    if w.shape[-1] % m:
        raise ValueError(f"last dimension {w.shape[-1]} is not a multiple of {m}")
    groups = w.reshape(*w.shape[:-1], w.shape[-1] // m, m)  # (..., in/m, m)
    order = torch.sort(groups.abs(), dim=-1, descending=True, stable=True).indices  # (..., in/m, m)
    mask = torch.zeros_like(groups, dtype=torch.bool)
    mask.scatter_(-1, order[..., :n], True)  # the n largest |w| of each group
    mask = mask.reshape(w.shape)
    return w * mask, mask


def prune_2_4(w: Tensor) -> tuple[Tensor, Tensor]:
    """2:4 semi-structured magnitude pruning along the input dimension (see :func:`prune_n_m`)."""
    return prune_n_m(w, 2, 4)


def is_n_m_sparse(t: Tensor, n: int = 2, m: int = 4) -> bool:
    """True when every group of ``m`` consecutive entries of the last dimension has at most ``n``
    non-zeros (``t`` may be a bool mask or a weight); False if the last dim is not a multiple of
    ``m``."""
    if t.dim() == 0 or t.shape[-1] % m:
        return False
    nz = (t != 0).reshape(*t.shape[:-1], t.shape[-1] // m, m).sum(dim=-1)  # (..., in/m)
    return bool((nz <= n).all())


def is_2_4_sparse(t: Tensor) -> bool:
    """The 2:4 validity check: at most 2 non-zeros in every group of 4 along the last dimension."""
    return is_n_m_sparse(t, 2, 4)


def compress_2_4(w: Tensor) -> tuple[Tensor, Tensor]:
    """The storage a Sparse Tensor Core reads: for a 2:4-sparse ``w (out, in)``, the two kept values
    of each group ``(out, in/2)`` and their positions in the group ``(out, in/2)`` int8 in [0, 3]
    (2 bits each in hardware metadata), in increasing position order. Groups with fewer than two
    non-zeros store explicit zeros at the lowest free positions."""
    if not is_2_4_sparse(w):
        raise ValueError("weight is not 2:4 sparse")
    out, n = w.shape
    g = w.reshape(out, n // 4, 4)  # (out, in/4, 4)
    nz = g != 0
    # order positions: non-zeros first (stable, so by position), then zeros by position
    key = (~nz).to(torch.int8)
    pos = torch.sort(key, dim=-1, stable=True).indices[..., :2]  # (out, in/4, 2)
    pos = torch.sort(pos, dim=-1).values
    vals = torch.gather(g, -1, pos)
    return vals.reshape(out, n // 2), pos.to(torch.int8).reshape(out, n // 2)


def decompress_2_4(values: Tensor, positions: Tensor) -> Tensor:
    """Inverse of :func:`compress_2_4`: ``(out, in/2)`` values and positions -> dense ``(out, in)``."""
    out, half = values.shape
    dense = torch.zeros(out, half // 2, 4, dtype=values.dtype, device=values.device)
    dense.scatter_(-1, positions.reshape(out, half // 2, 2).long(), values.reshape(out, half // 2, 2))
    return dense.reshape(out, half * 2)


def prune_unstructured(w: Tensor, sparsity: float) -> tuple[Tensor, Tensor]:
    """Global magnitude pruning: zero the ``floor(sparsity * numel)`` smallest ``|w|`` (ties -> the
    lower flat index is pruned first). Returns ``(pruned w, keep mask)``.

    The result has the same shape and dtype — and, run through a dense GEMM, the same cost."""
    if not 0.0 <= sparsity <= 1.0:
        raise ValueError(f"sparsity must be in [0, 1], got {sparsity}")
    flat = w.reshape(-1)
    n_prune = int(sparsity * flat.numel())
    order = torch.sort(flat.abs(), stable=True).indices  # ascending magnitude
    keep = torch.ones_like(flat, dtype=torch.bool)
    keep[order[:n_prune]] = False
    keep = keep.reshape(w.shape)
    return w * keep, keep


def sparse_bytes_2_4(out_features: int, in_features: int, bytes_per_value: int = 2) -> int:
    """Bytes of a 2:4-compressed weight: half the values plus 2 bits of metadata per kept value."""
    kept = out_features * in_features // 2
    return kept * bytes_per_value + (kept * 2 + 7) // 8

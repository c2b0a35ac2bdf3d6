"""Challenge split-k-decode: Flash-Decoding, split the keys over programs and merge by log-sum-exp.

`inferview grade split-k-decode <this file>` runs the checks (on a CPU through Triton's
interpreter, which must be chosen before `import triton`).
"""

from __future__ import annotations

import math
import os

import torch
from torch import Tensor

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402, F401
import triton.language as tl  # noqa: E402


@triton.jit
def partials_kernel(
    q_ptr, k_ptr, v_ptr, lens_ptr, o_ptr, lse_ptr,  # q, k, v, seq_lens, o_part, lse_part
    stride_qb, stride_qh, stride_qd,  # q (B, Hq, D)
    stride_kb, stride_kh, stride_kt, stride_kd,  # k (B, Hkv, T, D)
    stride_vb, stride_vh, stride_vt, stride_vd,  # v (B, Hkv, T, D)
    stride_ob, stride_oh, stride_os, stride_od,  # o_part (B, Hq, S, D)
    stride_lb, stride_lh, stride_ls,  # lse_part (B, Hq, S)
    group, chunk, sm_scale,  # Hq // Hkv, ceil(T / num_splits), the softmax scale
    TILE: tl.constexpr, HEAD_DIM: tl.constexpr,
):
    # 1. This program's sequence, head and split; its key range [lo, hi), cut at seq_len.
    # 2. Online softmax over the range, TILE keys at a time.
    # 3. Store o_s = acc / l and lse_s = m + log(l), or 0 and -inf when the range is empty.
    pass


@triton.jit
def merge_kernel(o_ptr, lse_ptr, out_ptr, lse_out_ptr, num_splits,
                 stride_ob, stride_oh, stride_os, stride_od, stride_lb, stride_lh, stride_ls,
                 stride_rb, stride_rh, stride_rd, stride_eb, stride_eh,
                 S_PAD: tl.constexpr, HEAD_DIM: tl.constexpr):
    # Weights exp(lse_s - max lse), normalised; L = max lse + log(sum of the weights).
    pass


def split_k_partials(q: Tensor, k: Tensor, v: Tensor, seq_lens: Tensor, num_splits: int,
                     sm_scale: float | None = None) -> tuple[Tensor, Tensor]:
    """q (B, Hq, D), k, v (B, Hkv, T, D), seq_lens (B,) int32 ->
    (o_part (B, Hq, num_splits, D), lse_part (B, Hq, num_splits)), both float32."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale  # noqa: F841
    raise NotImplementedError("split_k_partials: allocate o_part and lse_part, launch the kernel")


def merge_partials(o_part: Tensor, lse_part: Tensor) -> tuple[Tensor, Tensor]:
    """(B, Hq, S, D), (B, Hq, S) float32 -> (out (B, Hq, D), lse (B, Hq)), both float32."""
    raise NotImplementedError("merge_partials: allocate out and lse, launch the merge kernel")


def split_k_decode(q: Tensor, k: Tensor, v: Tensor, seq_lens: Tensor, num_splits: int,
                   sm_scale: float | None = None) -> Tensor:
    """split_k_partials, then merge_partials; the output (B, Hq, D) in q's dtype."""
    raise NotImplementedError("split_k_decode: the partials, then the merge")

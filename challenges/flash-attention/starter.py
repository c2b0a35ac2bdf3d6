"""Challenge flash-attention: a Triton forward kernel with an online softmax.

`inferview grade flash-attention <this file>` runs the checks (on a CPU through Triton's
interpreter, which must be chosen before `import triton`).
"""

from __future__ import annotations

import math
import os

import torch
from torch import Tensor

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def flash_attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr,  # (B, H, Tq, D), (B, H, Tk, D), (B, H, Tk, D), (B, H, Tq, D)
    stride_qb, stride_qh, stride_qm, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_ob, stride_oh, stride_om, stride_od,
    num_heads, seq_q, seq_k, sm_scale,
    CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
):
    # 1. Find this program's query block and (batch, head); load the query tile.
    # 2. Loop over key blocks: scores, masks, running max / sum / accumulator.
    # 3. Normalise and store.
    pass


def flash_attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False,
                    sm_scale: float | None = None) -> Tensor:
    """q (B, H, Tq, D), k, v (B, H, Tk, D) -> (B, H, Tq, D) in q's dtype."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale  # noqa: F841
    raise NotImplementedError("flash_attention: allocate the output, compute the grid, launch the kernel")

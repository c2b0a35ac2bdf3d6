"""Challenge paged-decode-attention: decode attention that reads K/V through a block table.

`inferview grade paged-decode-attention <this file>` runs the checks (on a CPU through Triton's
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
def paged_decode_kernel(
    q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, o_ptr,  # q, k_pool, v_pool, block_tables, seq_lens, out
    stride_qb, stride_qh, stride_qd,  # q (B, Hq, D)
    stride_kn, stride_ks, stride_kh, stride_kd,  # k_pool (num_blocks, block_size, Hkv, D)
    stride_vn, stride_vs, stride_vh, stride_vd,  # v_pool
    stride_tb, stride_tm,  # block_tables (B, max_blocks)
    stride_ob, stride_oh, stride_od,  # out (B, Hq, D)
    group, sm_scale,  # Hq // Hkv, the softmax scale
    BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr,
):
    # 1. Which sequence and head is this program's? Which kv head does it read? Load q and seq_len.
    # 2. Loop over the sequence's pages: block id from the table, keys and values from the pool,
    #    masked past seq_len; online softmax.
    # 3. Normalise and store.
    pass


def paged_decode_attention(q: Tensor, k_pool: Tensor, v_pool: Tensor, block_tables: Tensor,
                           seq_lens: Tensor, sm_scale: float | None = None) -> Tensor:
    """q (B, Hq, D); k_pool, v_pool (num_blocks, block_size, Hkv, D); block_tables (B, max_blocks)
    int32; seq_lens (B,) int32 -> (B, Hq, D) in q's dtype."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale  # noqa: F841
    raise NotImplementedError("paged_decode_attention: allocate the output, launch the kernel")

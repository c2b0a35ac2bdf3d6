"""Wrong: loads the slots past seq_len as 0 (a masked load), then gives their scores a finite
penalty of -1e4 instead of -inf. A zeroed slot scores -1e4, which is harmless while the visible
scores are ordinary and takes all the weight once every visible score is below about -1e4."""

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
def paged_decode_kernel(
    q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, o_ptr,
    stride_qb, stride_qh, stride_qd,
    stride_kn, stride_ks, stride_kh, stride_kd,
    stride_vn, stride_vs, stride_vh, stride_vd,
    stride_tb, stride_tm,
    stride_ob, stride_oh, stride_od,
    group, sm_scale,
    BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr,
):
    b = tl.program_id(0)
    h = tl.program_id(1)
    kvh = h // group
    d = tl.arange(0, HEAD_DIM)
    s = tl.arange(0, BLOCK_SIZE)
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + d * stride_qd).to(tl.float32)
    seq_len = tl.load(lens_ptr + b)
    n_pages = tl.cdiv(seq_len, BLOCK_SIZE)
    m = tl.full((), float("-inf"), tl.float32)
    l = tl.zeros((), tl.float32)
    acc = tl.zeros((HEAD_DIM,), tl.float32)
    for p in range(0, n_pages):
        blk = tl.load(table_ptr + b * stride_tb + p * stride_tm).to(tl.int64)
        pos = p * BLOCK_SIZE + s
        valid = pos < seq_len
        k = tl.load(k_ptr + blk * stride_kn + s[:, None] * stride_ks + kvh * stride_kh
                    + d[None, :] * stride_kd, mask=valid[:, None], other=0.0).to(tl.float32)
        v = tl.load(v_ptr + blk * stride_vn + s[:, None] * stride_vs + kvh * stride_vh
                    + d[None, :] * stride_vd, mask=valid[:, None], other=0.0).to(tl.float32)
        sc = tl.sum(k * q[None, :], 1) * sm_scale
        sc = tl.where(valid, sc, sc - 10000.0)
        m_new = tl.maximum(m, tl.max(sc, 0))
        alpha = tl.exp(m - m_new)
        pexp = tl.exp(sc - m_new)
        l = l * alpha + tl.sum(pexp, 0)
        acc = acc * alpha + tl.sum(pexp[:, None] * v, 0)
        m = m_new
    out = acc / l
    tl.store(o_ptr + b * stride_ob + h * stride_oh + d * stride_od,
             out.to(o_ptr.dtype.element_ty))


def paged_decode_attention(q: Tensor, k_pool: Tensor, v_pool: Tensor, block_tables: Tensor,
                           seq_lens: Tensor, sm_scale: float | None = None) -> Tensor:
    scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale
    B, Hq, D = q.shape
    _, bs, Hkv, _ = k_pool.shape
    out = torch.empty((B, Hq, D), dtype=q.dtype, device=q.device)
    paged_decode_kernel[(B, Hq)](
        q, k_pool, v_pool, block_tables, seq_lens, out,
        q.stride(0), q.stride(1), q.stride(2),
        k_pool.stride(0), k_pool.stride(1), k_pool.stride(2), k_pool.stride(3),
        v_pool.stride(0), v_pool.stride(1), v_pool.stride(2), v_pool.stride(3),
        block_tables.stride(0), block_tables.stride(1),
        out.stride(0), out.stride(1), out.stride(2),
        Hq // Hkv, float(scale),
        BLOCK_SIZE=bs, HEAD_DIM=D,
    )
    return out

"""Wrong: the merge loads its power-of-two tile of splits with lse 0 in the lanes past
num_splits instead of -inf, so those padding lanes take part in the maximum and the sum."""

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
def partials_kernel(
    q_ptr, k_ptr, v_ptr, lens_ptr, o_ptr, lse_ptr,
    stride_qb, stride_qh, stride_qd,
    stride_kb, stride_kh, stride_kt, stride_kd,
    stride_vb, stride_vh, stride_vt, stride_vd,
    stride_ob, stride_oh, stride_os, stride_od,
    stride_lb, stride_lh, stride_ls,
    group, chunk, sm_scale,
    TILE: tl.constexpr, HEAD_DIM: tl.constexpr,
):
    b = tl.program_id(0)
    h = tl.program_id(1)
    sp = tl.program_id(2)
    kvh = h // group
    d = tl.arange(0, HEAD_DIM)
    t = tl.arange(0, TILE)
    n = tl.load(lens_ptr + b)
    lo = sp * chunk
    hi = tl.minimum(lo + chunk, n)
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + d * stride_qd).to(tl.float32)
    m = tl.full((), float("-inf"), tl.float32)
    l = tl.zeros((), tl.float32)
    acc = tl.zeros((HEAD_DIM,), tl.float32)
    for start in range(lo, hi, TILE):
        j = start + t
        ok = j < hi
        k = tl.load(k_ptr + b * stride_kb + kvh * stride_kh + j[:, None] * stride_kt + d[None, :] * stride_kd,
                    mask=ok[:, None], other=0.0).to(tl.float32)
        v = tl.load(v_ptr + b * stride_vb + kvh * stride_vh + j[:, None] * stride_vt + d[None, :] * stride_vd,
                    mask=ok[:, None], other=0.0).to(tl.float32)
        sc = tl.where(ok, tl.sum(k * q[None, :], 1) * sm_scale, float("-inf"))
        mn = tl.maximum(m, tl.max(sc, 0))
        a = tl.exp(m - mn)
        pe = tl.exp(sc - mn)
        l = l * a + tl.sum(pe, 0)
        acc = acc * a + tl.sum(pe[:, None] * v, 0)
        m = mn
    has = l > 0
    o = tl.where(has, acc / tl.where(has, l, 1.0), 0.0)
    lse = tl.where(has, m + tl.log(tl.where(has, l, 1.0)), float("-inf"))
    tl.store(o_ptr + b * stride_ob + h * stride_oh + sp * stride_os + d * stride_od, o)
    tl.store(lse_ptr + b * stride_lb + h * stride_lh + sp * stride_ls, lse)


@triton.jit
def merge_kernel(o_ptr, lse_ptr, out_ptr, lse_out_ptr, num_splits,
                 stride_ob, stride_oh, stride_os, stride_od, stride_lb, stride_lh, stride_ls,
                 stride_rb, stride_rh, stride_rd, stride_eb, stride_eh,
                 S_PAD: tl.constexpr, HEAD_DIM: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    s = tl.arange(0, S_PAD)
    d = tl.arange(0, HEAD_DIM)
    sm = s < num_splits
    lse = tl.load(lse_ptr + b * stride_lb + h * stride_lh + s * stride_ls, mask=sm, other=0.0)
    o = tl.load(o_ptr + b * stride_ob + h * stride_oh + s[:, None] * stride_os + d[None, :] * stride_od,
                mask=sm[:, None], other=0.0)
    mx = tl.max(lse, 0)
    w = tl.exp(lse - mx)
    tot = tl.sum(w, 0)
    out = tl.sum(w[:, None] * o, 0) / tot
    tl.store(out_ptr + b * stride_rb + h * stride_rh + d * stride_rd, out)
    tl.store(lse_out_ptr + b * stride_eb + h * stride_eh, mx + tl.log(tot))


def split_k_partials(q: Tensor, k: Tensor, v: Tensor, seq_lens: Tensor, num_splits: int,
                     sm_scale: float | None = None) -> tuple[Tensor, Tensor]:
    scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale
    B, Hq, D = q.shape
    Hkv, T = k.shape[1], k.shape[2]
    chunk = triton.cdiv(T, num_splits)
    o_part = torch.empty((B, Hq, num_splits, D), dtype=torch.float32, device=q.device)
    lse_part = torch.empty((B, Hq, num_splits), dtype=torch.float32, device=q.device)
    partials_kernel[(B, Hq, num_splits)](
        q, k, v, seq_lens, o_part, lse_part,
        q.stride(0), q.stride(1), q.stride(2),
        k.stride(0), k.stride(1), k.stride(2), k.stride(3),
        v.stride(0), v.stride(1), v.stride(2), v.stride(3),
        o_part.stride(0), o_part.stride(1), o_part.stride(2), o_part.stride(3),
        lse_part.stride(0), lse_part.stride(1), lse_part.stride(2),
        Hq // Hkv, chunk, float(scale),
        TILE=16, HEAD_DIM=D,
    )
    return o_part, lse_part


def merge_partials(o_part: Tensor, lse_part: Tensor) -> tuple[Tensor, Tensor]:
    B, Hq, S, D = o_part.shape
    out = torch.empty((B, Hq, D), dtype=torch.float32, device=o_part.device)
    lse = torch.empty((B, Hq), dtype=torch.float32, device=o_part.device)
    merge_kernel[(B, Hq)](
        o_part, lse_part, out, lse, S,
        o_part.stride(0), o_part.stride(1), o_part.stride(2), o_part.stride(3),
        lse_part.stride(0), lse_part.stride(1), lse_part.stride(2),
        out.stride(0), out.stride(1), out.stride(2), lse.stride(0), lse.stride(1),
        S_PAD=triton.next_power_of_2(S), HEAD_DIM=D,
    )
    return out, lse


def split_k_decode(q: Tensor, k: Tensor, v: Tensor, seq_lens: Tensor, num_splits: int,
                   sm_scale: float | None = None) -> Tensor:
    o_part, lse_part = split_k_partials(q, k, v, seq_lens, num_splits, sm_scale)
    out, _ = merge_partials(o_part, lse_part)
    return out.to(q.dtype)

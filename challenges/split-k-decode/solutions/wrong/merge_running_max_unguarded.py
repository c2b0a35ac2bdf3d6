"""Wrong: the merge folds in one split at a time with a running maximum started at -inf, and does
not guard exp(-inf - -inf) = NaN: a row whose first split is empty comes out NaN."""

from __future__ import annotations
import math
import os

import torch
from torch import Tensor

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


@triton.jit
def _part(q_ptr, k_ptr, v_ptr, n_ptr, o_ptr, l_ptr, sqb, sqh, sqd, skb, skh, skt, skd, svb, svh, svt, svd,
          sob, soh, sos, sod, slb, slh, sls, group, chunk, qk, TILE: tl.constexpr, D: tl.constexpr,
          GP: tl.constexpr):
    b = tl.program_id(0)
    kvh = tl.program_id(1)
    sp = tl.program_id(2)
    g = tl.arange(0, GP)
    gm = g < group
    hs = kvh * group + g
    d = tl.arange(0, D)
    t = tl.arange(0, TILE)
    n = tl.load(n_ptr + b)
    lo = sp * chunk
    hi = tl.minimum(lo + chunk, n)
    q = tl.load(q_ptr + b * sqb + hs[:, None] * sqh + d[None, :] * sqd, mask=gm[:, None], other=0.0).to(tl.float32)
    m = tl.full((GP,), float("-inf"), tl.float32)
    l = tl.zeros((GP,), tl.float32)
    acc = tl.zeros((GP, D), tl.float32)
    for st in range(lo, hi, TILE):
        j = st + t
        ok = j < hi
        k = tl.load(k_ptr + b * skb + kvh * skh + j[:, None] * skt + d[None, :] * skd, mask=ok[:, None], other=0.0).to(tl.float32)
        v = tl.load(v_ptr + b * svb + kvh * svh + j[:, None] * svt + d[None, :] * svd, mask=ok[:, None], other=0.0).to(tl.float32)
        sc = tl.sum(q[:, None, :] * k[None, :, :], 2) * qk
        sc = tl.where(ok[None, :], sc, float("-inf"))
        mn = tl.maximum(m, tl.max(sc, 1))
        a = tl.exp2(m - mn)
        pe = tl.exp2(sc - mn[:, None])
        l = l * a + tl.sum(pe, 1)
        acc = acc * a[:, None] + tl.sum(pe[:, :, None] * v[None, :, :], 1)
        m = mn
    nz = l > 0
    ls = tl.where(nz, l, 1.0)
    o = tl.where(nz[:, None], acc / ls[:, None], 0.0)
    lse = tl.where(nz, (m + tl.log2(ls)) * 0.6931471805599453, float("-inf"))
    tl.store(o_ptr + b * sob + hs[:, None] * soh + sp * sos + d[None, :] * sod, o, mask=gm[:, None])
    tl.store(l_ptr + b * slb + hs * slh + sp * sls, lse, mask=gm)


@triton.jit
def _merge(o_ptr, l_ptr, r_ptr, e_ptr, S, sob, soh, sos, sod, slb, slh, sls, srb, srh, srd, seb, seh,
           D: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    d = tl.arange(0, D)
    m = tl.full((), float("-inf"), tl.float32)
    tot = tl.zeros((), tl.float32)
    acc = tl.zeros((D,), tl.float32)
    for s in range(0, S):
        x = tl.load(l_ptr + b * slb + h * slh + s * sls)
        o = tl.load(o_ptr + b * sob + h * soh + s * sos + d * sod)
        mn = tl.maximum(m, x)
        a = tl.exp(m - mn)
        w = tl.exp(x - mn)
        tot = tot * a + w
        acc = acc * a + w * o
        m = mn
    tl.store(r_ptr + b * srb + h * srh + d * srd, acc / tot)
    tl.store(e_ptr + b * seb + h * seh, m + tl.log(tot))


def split_k_partials(q: Tensor, k: Tensor, v: Tensor, seq_lens: Tensor, num_splits: int,
                     sm_scale: float | None = None) -> tuple[Tensor, Tensor]:
    B, Hq, D = q.shape
    Hkv, T = k.shape[1], k.shape[2]
    scale = 1.0 / math.sqrt(D) if sm_scale is None else float(sm_scale)
    G = Hq // Hkv
    chunk = -(-T // num_splits)
    o = torch.empty((B, Hq, num_splits, D), dtype=torch.float32, device=q.device)
    lse = torch.empty((B, Hq, num_splits), dtype=torch.float32, device=q.device)
    _part[(B, Hkv, num_splits)](q, k, v, seq_lens, o, lse, *q.stride(), *k.stride(), *v.stride(), *o.stride(),
                                *lse.stride(), G, chunk, scale * LOG2E, TILE=16, D=D, GP=triton.next_power_of_2(G))
    return o, lse


def merge_partials(o_part: Tensor, lse_part: Tensor) -> tuple[Tensor, Tensor]:
    B, Hq, S, D = o_part.shape
    out = torch.empty((B, Hq, D), dtype=torch.float32, device=o_part.device)
    lse = torch.empty((B, Hq), dtype=torch.float32, device=o_part.device)
    _merge[(B, Hq)](o_part, lse_part, out, lse, S, *o_part.stride(), *lse_part.stride(), *out.stride(),
                    *lse.stride(), D=D)
    return out, lse


def split_k_decode(q: Tensor, k: Tensor, v: Tensor, seq_lens: Tensor, num_splits: int,
                   sm_scale: float | None = None) -> Tensor:
    o, lse = split_k_partials(q, k, v, seq_lens, num_splits, sm_scale)
    return merge_partials(o, lse)[0].to(q.dtype)

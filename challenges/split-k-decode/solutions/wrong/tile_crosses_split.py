"""Wrong: masks each tile of keys by seq_len only, not by the split's end, so a split's last tile also counts keys of the next split."""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _partials(q_ptr, k_ptr, v_ptr, len_ptr, o_ptr, lse_ptr,
              sqb, sqh, sqd, skb, skh, skt, skd, svb, svh, svt, svd,
              sob, soh, sos, sod, slb, slh, sls,
              group, chunk, scale, TILE: tl.constexpr, D: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    s = tl.program_id(2)
    kvh = h // group
    rd = tl.arange(0, D)
    rt = tl.arange(0, TILE)
    n = tl.load(len_ptr + b)
    lo = tl.minimum(s * chunk, n)
    hi = tl.minimum(lo + chunk, n)
    q = tl.load(q_ptr + b * sqb + h * sqh + rd * sqd).to(tl.float32)
    m = tl.full([1], float("-inf"), tl.float32)
    den = tl.zeros([1], tl.float32)
    acc = tl.zeros([D], tl.float32)
    for t0 in range(lo, hi, TILE):
        t = t0 + rt
        ok = t < n
        k = tl.load(k_ptr + b * skb + kvh * skh + t[:, None] * skt + rd[None, :] * skd,
                    mask=ok[:, None], other=0.0).to(tl.float32)
        sc = tl.where(ok, tl.sum(k * q[None, :], 1) * scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(sc, 0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(sc - m_new)
        den = den * alpha + tl.sum(p, 0)
        v = tl.load(v_ptr + b * svb + kvh * svh + t[:, None] * svt + rd[None, :] * svd,
                    mask=ok[:, None], other=0.0).to(tl.float32)
        acc = acc * alpha + tl.sum(p[:, None] * v, 0)
        m = m_new
    has_keys = den > 0.0
    out = tl.where(has_keys, acc / tl.where(has_keys, den, 1.0), 0.0)
    lse = tl.where(has_keys, m + tl.log(tl.where(has_keys, den, 1.0)), float("-inf"))
    tl.store(o_ptr + b * sob + h * soh + s * sos + rd * sod, out)
    tl.store(lse_ptr + b * slb + h * slh + s * sls + tl.arange(0, 1), lse)


@triton.jit
def _merge(o_ptr, lse_ptr, out_ptr, lse_out_ptr, num_splits,
           sob, soh, sos, sod, slb, slh, sls, srb, srh, srd, seb, seh,
           S_PAD: tl.constexpr, D: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    rs = tl.arange(0, S_PAD)
    rd = tl.arange(0, D)
    ok = rs < num_splits
    lse = tl.load(lse_ptr + b * slb + h * slh + rs * sls, mask=ok, other=float("-inf"))
    m = tl.max(lse, 0)  # finite: at least one split of the row has keys
    w = tl.exp(lse - m)  # an empty split (-inf) gets weight 0
    total = tl.sum(w, 0)
    o = tl.load(o_ptr + b * sob + h * soh + rs[:, None] * sos + rd[None, :] * sod,
                mask=ok[:, None], other=0.0)
    out = tl.sum(w[:, None] * o, 0) / total
    tl.store(out_ptr + b * srb + h * srh + rd * srd, out)
    tl.store(lse_out_ptr + b * seb + h * seh + tl.arange(0, 1), m + tl.log(total) + tl.zeros([1], tl.float32))


def split_k_partials(q, k, v, seq_lens, num_splits, sm_scale=None):
    B, Hq, D = q.shape
    Hkv, T = k.shape[1], k.shape[2]
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    chunk = -(-T // num_splits)
    o = torch.empty((B, Hq, num_splits, D), dtype=torch.float32, device=q.device)
    lse = torch.empty((B, Hq, num_splits), dtype=torch.float32, device=q.device)
    _partials[(B, Hq, num_splits)](
        q, k, v, seq_lens, o, lse, *q.stride(), *k.stride(), *v.stride(), *o.stride(), *lse.stride(),
        Hq // Hkv, chunk, scale, TILE=16, D=D)
    return o, lse


def merge_partials(o_part, lse_part):
    B, Hq, S, D = o_part.shape
    out = torch.empty((B, Hq, D), dtype=torch.float32, device=o_part.device)
    lse = torch.empty((B, Hq), dtype=torch.float32, device=o_part.device)
    _merge[(B, Hq)](o_part, lse_part, out, lse, S, *o_part.stride(), *lse_part.stride(),
                    *out.stride(), *lse.stride(), S_PAD=triton.next_power_of_2(S), D=D)
    return out, lse


def split_k_decode(q, k, v, seq_lens, num_splits, sm_scale=None):
    o, lse = split_k_partials(q, k, v, seq_lens, num_splits, sm_scale)
    return merge_partials(o, lse)[0].to(q.dtype)

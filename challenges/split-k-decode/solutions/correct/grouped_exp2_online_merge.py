"""One program per (sequence, kv head, split) serves the whole group of query heads that share the
kv head, in base 2 (exp2 with log2(e) folded into the scale), and converts its log-sum-exp to
natural log when it stores it. The merge walks the splits one at a time with a running maximum,
guarding the all-empty-so-far case (-inf - -inf would be NaN)."""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


@triton.jit
def _group_partials(q_ptr, k_ptr, v_ptr, len_ptr, o_ptr, lse_ptr,
                    sqb, sqh, sqd, skb, skh, skt, skd, svb, svh, svt, svd,
                    sob, soh, sos, sod, slb, slh, sls, chunk, qk_scale, LN2_C,
                    GROUP: tl.constexpr, G_PAD: tl.constexpr, TILE: tl.constexpr, D: tl.constexpr):
    b = tl.program_id(0)
    kvh = tl.program_id(1)
    s = tl.program_id(2)
    rg = tl.arange(0, G_PAD)
    rd = tl.arange(0, D)
    rt = tl.arange(0, TILE)
    heads = kvh * GROUP + rg
    hm = rg < GROUP
    n = tl.load(len_ptr + b)
    lo = tl.minimum(s * chunk, n)
    hi = tl.minimum(lo + chunk, n)
    q = tl.load(q_ptr + b * sqb + heads[:, None] * sqh + rd[None, :] * sqd,
                mask=hm[:, None], other=0.0).to(tl.float32)
    m = tl.full([G_PAD], float("-inf"), tl.float32)
    den = tl.zeros([G_PAD], tl.float32)
    acc = tl.zeros([G_PAD, D], tl.float32)
    for t0 in range(lo, hi, TILE):
        t = t0 + rt
        ok = t < hi
        k = tl.load(k_ptr + b * skb + kvh * skh + t[:, None] * skt + rd[None, :] * skd,
                    mask=ok[:, None], other=0.0).to(tl.float32)
        sc = tl.sum(q[:, None, :] * k[None, :, :], 2) * qk_scale  # (G, TILE), base 2
        sc = tl.where(ok[None, :], sc, float("-inf"))
        m_new = tl.maximum(m, tl.max(sc, 1))
        alpha = tl.exp2(m - m_new)
        p = tl.exp2(sc - m_new[:, None])
        den = den * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + b * svb + kvh * svh + t[:, None] * svt + rd[None, :] * svd,
                    mask=ok[:, None], other=0.0).to(tl.float32)
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], 1)
        m = m_new
    empty = hi <= lo
    safe = tl.where(den > 0.0, den, 1.0)
    out = tl.where(empty, 0.0, acc / safe[:, None])
    lse = tl.where(empty, float("-inf"), (m + tl.log2(safe)) * LN2_C)
    tl.store(o_ptr + b * sob + heads[:, None] * soh + s * sos + rd[None, :] * sod, out, mask=hm[:, None])
    tl.store(lse_ptr + b * slb + heads * slh + s * sls, lse, mask=hm)


@triton.jit
def _online_merge(o_ptr, lse_ptr, out_ptr, lse_out_ptr, num_splits,
                  sob, soh, sos, sod, slb, slh, sls, srb, srh, srd, seb, seh, D: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    rd = tl.arange(0, D)
    one = tl.arange(0, 1)
    m = tl.full([1], float("-inf"), tl.float32)
    total = tl.zeros([1], tl.float32)
    acc = tl.zeros([D], tl.float32)
    for s in range(0, num_splits):
        l_s = tl.load(lse_ptr + b * slb + h * slh + s * sls + one)
        m_new = tl.maximum(m, l_s)
        shift = tl.where(m_new > float("-inf"), m_new, 0.0)  # all empty so far: -inf - -inf is NaN
        alpha = tl.exp(m - shift)  # rescale what was merged so far
        w = tl.exp(l_s - shift)
        o_s = tl.load(o_ptr + b * sob + h * soh + s * sos + rd * sod)
        acc = acc * alpha + w * o_s
        total = total * alpha + w
        m = m_new
    tl.store(out_ptr + b * srb + h * srh + rd * srd, acc / total)
    tl.store(lse_out_ptr + b * seb + h * seh + one, m + tl.log(total))


def split_k_partials(q, k, v, seq_lens, num_splits, sm_scale=None):
    B, Hq, D = q.shape
    Hkv, T = k.shape[1], k.shape[2]
    group = Hq // Hkv
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    o = torch.empty((B, Hq, num_splits, D), dtype=torch.float32, device=q.device)
    lse = torch.empty((B, Hq, num_splits), dtype=torch.float32, device=q.device)
    _group_partials[(B, Hkv, num_splits)](
        q, k, v, seq_lens, o, lse, *q.stride(), *k.stride(), *v.stride(), *o.stride(), *lse.stride(),
        -(-T // num_splits), scale * LOG2E, LN2,
        GROUP=group, G_PAD=triton.next_power_of_2(group), TILE=16, D=D)
    return o, lse


def merge_partials(o_part, lse_part):
    B, Hq, S, D = o_part.shape
    out = torch.empty((B, Hq, D), dtype=torch.float32, device=o_part.device)
    lse = torch.empty((B, Hq), dtype=torch.float32, device=o_part.device)
    _online_merge[(B, Hq)](o_part, lse_part, out, lse, S, *o_part.stride(), *lse_part.stride(),
                           *out.stride(), *lse.stride(), D=D)
    return out, lse


def split_k_decode(q, k, v, seq_lens, num_splits, sm_scale=None):
    o, lse = split_k_partials(q, k, v, seq_lens, num_splits, sm_scale)
    return merge_partials(o, lse)[0].to(q.dtype)

"""Megatron-style tensor parallelism of an MLP and an attention block over simulated ranks, and
the rounding-error bound that says how far a sharded result may sit from the exact one.

Sources:

- Shoeybi et al. 2019, *Megatron-LM: Training Multi-Billion Parameter Language Models Using Model
  Parallelism* (arXiv:1909.08053), Section 3 and Figure 3: the MLP's first weight is split by
  columns (each rank computes a slice of the intermediate activations and applies the elementwise
  nonlinearity locally), the second by rows (each rank produces a partial sum of the output), and
  one all-reduce sums the partials; self-attention is split by heads, with the output projection
  split by rows, and one all-reduce after it.
- vLLM, ``vllm/model_executor/layers/linear.py`` (``QKVParallelLinear``) and the model files'
  attention layers: when the TP degree exceeds the number of KV heads, it must be a multiple of it
  and each KV head is replicated on ``world_size / num_kv_heads`` consecutive ranks (rank ``r``
  loads KV head ``r // (world_size / num_kv_heads)``).
- Higham 2002, *Accuracy and Stability of Numerical Algorithms*, Chapter 3: a floating-point sum
  or dot product of ``n`` terms errs by at most ``gamma_n = n u / (1 - n u)`` times the sum of the
  absolute values of its terms, ``u`` the unit roundoff, whatever the order of summation.

Layout (Hugging Face ``nn.Linear`` weights, ``y = x @ W.T``; ``W`` is ``(out_features,
in_features)``). ``x``: ``(B, T, H)``. MLP (Llama's SwiGLU): ``w_gate``, ``w_up`` ``(I, H)``,
``w_down`` ``(H, I)``, ``mlp(x) = (silu(x W_gate^T) * (x W_up^T)) W_down^T``. Attention:
``w_q`` ``(Hq D, H)``, ``w_k``, ``w_v`` ``(Hkv D, H)``, ``w_o`` ``(H, Hq D)``, rows (of ``w_q``,
``w_k``, ``w_v``) and columns (of ``w_o``) grouped head by head; causal softmax attention with
scale ``1 / sqrt(D)``, query head ``h`` reading KV head ``h // (Hq / Hkv)``; no bias, no RoPE.

Column-parallel in ``nn.Linear`` storage is a split of the weight's **rows** (output features);
row-parallel a split of its **columns** (input features). Rank ``r`` of ``N`` gets the ``r``-th of
``N`` equal contiguous blocks.

Communication counting rule: every all-reduce counts the bytes of **one rank's input tensor**
(``numel * element_size``), not summed over ranks and not the ring's ``2 (N - 1) / N`` factor; a
block over ``N = 1`` rank does no all-reduce and counts 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = [
    "SAFETY",
    "SILU_LIPSCHITZ",
    "all_reduce",
    "attention_error_bound",
    "attention_forward",
    "kv_head_of_rank",
    "mlp_error_bound",
    "mlp_forward",
    "shard_attention",
    "shard_mlp",
    "tp_attention",
    "tp_mlp",
]


def _world(world_size: int) -> int:
    if isinstance(world_size, bool) or int(world_size) != world_size or world_size < 1:
        raise ValueError(f"world_size must be an integer >= 1, got {world_size!r}")
    return int(world_size)


def _block(t: Tensor, dim: int, rank: int, parts: int) -> Tensor:
    size = t.shape[dim] // parts
    return t.narrow(dim, rank * size, size)


# ----------------------------------------------------------------------------------------------
# MLP
# ----------------------------------------------------------------------------------------------


def shard_mlp(w_gate: Tensor, w_up: Tensor, w_down: Tensor,
              world_size: int) -> list[tuple[Tensor, Tensor, Tensor]]:
    """Per rank ``(gate (I/N, H), up (I/N, H), down (H, I/N))``: gate and up column-parallel with
    the **same** split (so ``silu(gate) * up`` is local), down row-parallel over the matching
    columns. ``ValueError`` when ``N`` does not divide the intermediate size ``I``."""
    n = _world(world_size)
    inter = w_gate.shape[0]
    if inter % n:
        raise ValueError(f"intermediate size {inter} is not divisible by world_size {n}")
    return [(_block(w_gate, 0, r, n), _block(w_up, 0, r, n), _block(w_down, 1, r, n))
            for r in range(n)]


def mlp_forward(x: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor) -> Tensor:
    """The SwiGLU MLP on whatever slice of the intermediate features it is given: the whole
    block's output for the full weights, one rank's partial sum for a shard."""
    h = F.silu(x @ w_gate.T) * (x @ w_up.T)  # (B, T, I_local), local: elementwise
    return h @ w_down.T  # (B, T, H): a partial sum over this rank's intermediate features


def all_reduce(tensors: Sequence[Tensor]) -> list[Tensor]:
    """Every rank receives the sum of all ranks' tensors, added in rank order in their dtype
    (``((t_0 + t_1) + t_2) + ...``); new tensors, the inputs untouched."""
    if not tensors:
        raise ValueError("all_reduce needs at least one tensor")
    total = tensors[0].clone()
    for t in tensors[1:]:
        total = total + t
    return [total.clone() for _ in tensors]


def _comm_bytes(out: Tensor, world_size: int) -> int:
    """One all-reduce of ``out``'s size per block, counted once per rank's input; 0 for one rank."""
    return 0 if world_size == 1 else out.numel() * out.element_size()


def tp_mlp(x: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor,
           world_size: int) -> tuple[Tensor, int]:
    """The MLP over ``world_size`` simulated ranks: ``(output, bytes all-reduced)``."""
    n = _world(world_size)
    partials = [mlp_forward(x, g, u, d) for g, u, d in shard_mlp(w_gate, w_up, w_down, n)]
    out = partials[0] if n == 1 else all_reduce(partials)[0]
    return out, _comm_bytes(out, n)


# ----------------------------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------------------------


def _check_heads(num_heads: int, num_kv_heads: int, n: int) -> None:
    if num_heads < 1 or num_kv_heads < 1 or num_heads % num_kv_heads:
        raise ValueError(f"num_heads {num_heads} must be a positive multiple of num_kv_heads {num_kv_heads}")
    if num_heads % n:
        raise ValueError(f"num_heads {num_heads} is not divisible by world_size {n}")
    if num_kv_heads % n and n % num_kv_heads:
        raise ValueError(f"num_kv_heads {num_kv_heads} and world_size {n}: one must divide the other")


def kv_head_of_rank(rank: int, num_kv_heads: int, world_size: int) -> tuple[int, int]:
    """``(first KV head, count)`` rank ``rank`` holds: ``num_kv_heads / N`` heads from
    ``rank * num_kv_heads / N`` when ``N`` divides ``num_kv_heads``, else the single head
    ``rank // (N / num_kv_heads)``, replicated on ``N / num_kv_heads`` consecutive ranks."""
    if num_kv_heads >= world_size:
        per = num_kv_heads // world_size
        return rank * per, per
    return rank // (world_size // num_kv_heads), 1


def shard_attention(w_q: Tensor, w_k: Tensor, w_v: Tensor, w_o: Tensor, num_heads: int,
                    num_kv_heads: int, world_size: int) -> list[tuple[Tensor, Tensor, Tensor, Tensor]]:
    """Per rank ``(q (Hq/N D, H), k (hkv D, H), v (hkv D, H), o (H, Hq/N D))``: query heads
    ``[r Hq/N, (r + 1) Hq/N)``, their KV heads (:func:`kv_head_of_rank`), and the matching
    columns of ``w_o``. ``ValueError`` when the heads cannot be split this way."""
    n = _world(world_size)
    _check_heads(num_heads, num_kv_heads, n)
    d = w_q.shape[0] // num_heads
    shards = []
    for r in range(n):
        k0, kc = kv_head_of_rank(r, num_kv_heads, n)
        shards.append((_block(w_q, 0, r, n), w_k[k0 * d:(k0 + kc) * d], w_v[k0 * d:(k0 + kc) * d],
                       _block(w_o, 1, r, n)))
    return shards


def attention_forward(x: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor, w_o: Tensor,
                      head_dim: int) -> Tensor:
    """Causal GQA attention over the heads these weights hold, then their slice of the output
    projection: the block's output for full weights, a rank's partial sum for a shard."""
    b, t, _ = x.shape
    hq, hkv = w_q.shape[0] // head_dim, w_k.shape[0] // head_dim
    q = (x @ w_q.T).view(b, t, hq, head_dim).transpose(1, 2)  # (B, hq, T, D)
    k = (x @ w_k.T).view(b, t, hkv, head_dim).transpose(1, 2)  # (B, hkv, T, D)
    v = (x @ w_v.T).view(b, t, hkv, head_dim).transpose(1, 2)
    k = k.repeat_interleave(hq // hkv, dim=1)  # query head h reads kv head h // (hq / hkv)
    v = v.repeat_interleave(hq // hkv, dim=1)
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(head_dim))  # (B, hq, T, T)
    causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
    s = s.masked_fill(~causal, float("-inf"))
    p = torch.softmax(s.to(torch.promote_types(s.dtype, torch.float32)), dim=-1)  # >= float32
    o = p.to(x.dtype) @ v  # (B, hq, T, D)
    return o.transpose(1, 2).reshape(b, t, hq * head_dim) @ w_o.T  # (B, T, H)


def tp_attention(x: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor, w_o: Tensor, num_heads: int,
                 num_kv_heads: int, world_size: int) -> tuple[Tensor, int]:
    """The attention block over ``world_size`` simulated ranks: ``(output, bytes all-reduced)``."""
    n = _world(world_size)
    d = w_q.shape[0] // num_heads
    shards = shard_attention(w_q, w_k, w_v, w_o, num_heads, num_kv_heads, n)
    partials = [attention_forward(x, q, k, v, o, d) for q, k, v, o in shards]
    out = partials[0] if n == 1 else all_reduce(partials)[0]
    return out, _comm_bytes(out, n)


# ----------------------------------------------------------------------------------------------
# The accuracy rule
# ----------------------------------------------------------------------------------------------

SAFETY = 2.0
"""Margin on the first-order bound: covers the neglected second-order terms (products of two
rounding errors, ``gamma_n`` against ``n u``) many times over."""

SILU_LIPSCHITZ = 1.1
"""``max |silu'(g)|`` is 1.0998 (at ``g`` near 2.4): an error in ``g`` grows at most 1.1-fold."""


def _roundoffs(dtype: torch.dtype) -> tuple[float, float]:
    """``(u, ua)``: the unit roundoff of ``dtype`` (results are rounded to it) and of the
    accumulation inside matrix products (float32 for every narrower type, as torch's CPU and CUDA
    kernels do, and float64 for float64)."""
    u = torch.finfo(dtype).eps / 2
    return u, min(u, torch.finfo(torch.float32).eps / 2)


def _linear(ax: Tensor, ex: Tensor, w: Tensor, u: float, ua: float) -> Tensor:
    """Error bound of ``fl(x W^T)`` from ``|x|`` (``ax``), the error already in ``x`` (``ex``) and
    the exact ``W``: the input's error carried through, plus ``K ua`` of the products' absolute
    sum for accumulating ``K`` of them, plus ``u`` for rounding the result to the dtype."""
    aw = w.abs().T
    return ex @ aw + (w.shape[1] * ua + u) * ((ax + ex) @ aw)


def _with_all_reduce(err: Tensor, magnitude: Tensor, n: int, u: float) -> Tensor:
    """Add the all-reduce: ``N - 1`` additions in the dtype, each rounding a running sum at most
    ``sum_r |partial_r|`` in size, which ``magnitude`` (the products' absolute sum, plus ``err``)
    bounds; then apply :data:`SAFETY`."""
    return SAFETY * (err + (n - 1) * u * (magnitude + err))


def mlp_error_bound(x: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor,
                    world_size: int) -> Tensor:
    """Elementwise float64 bound on ``|tp_mlp(...) - exact|`` for any summation order.

    Every operation a sound implementation does in ``x``'s dtype rounds once (``u``) and every
    matrix product accumulates ``K`` terms in float32 (``K ua``): gate and up, ``silu`` (its
    output rounded, its argument's error grown by at most :data:`SILU_LIPSCHITZ`; ``3 u`` allows
    ``g * sigmoid(g)`` done in two roundings), the product, the down projection of each rank and
    the ``N - 1`` additions of the all-reduce. Each error is bounded by ``u`` (or ``K ua``) times
    the absolute value of what is rounded, propagated with absolute values (Higham 2002, Ch. 3),
    then doubled (:data:`SAFETY`).
    """
    u, ua = _roundoffs(x.dtype)
    xd, wg, wu, wd = (t.double() for t in (x, w_gate, w_up, w_down))
    ax, zero = xd.abs(), torch.zeros_like(xd)
    g, v = xd @ wg.T, xd @ wu.T
    eg, ev = _linear(ax, zero, wg, u, ua), _linear(ax, zero, wu, u, ua)
    a = F.silu(g)
    ea = SILU_LIPSCHITZ * eg + 3 * u * (a.abs() + SILU_LIPSCHITZ * eg) + 4 * ua * (g.abs() + eg)
    h = a * v
    eh = ea * (v.abs() + ev) + a.abs() * ev
    eh = eh + u * (h.abs() + eh)
    err = _linear(h.abs(), eh, wd, u, ua)
    magnitude = (h.abs() + eh) @ wd.abs().T
    return _with_all_reduce(err, magnitude, _world(world_size), u)


def attention_error_bound(x: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor, w_o: Tensor,
                          num_heads: int, num_kv_heads: int, world_size: int) -> Tensor:
    """Elementwise float64 bound on ``|tp_attention(...) - exact|`` for any summation order.

    The projections as in :func:`mlp_error_bound`. A score ``s = q.k / sqrt(D)`` errs by what
    ``q`` and ``k`` carry, plus ``D ua`` for the dot product and ``4 u`` of its size for rounding
    it, scaling it and subtracting the row maximum. Softmax weights moved by logit errors of at
    most ``delta`` (the row's largest) change by at most ``expm1(2 delta)`` in total, so a
    softmax-weighted average of ``v`` moves by that times ``max |v|`` over the visible keys; the
    weights' own rounding (``4 u + 2 T ua``, the normaliser and the average accumulating ``T``
    terms) costs that fraction of ``max |v|`` too, and ``v``'s error passes through at most
    unchanged. Then the output projection and the all-reduce, doubled (:data:`SAFETY`).
    """
    u, ua = _roundoffs(x.dtype)
    xd, wq, wk, wv, wo = (t.double() for t in (x, w_q, w_k, w_v, w_o))
    b, t, _ = xd.shape
    d = wq.shape[0] // num_heads
    ax, zero = xd.abs(), torch.zeros_like(xd)

    def heads(m: Tensor, h: int) -> Tensor:  # (B, T, h D) -> (B, Hq, T, D)
        return m.view(b, t, h, d).transpose(1, 2).repeat_interleave(num_heads // h, dim=1)

    q, k, v = heads(xd @ wq.T, num_heads), heads(xd @ wk.T, num_kv_heads), heads(xd @ wv.T, num_kv_heads)
    eq = heads(_linear(ax, zero, wq, u, ua), num_heads)
    ek = heads(_linear(ax, zero, wk, u, ua), num_kv_heads)
    ev = heads(_linear(ax, zero, wv, u, ua), num_kv_heads)
    scale = 1.0 / math.sqrt(d)
    mq, mk = q.abs() + eq, k.abs() + ek
    ms = scale * (mq @ mk.transpose(-1, -2))  # (B, Hq, T, T): bound on |s| with its error
    es = scale * (eq @ mk.transpose(-1, -2) + q.abs() @ ek.transpose(-1, -2)) + (d * ua + 4 * u) * ms
    causal = torch.ones(t, t, dtype=torch.bool).tril()
    delta = es.masked_fill(~causal, 0.0).amax(dim=-1, keepdim=True)  # (B, Hq, T, 1)
    vmax = torch.cummax(v.abs() + ev, dim=2).values  # max over the keys j <= t
    evmax = torch.cummax(ev, dim=2).values
    eo = torch.expm1(2 * delta) * vmax + (4 * u + 2 * t * ua) * vmax + evmax  # (B, Hq, T, D)
    s = (q @ k.transpose(-1, -2)) * scale
    o = torch.softmax(s.masked_fill(~causal, float("-inf")), dim=-1) @ v
    flat = lambda m: m.transpose(1, 2).reshape(b, t, num_heads * d)  # noqa: E731
    ao, eo = flat(o).abs(), flat(eo)
    err = _linear(ao, eo, wo, u, ua)
    magnitude = (ao + eo) @ wo.abs().T
    return _with_all_reduce(err, magnitude, _world(world_size), u)

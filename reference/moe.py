"""Mixture-of-experts routing reference: top-k gating, expert capacity, load-balancing and z-losses,
and a tiny MoE feed-forward layer.

Sources:
- Fedus, Zoph, Shazeer 2021, "Switch Transformers: Scaling to Trillion Parameter Models with Simple
  and Efficient Sparsity": expert capacity ``capacity_factor * tokens / num_experts`` (here
  generalised to ``k`` assignments per token), dropped tokens, and the auxiliary load-balancing loss
  ``num_experts * sum_i f_i * P_i`` (their eq. 4).
- Zoph et al. 2022, "ST-MoE: Designing Stable and Transferable Sparse Expert Models": the router
  z-loss ``mean_tokens(logsumexp(logits)^2)`` (their eq. 5).
- Jiang et al. 2024, "Mixtral of Experts": softmax over the router logits, keep the top 2, and
  renormalise the two kept weights to sum to 1 (equivalently: softmax over the top-k logits);
  SwiGLU experts.
- Shazeer et al. 2017, "Outrageously Large Neural Networks": the top-k-then-softmax gate.

Conventions: router logits are ``(tokens, num_experts)``; expert choices and weights are
``(tokens, k)`` with slot 0 the highest-scoring expert. Ties between equal scores go to the lower
expert index (a stable sort), so every function here is deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor


def _topk_stable(scores: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """Top-k along the last dim, ties broken toward the lower index. Returns (values, indices)."""
    if not 1 <= k <= scores.shape[-1]:
        raise ValueError(f"k must be in [1, {scores.shape[-1]}], got {k}")
    vals, idx = torch.sort(scores, dim=-1, descending=True, stable=True)
    return vals[..., :k], idx[..., :k]


def route(logits: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """Mixtral-style softmax-then-top-k gate with renormalisation.

    ``logits``: ``(tokens, num_experts)``. ``p = softmax(logits)`` (in float32), keep the ``k``
    largest (ties -> lower expert index), ``weights = p_top / sum(p_top)``.

    Returns ``(weights float32 (tokens, k), experts int64 (tokens, k))``, slots in descending weight.
    """
    probs = torch.softmax(logits.float(), dim=-1)  # (T, E)
    top_p, experts = _topk_stable(probs, k)  # (T, k)
    weights = top_p / top_p.sum(dim=-1, keepdim=True)  # renormalise the kept mass to 1
    return weights, experts


def route_topk_then_softmax(logits: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """Shazeer-style gate: top-k on the logits, then softmax over the k kept logits.

    Mathematically equal to :func:`route` (softmax is monotone and the renormalised top-k of a
    softmax is the softmax of the top-k logits); the difference is numerical and in what the
    router's gradient sees. Same return shapes as :func:`route`.
    """
    top_l, experts = _topk_stable(logits.float(), k)  # (T, k)
    return torch.softmax(top_l, dim=-1), experts


def route_no_renorm(logits: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """Softmax-then-top-k without renormalisation (Switch with k=1; some DeepSeek variants):
    the kept weights sum to less than 1."""
    top_p, experts = _topk_stable(torch.softmax(logits.float(), dim=-1), k)
    return top_p, experts


def expert_capacity(tokens: int, num_experts: int, k: int = 1, capacity_factor: float = 1.0) -> int:
    """Slots per expert: ``ceil(capacity_factor * tokens * k / num_experts)``."""
    return math.ceil(capacity_factor * tokens * k / num_experts)


def apply_capacity(
    expert_indices: Tensor, num_experts: int, capacity: int,
    priority: Literal["token", "slot"] = "token",
) -> Tensor:
    """Which (token, slot) assignments fit in their expert's capacity.

    ``expert_indices``: int ``(tokens, k)``. With ``priority="token"`` assignments are served first
    come, first served in token order, and within a token in slot order (row-major over
    ``(tokens, k)``); with ``"slot"`` every token's slot-0 choice is served before any slot-1
    choice (GShard's priority). An expert accepts its first ``capacity`` assignments; later ones are
    dropped.

    Returns a bool keep mask ``(tokens, k)``.
    """
    t, k = expert_indices.shape
    order = expert_indices if priority == "token" else expert_indices.t()  # (T, k) or (k, T)
    flat = order.reshape(-1)  # (N,) assignments in service order
    onehot = torch.nn.functional.one_hot(flat.long(), num_experts)  # (N, E)
    position = (onehot.cumsum(dim=0) * onehot).sum(dim=-1) - 1  # 0-based place in its expert's queue
    keep = (position < capacity).reshape(order.shape)
    return keep if priority == "token" else keep.t().contiguous()


def load_balancing_loss(router_logits: Tensor, expert_indices: Tensor, num_experts: int) -> Tensor:
    """Switch Transformer auxiliary loss ``num_experts * sum_i f_i * P_i``.

    ``router_logits``: ``(tokens, num_experts)``; ``expert_indices``: ``(tokens, k)`` (all chosen
    experts, before any capacity drop). ``f_i`` is the fraction of the ``tokens * k`` assignments
    that went to expert ``i``; ``P_i`` the mean router probability (softmax of the logits) of
    expert ``i`` over tokens. Perfectly uniform routing gives exactly 1; collapse onto one expert
    gives up to ``num_experts``. Only ``P`` carries a gradient (``f`` comes from an argmax).

    Hugging Face's Mixtral loss uses ``f_i`` = fraction of *tokens* (summing to ``k``), so its value
    is ``k`` times this one.
    """
    t, k = expert_indices.shape
    probs = torch.softmax(router_logits.float(), dim=-1)  # (T, E)
    counts = torch.bincount(expert_indices.reshape(-1).long(), minlength=num_experts)  # (E,)
    f = counts.to(probs.dtype) / (t * k)  # fraction of assignments per expert
    p = probs.mean(dim=0)  # (E,) mean gate probability
    return num_experts * (f * p).sum()


def router_z_loss(router_logits: Tensor) -> Tensor:
    """ST-MoE router z-loss: ``mean over tokens of logsumexp(logits)^2``; keeps logits small."""
    z = torch.logsumexp(router_logits.float(), dim=-1)  # (T,)
    return (z**2).mean()


@dataclass
class MoEWeights:
    """Weights of a tiny MoE feed-forward layer with SwiGLU experts (Mixtral's block)."""

    router: Tensor
    """``(num_experts, d_model)`` gate projection."""
    w1: Tensor
    """``(num_experts, d_ff, d_model)`` gate half of SwiGLU."""
    w3: Tensor
    """``(num_experts, d_ff, d_model)`` up half of SwiGLU."""
    w2: Tensor
    """``(num_experts, d_model, d_ff)`` down projection."""

    @property
    def num_experts(self) -> int:
        """Number of experts."""
        return self.router.shape[0]

    @classmethod
    def random(cls, d_model: int, d_ff: int, num_experts: int, seed: int = 0,
               device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32) -> MoEWeights:
        """Small random weights (scaled like a default linear init) for tests and demos."""
        g = torch.Generator().manual_seed(seed)

        def r(*shape: int, fan_in: int) -> Tensor:
            return (torch.randn(*shape, generator=g) / math.sqrt(fan_in)).to(device, dtype)

        return cls(
            router=r(num_experts, d_model, fan_in=d_model),
            w1=r(num_experts, d_ff, d_model, fan_in=d_model),
            w3=r(num_experts, d_ff, d_model, fan_in=d_model),
            w2=r(num_experts, d_model, d_ff, fan_in=d_ff),
        )


def expert_forward(x: Tensor, w: MoEWeights, e: int) -> Tensor:
    """One SwiGLU expert: ``w2 @ (silu(w1 @ x) * (w3 @ x))``. ``x``: ``(n, d_model)``."""
    h = torch.nn.functional.silu(x @ w.w1[e].t()) * (x @ w.w3[e].t())  # (n, d_ff)
    return h @ w.w2[e].t()  # (n, d_model)


@dataclass
class MoEOutput:
    """Result of :func:`moe_forward`."""

    y: Tensor
    """``(tokens, d_model)`` layer output (dropped assignments contribute nothing)."""
    weights: Tensor
    """``(tokens, k)`` gate weights."""
    experts: Tensor
    """``(tokens, k)`` chosen experts."""
    keep: Tensor
    """``(tokens, k)`` which assignments fit in capacity."""
    aux_loss: Tensor
    """Load-balancing loss (scalar)."""
    z_loss: Tensor
    """Router z-loss (scalar)."""


def moe_forward(x: Tensor, w: MoEWeights, k: int = 2, capacity_factor: float | None = None) -> MoEOutput:
    """Sparse MoE layer: route each token to ``k`` experts and sum their weighted outputs.

    ``x``: ``(tokens, d_model)``. With ``capacity_factor`` set, each expert takes at most
    :func:`expert_capacity` assignments in token order; a dropped assignment adds nothing (in a
    transformer block the residual connection carries the token on). Only the routed experts run
    on each token, which is why active parameters per token stay small as experts are added.
    """
    t = x.shape[0]
    logits = x @ w.router.t()  # (T, E)
    weights, experts = route(logits, k)  # (T, k) each
    if capacity_factor is None:
        keep = torch.ones_like(experts, dtype=torch.bool)
    else:
        cap = expert_capacity(t, w.num_experts, k, capacity_factor)
        keep = apply_capacity(experts, w.num_experts, cap)
    y = torch.zeros_like(x)  # (T, D)
    for e in range(w.num_experts):
        tok, slot = torch.nonzero((experts == e) & keep, as_tuple=True)  # assignments to expert e
        if tok.numel() == 0:
            continue
        out = expert_forward(x[tok], w, e)  # (n_e, D)
        y.index_add_(0, tok, out * weights[tok, slot].unsqueeze(-1).to(out.dtype))
    return MoEOutput(y, weights, experts, keep,
                     load_balancing_loss(logits, experts, w.num_experts), router_z_loss(logits))

"""A StreamingLLM cache: the first few tokens (attention sinks) plus a sliding window of the most
recent ones, with positions assigned by cache slot and RoPE applied at attention time.

After ``n`` tokens of a stream (token ``i`` is the ``i``-th appended, from 0), the cache holds
tokens ``0 .. min(n, S) - 1`` (the sinks, ``S = num_sinks``) followed by the most recent ``min(n -
min(n, S), W)`` tokens (the window, ``W = window``), in stream order: ``min(n, S + W)`` tokens. The
cache slot ``s`` (0-based, in that order) is the token's **position**: keys are stored before RoPE
and rotated at their slot every time attention runs, so a token's position falls as older window
tokens are evicted, and no position ever reaches ``S + W``. A query is the newest token(s): the
query of the token in slot ``s`` is rotated at position ``s`` and sees slots ``0 .. s``.

RoPE is the half-split convention of Llama in Hugging Face transformers (``rotate_half``): pair
``i`` is dimensions ``(i, i + D/2)``, turned by ``position * theta^(-2i / D)``.

Sources:
- Xiao et al. 2023, *Efficient Streaming Language Models with Attention Sinks* (arXiv:2309.17453),
  section 3.2: keep the KV of the first 4 tokens (attention sinks) and a rolling window; "StreamingLLM
  focuses on positions within the cache rather than those in the original text": with the cache
  holding tokens ``[0, 1, 2, 3, 6, 7, 8]`` while decoding token 9, the positions are ``0 .. 7``;
  for RoPE, keys are cached before the rotation and rotated at each decoding step.
- Su et al. 2021, *RoFormer* (arXiv:2104.09864): the rotation ``(a, b) -> (a cos - b sin,
  b cos + a sin)`` with ``theta_i = base^(-2i/d)``; Llama 2's ``rope_theta`` is 10000.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["ROPE_THETA", "SinkCache", "cached_token_ids", "rope_half"]

ROPE_THETA = 10000.0
"""Default RoPE base (Llama 2's ``rope_theta``)."""


def cached_token_ids(num_seen: int, num_sinks: int, window: int) -> list[int]:
    """Stream indices of the tokens held after ``num_seen`` tokens, in slot order."""
    if min(num_seen, num_sinks) < 0 or window < 1:
        raise ValueError("need num_seen >= 0, num_sinks >= 0 and window >= 1")
    sinks = list(range(min(num_seen, num_sinks)))
    return sinks + list(range(max(num_sinks, num_seen - window), num_seen))


def rope_half(x: Tensor, positions: Tensor, theta: float = ROPE_THETA,
              compute_dtype: torch.dtype | None = None) -> Tensor:
    """Half-split RoPE: ``x`` ``(..., T, D)``, ``positions`` ``(T,)``; pair ``(i, i + D/2)`` turns
    by ``positions * theta^(-2i/D)``. Computed and returned in ``compute_dtype`` (default ``x``'s)."""
    cd = compute_dtype or x.dtype
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"head_dim must be even, got {d}")
    inv_freq = theta ** (-torch.arange(0, d, 2, dtype=cd, device=x.device) / d)  # (D/2,)
    ang = positions.to(x.device, cd)[:, None] * inv_freq  # (T, D/2)
    cos, sin = torch.cos(ang), torch.sin(ang)
    xc = x.to(cd)
    a, b = xc[..., : d // 2], xc[..., d // 2:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


class SinkCache:
    """The StreamingLLM cache of one sequence (see the module docstring for the rules).

    ``append(k, v)`` takes keys before RoPE and values, ``(num_heads, t_new, head_dim)``;
    ``keys()`` returns them rotated at their slots; ``attend(q)`` runs causal attention of the
    newest ``t_q`` tokens' queries (before RoPE) over the cache. A call that raises changes nothing.
    """

    def __init__(self, num_sinks: int, window: int, num_heads: int, head_dim: int,
                 rope_theta: float = ROPE_THETA, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu") -> None:
        if num_sinks < 0 or window < 1 or num_heads < 1 or head_dim < 2 or head_dim % 2:
            raise ValueError("need num_sinks >= 0, window >= 1, num_heads >= 1 and an even head_dim")
        self.num_sinks, self.window = num_sinks, window
        self.num_heads, self.head_dim, self.rope_theta = num_heads, head_dim, rope_theta
        self.dtype, self.device = dtype, torch.device(device)
        self.num_seen = 0
        self._k = torch.empty(num_heads, 0, head_dim, dtype=dtype, device=self.device)
        self._v = self._k.clone()

    @property
    def num_cached(self) -> int:
        """Tokens held: ``min(num_seen, num_sinks + window)``."""
        return self._k.shape[1]

    def _check(self, x: Tensor, what: str) -> None:
        if x.dim() != 3 or x.shape[0] != self.num_heads or x.shape[2] != self.head_dim or x.shape[1] < 1:
            raise ValueError(f"{what} must be (num_heads={self.num_heads}, t >= 1, head_dim={self.head_dim}), "
                             f"got {tuple(x.shape)}")

    def append(self, k: Tensor, v: Tensor) -> None:
        """Append ``t_new`` tokens, then evict the window's oldest beyond ``window``."""
        self._check(k, "k")
        if v.shape != k.shape:
            raise ValueError(f"k and v shapes differ: {tuple(k.shape)} vs {tuple(v.shape)}")
        keep = cached_token_ids(self.num_seen + k.shape[1], self.num_sinks, self.window)
        old = cached_token_ids(self.num_seen, self.num_sinks, self.window)
        allk = torch.cat([self._k, k.to(self.device, self.dtype)], dim=1)  # held tokens, then the new
        allv = torch.cat([self._v, v.to(self.device, self.dtype)], dim=1)
        index = {tok: s for s, tok in enumerate(old + list(range(self.num_seen, self.num_seen + k.shape[1])))}
        rows = torch.tensor([index[tok] for tok in keep], dtype=torch.long, device=self.device)
        self._k, self._v = allk[:, rows], allv[:, rows]
        self.num_seen += k.shape[1]

    def token_ids(self) -> list[int]:
        """Stream index of the token in each slot, in slot order."""
        return cached_token_ids(self.num_seen, self.num_sinks, self.window)

    def raw_keys(self) -> Tensor:
        """The cached keys before RoPE, ``(num_heads, num_cached, head_dim)``."""
        return self._k.clone()

    def keys(self, compute_dtype: torch.dtype | None = None) -> Tensor:
        """The cached keys rotated at their slots ``0 .. num_cached - 1``, in the cache's dtype
        (computed in ``compute_dtype`` when given, and then returned in it)."""
        pos = torch.arange(self.num_cached, device=self.device)
        out = rope_half(self._k, pos, self.rope_theta, compute_dtype or torch.float32)
        return out if compute_dtype is not None else out.to(self.dtype)

    def values(self) -> Tensor:
        """The cached values, ``(num_heads, num_cached, head_dim)``."""
        return self._v.clone()

    def query_positions(self, t_q: int) -> list[int]:
        """Slots (= positions) of the newest ``t_q`` tokens; ``ValueError`` unless all are cached."""
        n = self.num_cached
        evicted = self.num_seen > self.num_sinks + self.window
        if t_q < 1 or t_q > n or (evicted and t_q > self.window):
            raise ValueError(f"the newest {t_q} tokens are not all in the cache "
                             f"({self.num_seen} seen, {n} cached, window {self.window})")
        return list(range(n - t_q, n))

    def attend(self, q: Tensor, compute_dtype: torch.dtype | None = None) -> Tensor:
        """Attention of the newest ``t_q`` tokens' queries ``q`` ``(num_heads, t_q, head_dim)``
        (before RoPE) over the cache: query ``i`` is rotated at slot ``n - t_q + i`` and sees
        slots ``<=`` that one; scale ``1/sqrt(head_dim)``. Returns ``(num_heads, t_q, head_dim)``
        in the cache's dtype, computed in float32 (or ``compute_dtype``)."""
        self._check(q, "q")
        pos = torch.tensor(self.query_positions(q.shape[1]), device=self.device)
        cd = compute_dtype or torch.float32
        qr = rope_half(q.to(self.device), pos, self.rope_theta, cd)
        kr = self.keys(cd)
        s = qr @ kr.transpose(-1, -2) / math.sqrt(self.head_dim)  # (H, t_q, n)
        slots = torch.arange(self.num_cached, device=self.device)
        s = s.masked_fill(slots[None, :] > pos[:, None], float("-inf"))
        out = torch.softmax(s, dim=-1) @ self._v.to(cd)
        return out if compute_dtype is not None else out.to(self.dtype)

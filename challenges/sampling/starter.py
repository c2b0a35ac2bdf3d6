"""Sampling the next token: temperature, top-k, top-p and min-p.

Run `inferview grade sampling <this file>` to check it.
"""

from __future__ import annotations

import torch
from torch import Tensor


def filter_probs(logits: Tensor, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
                 min_p: float = 0.0) -> Tensor:
    """The distribution to sample from: (batch, vocab) float32, rows summing to 1.

    logits: (batch, vocab) float32/float16/bfloat16, may hold -inf
    Order: temperature (0 = greedy), top-k (ties with the k-th kept), softmax, top-p (keep
    M_i < top_p, M_i the mass strictly more probable than i), min-p (p_i >= min_p * p_max),
    renormalising after every step. Invalid parameters raise ValueError.
    """
    raise NotImplementedError(
        "filter_probs is not written yet: scale by the temperature, then apply top-k, top-p and "
        "min-p in that order, renormalising after each."
    )


def sample(logits: Tensor, generator: torch.Generator, temperature: float = 1.0, top_k: int = 0,
           top_p: float = 1.0, min_p: float = 0.0) -> Tensor:
    """One token per row, (batch,) int64, drawn from filter_probs's distribution with generator."""
    raise NotImplementedError(
        "sample is not written yet: draw one token per row from filter_probs with the generator "
        "(greedy at temperature 0)."
    )

"""Mistake: top-p as a running cumulative sum over one sorted order (Hugging Face's
sort-and-cumsum), so tokens tied with the last kept one get larger sums and are dropped."""

import math

import torch


def _check(temperature, top_k, top_p, min_p):
    if not (math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if int(top_k) != top_k or top_k < 0:
        raise ValueError(f"top_k must be a non-negative integer, got {top_k}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if not 0 <= min_p <= 1:
        raise ValueError(f"min_p must be in [0, 1], got {min_p}")


def _softmax(z, keep):
    return torch.softmax(z.masked_fill(~keep, -math.inf), dim=-1)


def filter_probs(logits, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0):
    _check(temperature, top_k, top_p, min_p)
    x = logits.float()
    if temperature == 0:
        out = torch.zeros_like(x)
        return out.scatter_(-1, x.argmax(-1, keepdim=True), 1.0)
    z = x / temperature
    keep = torch.isfinite(z)
    vocab = z.shape[-1]
    if 0 < top_k < vocab:
        kth = z.sort(dim=-1, descending=True).values[:, top_k - 1 : top_k]
        keep &= z >= kth
    p = _softmax(z, keep)
    if top_p < 1:
        desc, order = p.sort(dim=-1, descending=True, stable=True)
        excl = desc.cumsum(-1) - desc  # mass sorted before each token
        keep &= torch.empty_like(excl).scatter_(-1, order, excl) < top_p
        p = _softmax(z, keep)
    if min_p > 0:
        keep &= p >= min_p * p.max(-1, keepdim=True).values
        p = _softmax(z, keep)
    return p


def sample(logits, generator, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0):
    probs = filter_probs(logits, temperature, top_k, top_p, min_p)
    if temperature == 0:
        return logits.float().argmax(-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)

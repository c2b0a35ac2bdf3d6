"""Mistake: sample takes its temperature-0 shortcut before validating the parameters, so
sample(logits, generator, temperature=0, top_k=-1) returns the argmax instead of raising."""

import math

import torch

NEG = float("-inf")


def _check(temperature, top_k, top_p, min_p):
    if not (math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if isinstance(top_k, bool) or int(top_k) != top_k or top_k < 0:
        raise ValueError(f"top_k must be a non-negative integer, got {top_k}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if not 0 <= min_p <= 1:
        raise ValueError(f"min_p must be in [0, 1], got {min_p}")


def _softmax(z, keep):
    return torch.softmax(z.masked_fill(~keep, NEG), -1)


def _mass_above(p):
    asc = p.sort(-1).values
    cs = asc.cumsum(-1)
    count = torch.searchsorted(asc, p, right=True)  # tokens with a probability <= p_i
    return cs[:, -1:] - cs.gather(-1, count - 1)


def filter_probs(logits, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0):
    _check(temperature, top_k, top_p, min_p)
    z = logits.float()
    if temperature == 0:
        return torch.zeros_like(z).scatter_(-1, z.argmax(-1, keepdim=True), 1.0)
    z = z / temperature
    keep = z > NEG
    if 0 < top_k < z.shape[-1]:
        keep &= z >= z.sort(-1, descending=True).values[:, top_k - 1:top_k]
    p = _softmax(z, keep)
    if top_p < 1:
        keep &= _mass_above(p) < top_p
        p = _softmax(z, keep)
    if min_p > 0:
        keep &= p >= min_p * p.max(-1, keepdim=True).values
        p = _softmax(z, keep)
    return p


def sample(logits, generator, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0):
    if temperature == 0:  # the mistake: greedy returns before the parameters are checked
        return logits.float().argmax(-1)
    _check(temperature, top_k, top_p, min_p)
    p = filter_probs(logits, temperature, top_k, top_p, min_p)
    return torch.multinomial(p, 1, generator=generator).squeeze(-1)

"""Float64, with the rules written as pairwise comparisons (batch, vocab, vocab), and sampling by an
exponential race: argmax_i p_i / E_i with E_i ~ Exp(1) is a draw from p (the trick vLLM uses)."""

import math

import torch


def _check(temperature, top_k, top_p, min_p):
    if temperature < 0 or not math.isfinite(temperature):
        raise ValueError("temperature must be >= 0")
    if top_k < 0 or int(top_k) != top_k:
        raise ValueError("top_k must be a non-negative integer")
    if not (0 < top_p <= 1) or not (0 <= min_p <= 1):
        raise ValueError("top_p must be in (0, 1] and min_p in [0, 1]")


def _renorm(p, keep):
    p = torch.where(keep, p, torch.zeros_like(p))
    return p / p.sum(-1, keepdim=True)


def filter_probs(logits, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0):
    _check(temperature, top_k, top_p, min_p)
    z = logits.double()
    if temperature == 0:
        return torch.nn.functional.one_hot(z.argmax(-1), z.shape[-1]).float()
    z = z / temperature
    keep = z > -math.inf
    if top_k > 0:
        # token i survives when fewer than k tokens have a strictly larger logit
        larger = (z.unsqueeze(-2) > z.unsqueeze(-1)).sum(-1)  # [b, i] = #{j : z_j > z_i}
        keep &= larger < top_k
    p = _renorm(torch.exp(z - z.max(-1, keepdim=True).values), keep)
    if top_p < 1:
        more_probable = p.unsqueeze(-2) > p.unsqueeze(-1)  # [b, i, j] = p_j > p_i
        above = (more_probable * p.unsqueeze(-2)).sum(-1)
        keep &= above < top_p
        p = _renorm(p, keep)
    if min_p > 0:
        keep &= p >= min_p * p.amax(-1, keepdim=True)
        p = _renorm(p, keep)
    return p.float()


def sample(logits, generator, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0):
    probs = filter_probs(logits, temperature, top_k, top_p, min_p).double()
    if temperature == 0:
        return probs.argmax(-1)
    e = torch.empty_like(probs).exponential_(1.0, generator=generator)
    return (probs / e).argmax(-1)

"""Wrong: draws from a copy of the generator's state in a generator of its own, so the one it is
given never advances and the next call repeats the same tokens."""
from __future__ import annotations
import math
import torch
from torch import Tensor

NEG = float("-inf")


def _validate(temperature, top_k, top_p, min_p):
    if not (isinstance(temperature, (int, float)) and temperature >= 0 and math.isfinite(temperature)):
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k must be an int >= 0, got {top_k}")
    if not (0 < top_p <= 1):
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if not (0 <= min_p <= 1):
        raise ValueError(f"min_p must be in [0, 1], got {min_p}")


def filter_probs(logits: Tensor, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
                 min_p: float = 0.0) -> Tensor:
    _validate(temperature, top_k, top_p, min_p)
    z = logits.float()
    if temperature == 0:
        idx = z.argmax(-1, keepdim=True)
        return torch.zeros_like(z).scatter_(-1, idx, 1.0)
    z = z / temperature
    keep = z > NEG
    V = z.shape[-1]
    if 0 < top_k < V:
        kth = z.sort(-1, descending=True).values[:, top_k - 1:top_k]
        keep = keep & (z >= kth)
    p = torch.softmax(z.masked_fill(~keep, NEG), -1)
    if top_p < 1:
        asc = p.sort(-1).values
        cs = asc.cumsum(-1)
        total = cs[:, -1:]
        cnt = torch.searchsorted(asc, p, right=True)  # number of tokens with value <= p_i
        M = total - cs.gather(-1, cnt - 1)
        keep = keep & (M < top_p)
        p = torch.softmax(z.masked_fill(~keep, NEG), -1)
    if min_p > 0:
        zk = z.masked_fill(~keep, NEG)
        zmax = zk.max(-1, keepdim=True).values
        keep = keep & (p >= min_p * p.max(-1, keepdim=True).values)
        p = torch.softmax(z.masked_fill(~keep, NEG), -1)
    return p


def sample(logits: Tensor, generator: torch.Generator, temperature: float = 1.0, top_k: int = 0,
           top_p: float = 1.0, min_p: float = 0.0) -> Tensor:
    _validate(temperature, top_k, top_p, min_p)
    if temperature == 0:
        return logits.float().argmax(-1)
    p = filter_probs(logits, temperature, top_k, top_p, min_p)
    g = torch.Generator(device=p.device)
    g.set_state(generator.get_state())
    e = torch.empty_like(p).exponential_(generator=g)
    score = torch.where(p > 0, p / e, torch.full_like(p, -1.0))
    return score.argmax(-1)

"""Mistake: tests only the first emitted token, so bugs that show at later positions or in the
bonus token (a shared uniform, the bonus from the wrong position) go unnoticed."""

import numpy as np
import torch
from scipy.stats import chisquare


def _emitted(step, target_probs, draft_probs, num_samples, generator):
    gamma, vocab = draft_probs.shape
    q = draft_probs.expand(num_samples, gamma, vocab).contiguous()
    p = target_probs.expand(num_samples, gamma + 1, vocab).contiguous()
    x = torch.multinomial(q.reshape(-1, vocab), 1, generator=generator).reshape(num_samples, gamma)
    n, y = step(x, q, p, generator)
    return x.cpu(), n.cpu(), y.cpu()


def _position(x, n, y, j, probs):
    """Chi-square p-value of the tokens at position j (rows that reach it) against probs."""
    gamma = x.shape[1]
    token = torch.where(n > j, x[:, min(j, gamma - 1)], y)[n >= j].numpy()
    counts = np.bincount(token, minlength=probs.numel()).astype(np.float64)
    probs = probs.double().cpu().numpy()
    if counts.sum() == 0:
        return 1.0
    if (counts[probs <= 0] > 0).any():
        return 0.0
    keep = probs > 0
    return float(chisquare(counts[keep], counts.sum() * probs[keep] / probs[keep].sum()).pvalue)


def preserves_distribution(step, target_probs, draft_probs, num_samples, generator):
    x, n, y = _emitted(step, target_probs, draft_probs, num_samples, generator)
    return _position(x, n, y, 0, target_probs[0])

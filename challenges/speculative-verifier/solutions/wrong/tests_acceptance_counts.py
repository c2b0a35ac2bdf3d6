"""Mistake: besides the per-position tests it also tests num_accepted against the usual acceptance
law P(n >= i) = prod beta_j, which is not part of the null hypothesis: a step that accepts fewer
draft tokens but emits exactly the target's distribution is rejected."""

import numpy as np
import torch
from scipy.stats import chi2


def _pearson(counts, probs):
    """Chi-square goodness-of-fit p-value; cells with expected count < 5 are pooled."""
    n = counts.sum()
    if n == 0:
        return 1.0
    if (counts[probs <= 0] > 0).any():
        return 0.0  # a token the target never emits
    keep = probs > 0
    obs, exp = counts[keep], n * probs[keep] / probs[keep].sum()
    small = exp < 5
    if small.any():
        obs = np.append(obs[~small], obs[small].sum())
        exp = np.append(exp[~small], exp[small].sum())
        if exp[-1] < 5 and len(exp) > 1:  # pool the leftovers into the smallest cell
            i = int(np.argmin(exp[:-1]))
            obs[i] += obs[-1]
            exp[i] += exp[-1]
            obs, exp = obs[:-1], exp[:-1]
    if len(exp) < 2:
        return 1.0
    return float(chi2.sf(((obs - exp) ** 2 / exp).sum(), len(exp) - 1))


def preserves_distribution(step, target_probs, draft_probs, num_samples, generator):
    gamma, vocab = draft_probs.shape
    q = draft_probs.expand(num_samples, gamma, vocab).contiguous()  # (N, G, V)
    p = target_probs.expand(num_samples, gamma + 1, vocab).contiguous()  # (N, G+1, V)
    x = torch.multinomial(q.reshape(-1, vocab), 1, generator=generator).reshape(num_samples, gamma)
    n, y = step(x, q, p, generator)
    n, y, x = n.cpu(), y.cpu(), x.cpu()
    target = target_probs.double().cpu().numpy()
    pvalues = []
    for j in range(gamma + 1):
        token = torch.where(n > j, x[:, min(j, gamma - 1)], y)  # draft token, or the next token
        reached = n >= j
        counts = np.bincount(token[reached].numpy(), minlength=vocab).astype(np.float64)
        pvalues.append(_pearson(counts, target[j]))
    # also test the number of accepted tokens against theory: P(n >= i) = prod beta_j
    qd = draft_probs.double().cpu().numpy()
    beta = np.minimum(target[:gamma], qd).sum(-1)
    reach = np.concatenate([[1.0], np.cumprod(beta)])
    law = reach - np.append(reach[1:], 0.0)
    pvalues.append(_pearson(np.bincount(n.numpy(), minlength=gamma + 1).astype(np.float64), law))
    return min(1.0, len(pvalues) * min(pvalues))

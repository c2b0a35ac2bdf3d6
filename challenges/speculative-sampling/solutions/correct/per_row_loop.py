"""One row at a time, one position at a time, in plain Python: the algorithm as the paper writes it.

Draws lazily: a row stops drawing acceptance uniforms at its first rejection.
"""

import torch


def _uniform(generator, device):
    return float(torch.rand((), generator=generator, device=device, dtype=torch.float64))


def _draw(weights, u):
    """Inverse CDF over a list of non-negative weights; never returns a zero-weight token."""
    threshold = u * sum(weights)
    running = 0.0
    last_positive = 0
    for token, w in enumerate(weights):
        if w <= 0:
            continue
        last_positive = token
        running += w
        if threshold < running:
            return token
    return last_positive


def speculative_verify(draft_tokens, draft_probs, target_probs, generator):
    device = draft_tokens.device
    tokens = draft_tokens.tolist()
    q = draft_probs.double().tolist()
    p = target_probs.double().tolist()
    gamma = draft_tokens.shape[1]
    num_accepted, next_token = [], []
    for b, row in enumerate(tokens):
        n = gamma
        for i, x in enumerate(row):
            if not _uniform(generator, device) * q[b][i][x] < p[b][i][x]:  # r >= p(x) / q(x)
                n = i
                break
        if n < gamma:
            residual = [max(0.0, pv - qv) for pv, qv in zip(p[b][n], q[b][n], strict=True)]
            if sum(residual) <= 0:
                residual = p[b][n]
        else:
            residual = p[b][gamma]  # the bonus token
        num_accepted.append(n)
        next_token.append(_draw(residual, _uniform(generator, device)))
    return (torch.tensor(num_accepted, dtype=torch.int64, device=device),
            torch.tensor(next_token, dtype=torch.int64, device=device))

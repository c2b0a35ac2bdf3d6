"""Mistake: inverts the CDF of max(0, p - q) with a plain uniform instead of uniform * total, so
the residual is never renormalised and its missing mass piles onto the last token."""

import torch


def speculative_verify(draft_tokens, draft_probs, target_probs, generator):
    batch, gamma = draft_tokens.shape
    vocab = draft_probs.shape[-1]
    q = draft_probs.double()
    p = target_probs.double()
    x = draft_tokens.unsqueeze(-1)
    q_x = q.gather(-1, x).squeeze(-1)
    p_x = p[:, :gamma].gather(-1, x).squeeze(-1)
    r = torch.rand((batch, gamma), generator=generator, dtype=torch.float64, device=q.device)
    n = (r * q_x < p_x).long().cumprod(-1).sum(-1)
    q = torch.cat([q, q.new_zeros(batch, 1, vocab)], dim=1)
    rows = torch.arange(batch, device=q.device)
    residual = (p[rows, n] - q[rows, n]).clamp_min(0)
    u = torch.rand((batch, 1), generator=generator, dtype=torch.float64, device=q.device)
    token = torch.searchsorted(residual.cumsum(-1), u, right=True).squeeze(-1)
    return n, token.clamp(max=vocab - 1)

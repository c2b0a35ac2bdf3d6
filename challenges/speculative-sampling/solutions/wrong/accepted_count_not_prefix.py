"""Mistake: num_accepted counts every accepted position (accept.sum()) instead of the length of the
accepted prefix, so draft tokens after a rejection are kept."""

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
    n = (r * q_x < p_x).long().sum(-1)
    q = torch.cat([q, q.new_zeros(batch, 1, vocab)], dim=1)
    rows = torch.arange(batch, device=q.device)
    residual = (p[rows, n] - q[rows, n]).clamp_min(0)
    empty = residual.sum(-1, keepdim=True) <= 0
    residual = torch.where(empty, p[rows, n], residual)
    return n, torch.multinomial(residual, 1, generator=generator).squeeze(-1)

"""Mistake: accepts a draft token exactly when p(x) >= q(x), instead of with probability
min(1, p(x) / q(x)); tokens the draft over-weights are always rejected."""

import torch


def speculative_verify(draft_tokens, draft_probs, target_probs, generator):
    batch, gamma = draft_tokens.shape
    vocab = draft_probs.shape[-1]
    q = draft_probs.double()
    p = target_probs.double()
    x = draft_tokens.unsqueeze(-1)
    q_x = q.gather(-1, x).squeeze(-1)
    p_x = p[:, :gamma].gather(-1, x).squeeze(-1)
    n = (p_x >= q_x).long().cumprod(-1).sum(-1)
    q = torch.cat([q, q.new_zeros(batch, 1, vocab)], dim=1)
    rows = torch.arange(batch, device=q.device)
    residual = (p[rows, n] - q[rows, n]).clamp_min(0)
    empty = residual.sum(-1, keepdim=True) <= 0
    residual = torch.where(empty, p[rows, n], residual)
    return n, torch.multinomial(residual, 1, generator=generator).squeeze(-1)

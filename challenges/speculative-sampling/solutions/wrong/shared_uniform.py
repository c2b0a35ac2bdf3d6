"""Mistake: draws one uniform per row and reuses it at every draft position, so the acceptance
decisions are correlated; the first position is right, the later ones are not."""

import torch


def speculative_verify(draft_tokens, draft_probs, target_probs, generator):
    batch, gamma = draft_tokens.shape
    vocab = draft_probs.shape[-1]
    q = draft_probs.double()
    p = target_probs.double()
    x = draft_tokens.unsqueeze(-1)
    q_x = q.gather(-1, x).squeeze(-1)
    p_x = p[:, :gamma].gather(-1, x).squeeze(-1)
    r = torch.rand((batch, 1), generator=generator, dtype=torch.float64, device=q.device)
    n = (r * q_x < p_x).long().cumprod(-1).sum(-1)
    q = torch.cat([q, q.new_zeros(batch, 1, vocab)], dim=1)
    rows = torch.arange(batch, device=q.device)
    residual = (p[rows, n] - q[rows, n]).clamp_min(0)
    return n, torch.multinomial(residual, 1, generator=generator).squeeze(-1)

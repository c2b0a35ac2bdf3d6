"""Mistake: after a rejection, samples the next token from p instead of norm(max(0, p - q)),
which double-counts the mass already offered through the accepted draft tokens."""

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
    rows = torch.arange(batch, device=q.device)
    return n, torch.multinomial(p[rows, n], 1, generator=generator).squeeze(-1)

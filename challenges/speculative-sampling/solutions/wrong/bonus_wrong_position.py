"""Mistake: when every draft token is accepted, the bonus token is sampled from
target_probs[:, gamma - 1] (the last draft position) instead of target_probs[:, gamma]."""

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
    pos = n.clamp(max=gamma - 1)
    residual = (p[rows, pos] - q[rows, pos]).clamp_min(0)
    all_accepted = (n == gamma).unsqueeze(-1)
    residual = torch.where(all_accepted, p[rows, pos], residual)
    return n, torch.multinomial(residual, 1, generator=generator).squeeze(-1)

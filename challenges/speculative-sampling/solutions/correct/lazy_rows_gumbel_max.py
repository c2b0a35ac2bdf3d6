"""Lazy per-position draws only for live rows; Gumbel-max sampling; float32 throughout."""
import torch


def speculative_verify(draft_tokens, draft_probs, target_probs, generator, *, eps=0.0):
    B, G = draft_tokens.shape
    V = draft_probs.shape[-1]
    dev = draft_probs.device
    n = torch.full((B,), G, dtype=torch.int64, device=dev)
    alive = torch.ones(B, dtype=torch.bool, device=dev)
    for i in range(G):
        idx = alive.nonzero().flatten()
        if idx.numel() == 0:
            break
        x = draft_tokens[idx, i]
        px = target_probs[idx, i, x]
        qx = draft_probs[idx, i, x]
        u = torch.rand(idx.numel(), generator=generator, device=dev)
        rej = u * qx >= px
        n[idx[rej]] = i
        alive[idx[rej]] = False
    rows = torch.arange(B, device=dev)
    qpad = torch.cat([draft_probs, torch.zeros_like(draft_probs[:, :1])], 1)
    w = (target_probs[rows, n] - qpad[rows, n]).clamp(min=0)  # (B, V)
    w = torch.where(w.sum(-1, keepdim=True) > 0, w, target_probs[rows, n])
    u = torch.rand((B, V), generator=generator, device=dev).clamp(1e-12, 1 - 1e-7)
    gumbel = -torch.log(-torch.log(u))
    tok = torch.where(w > 0, torch.log(w) + gumbel, torch.full_like(w, float("-inf"))).argmax(-1)
    return n, tok

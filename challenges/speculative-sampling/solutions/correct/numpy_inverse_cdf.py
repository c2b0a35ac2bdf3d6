"""Row by row in numpy float64; every uniform comes from one torch.rand call on the generator."""
import numpy as np
import torch


def speculative_verify(draft_tokens, draft_probs, target_probs, generator):
    B, G = draft_tokens.shape
    u = torch.rand((B, G + 1), generator=generator, dtype=torch.float64, device=draft_probs.device).cpu().numpy()
    x = draft_tokens.cpu().numpy()
    q = draft_probs.detach().cpu().double().numpy()
    p = target_probs.detach().cpu().double().numpy()
    n_out, y_out = [], []
    for b in range(B):
        n = G
        for i in range(G):
            if u[b, i] >= p[b, i, x[b, i]] / q[b, i, x[b, i]]:
                n = i
                break
        w = p[b, G] if n == G else np.maximum(p[b, n] - q[b, n], 0.0)
        if w.sum() <= 0:
            w = p[b, n]
        c = np.cumsum(w / w.sum())
        # first token whose cumulative mass exceeds u; rounding can leave c[-1] a hair below 1
        y = min(int(np.searchsorted(c, u[b, G], side="right")), int(np.flatnonzero(w)[-1]))
        n_out.append(n)
        y_out.append(y)
    dev = draft_tokens.device
    return torch.tensor(n_out, dtype=torch.int64, device=dev), torch.tensor(y_out, dtype=torch.int64, device=dev)

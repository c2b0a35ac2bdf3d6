"""Per-position G-tests (scipy power_divergence), combined with Fisher's method over the positions reached."""
import numpy as np
import torch
from scipy import stats


def preserves_distribution(step, target_probs, draft_probs, num_samples, generator):
    G, V = draft_probs.shape
    with torch.no_grad():
        q = draft_probs.unsqueeze(0).repeat(num_samples, 1, 1)
        p = target_probs.unsqueeze(0).repeat(num_samples, 1, 1)
        x = torch.multinomial(draft_probs.double().repeat(num_samples, 1), 1, replacement=True,
                              generator=generator).view(num_samples, G)
        n, y = step(x, q, p, generator)
    emitted = torch.cat([x, torch.zeros_like(x[:, :1])], 1).cpu()
    emitted[torch.arange(num_samples), n.cpu()] = y.cpu()
    tgt = target_probs.double().cpu().numpy()
    ps = []
    for j in range(G + 1):
        tok = emitted[n.cpu() >= j, j].numpy()
        if tok.size == 0:
            continue
        obs = np.bincount(tok, minlength=V).astype(float)
        if obs[tgt[j] == 0].sum() > 0:
            return 0.0
        m = tgt[j] > 0
        exp = tok.size * tgt[j][m] / tgt[j][m].sum()
        if m.sum() < 2:
            ps.append(1.0)
            continue
        ps.append(float(stats.power_divergence(obs[m], exp, lambda_="log-likelihood").pvalue))
    if not ps:
        return 1.0
    return float(stats.combine_pvalues(ps, method="fisher").pvalue)

"""One likelihood-ratio (G) test of every emitted token's conditional law, in torch only.

The target emits position j from p_j whatever came before, so for every j and every previous
emitted token z_{j-1}, the tokens at j of the rows that reach j with that z_{j-1} must follow p_j.
Under the null the G statistics of these groups are asymptotically independent chi-squares, so
their sum is tested against chi-square with the summed degrees of freedom (survival function via
the regularised upper incomplete gamma function). Conditioning on the previous token also catches
correlations between positions.
"""

import torch

MIN_GROUP = 20  # groups smaller than this are left out (their asymptotics are poor)


def preserves_distribution(step, target_probs, draft_probs, num_samples, generator):
    gamma, vocab = draft_probs.shape
    device = draft_probs.device
    q = draft_probs.unsqueeze(0).repeat(num_samples, 1, 1)  # (N, G, V)
    p = target_probs.unsqueeze(0).repeat(num_samples, 1, 1)  # (N, G+1, V)
    u = torch.rand(num_samples, gamma, 1, generator=generator, device=device, dtype=torch.float64)
    cdf = q.double().cumsum(-1)  # inverse-CDF draft sampling
    x = torch.searchsorted(cdf, u * cdf[..., -1:], right=True).squeeze(-1)
    x = torch.minimum(x, torch.full_like(x, vocab - 1))
    n, y = step(x, q, p, generator)
    n, y, x = n.cpu().long(), y.cpu().long(), x.cpu()
    pos = torch.arange(gamma + 1)
    padded = torch.cat([x, torch.zeros(num_samples, 1, dtype=torch.long)], 1)  # (N, G+1)
    emitted = torch.where(pos < n.unsqueeze(1), padded, y.unsqueeze(1))  # valid where pos <= n
    reached = pos <= n.unsqueeze(1)  # (N, G+1)
    target = target_probs.double().cpu()
    g_total, dof = 0.0, 0
    for j in range(gamma + 1):
        prev = emitted[:, j - 1] if j > 0 else torch.zeros(num_samples, dtype=torch.long)
        for z in range(vocab if j > 0 else 1):
            rows = reached[:, j] & (prev == z)
            m = int(rows.sum())
            if m < MIN_GROUP:
                continue
            obs = torch.bincount(emitted[rows, j], minlength=vocab).double()
            if bool((obs[target[j] <= 0] > 0).any()):
                return 0.0  # a token the target never emits
            exp = m * target[j] / target[j].sum()
            seen = obs > 0
            g_total += float(2 * (obs[seen] * torch.log(obs[seen] / exp[seen])).sum())
            dof += int((target[j] > 0).sum()) - 1
    if dof == 0:
        return 1.0
    return float(torch.special.gammaincc(torch.tensor(dof / 2, dtype=torch.float64),
                                         torch.tensor(g_total / 2, dtype=torch.float64)))

"""Wrong: draws from a private copy of the generator's state, so the generator it is given never
advances and every decoding step repeats the same random draws."""

import torch


def speculative_verify(draft_tokens, draft_probs, target_probs, generator):
    batch, gamma = draft_tokens.shape
    own = torch.Generator(device=generator.device)
    own.set_state(generator.get_state())
    generator = own
    vocab = draft_probs.shape[-1]
    q = draft_probs.double()  # (B, G, V)
    p = target_probs.double()  # (B, G+1, V)
    x = draft_tokens.unsqueeze(-1)  # (B, G, 1)
    q_x = q.gather(-1, x).squeeze(-1)  # q_i(x_i): (B, G)
    p_x = p[:, :gamma].gather(-1, x).squeeze(-1)  # p_i(x_i): (B, G)
    r = torch.rand((batch, gamma), generator=generator, device=q.device, dtype=torch.float64)
    accept = r * q_x < p_x  # r_i < p_i(x_i) / q_i(x_i)
    n = accept.long().cumprod(-1).sum(-1)  # accepted prefix length: (B,)
    q = torch.cat([q, q.new_zeros(batch, 1, vocab)], dim=1)  # q_G = 0: the residual at G is p_G
    rows = torch.arange(batch, device=q.device)
    residual = (p[rows, n] - q[rows, n]).clamp_min(0)  # max(0, p_n - q_n): (B, V)
    empty = residual.sum(-1, keepdim=True) <= 0
    residual = torch.where(empty, p[rows, n], residual)
    next_token = torch.multinomial(residual, 1, generator=generator).squeeze(-1)  # normalises
    return n, next_token

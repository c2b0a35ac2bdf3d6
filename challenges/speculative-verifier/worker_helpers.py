"""Speculative-sampling steps handed to the submission's ``preserves_distribution``.

One correct step (Leviathan et al. 2023, Algorithm 1; Chen et al. 2023, Algorithm 2) and a set of
subtly wrong ones, each with the single mistake its docstring names. All share the interface of
the ``speculative-sampling`` challenge::

    step(draft_tokens (B, G) int64, draft_probs (B, G, V), target_probs (B, G+1, V), generator)
        -> (num_accepted (B,) int64, next_token (B,) int64)

and take every random draw from ``generator``. This file runs inside the grading worker: torch only.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _sample(weights: Tensor, u: Tensor) -> Tensor:
    """Inverse-CDF draw per row from non-negative ``weights`` (B, V) with uniforms ``u`` (B,)."""
    cdf = weights.cumsum(-1)  # (B, V)
    idx = torch.searchsorted(cdf, (u * cdf[:, -1]).unsqueeze(-1), right=True).squeeze(-1)
    last = weights.shape[-1] - 1 - (weights > 0).flip(-1).long().argmax(-1)  # last positive token
    return torch.minimum(idx, last)


def _parts(draft_tokens: Tensor, draft_probs: Tensor, target_probs: Tensor):
    q = draft_probs.double()  # (B, G, V)
    p = target_probs.double()  # (B, G+1, V)
    x = draft_tokens.long().unsqueeze(-1)  # (B, G, 1)
    q_x = q.gather(-1, x).squeeze(-1)  # q_i(x_i): (B, G)
    p_x = p[:, : q.shape[1]].gather(-1, x).squeeze(-1)  # p_i(x_i): (B, G)
    return q, p, q_x, p_x


def _finish(q: Tensor, p: Tensor, n: Tensor, generator: torch.Generator, *, clamp=True,
            bonus_offset: int = 0) -> Tensor:
    """The emitted token: from ``max(0, p_n - q_n)`` (``q_G = 0``: the bonus token is from ``p_G``)."""
    batch, gamma, vocab = q.shape
    rows = torch.arange(batch, device=q.device)
    q_ext = torch.cat([q, q.new_zeros(batch, 1, vocab)], dim=1)  # (B, G+1, V)
    p_pos = torch.where(n == gamma, n - bonus_offset, n)  # where the bonus token is read from
    diff = p[rows, p_pos] - q_ext[rows, n]  # (B, V)
    resid = diff.clamp_min(0.0) if clamp else diff.abs()
    resid = torch.where(resid.sum(-1, keepdim=True) > 0, resid, p[rows, p_pos])
    u = torch.rand(batch, generator=generator, device=q.device, dtype=torch.float64)
    return _sample(resid, u)


def correct_step(draft_tokens, draft_probs, target_probs, generator):
    """The correct rule: accept while ``r_i < p_i(x_i)/q_i(x_i)``, then one token from the residual."""
    q, p, q_x, p_x = _parts(draft_tokens, draft_probs, target_probs)
    r = torch.rand(q_x.shape, generator=generator, device=q.device, dtype=torch.float64)
    n = (r * q_x < p_x).long().cumprod(-1).sum(-1)
    return n, _finish(q, p, n, generator)


def first_draft_only_step(draft_tokens, draft_probs, target_probs, generator):
    """Also correct, in another way: runs the rule on the first draft token alone (as if
    ``gamma = 1``), so at most one draft token is accepted and the next token comes from the residual
    at position 0 or, after an acceptance, from ``p_1``. Fewer tokens per step than
    :func:`correct_step`, each one still distributed as the target's; positions 2..G are never
    reached, and the number of accepted tokens does not follow the usual product of the ``beta_j``.
    """
    return correct_step(draft_tokens[:, :1], draft_probs[:, :1], target_probs[:, :2], generator)


def abs_residual_step(draft_tokens, draft_probs, target_probs, generator):
    """Resamples from ``|p - q|`` instead of ``max(0, p - q)``: the residual is not clamped."""
    q, p, q_x, p_x = _parts(draft_tokens, draft_probs, target_probs)
    r = torch.rand(q_x.shape, generator=generator, device=q.device, dtype=torch.float64)
    n = (r * q_x < p_x).long().cumprod(-1).sum(-1)
    return n, _finish(q, p, n, generator, clamp=False)


def unnormalised_residual_step(draft_tokens, draft_probs, target_probs, generator):
    """Inverts the CDF of ``max(0, p - q)`` without dividing by its sum: leftover mass lands on
    the last token of the vocabulary."""
    q, p, q_x, p_x = _parts(draft_tokens, draft_probs, target_probs)
    batch, gamma, vocab = q.shape
    r = torch.rand(q_x.shape, generator=generator, device=q.device, dtype=torch.float64)
    n = (r * q_x < p_x).long().cumprod(-1).sum(-1)
    rows = torch.arange(batch, device=q.device)
    q_ext = torch.cat([q, q.new_zeros(batch, 1, vocab)], dim=1)
    resid = (p[rows, n] - q_ext[rows, n]).clamp_min(0.0)
    u = torch.rand(batch, generator=generator, device=q.device, dtype=torch.float64)
    idx = torch.searchsorted(resid.cumsum(-1), u.unsqueeze(-1), right=True).squeeze(-1)
    return n, idx.clamp(max=vocab - 1)


def bonus_from_last_draft_position_step(draft_tokens, draft_probs, target_probs, generator):
    """When every draft token is accepted, samples the bonus token from ``target_probs[:, G-1]``
    instead of ``target_probs[:, G]``."""
    q, p, q_x, p_x = _parts(draft_tokens, draft_probs, target_probs)
    r = torch.rand(q_x.shape, generator=generator, device=q.device, dtype=torch.float64)
    n = (r * q_x < p_x).long().cumprod(-1).sum(-1)
    return n, _finish(q, p, n, generator, bonus_offset=1)


def shared_uniform_step(draft_tokens, draft_probs, target_probs, generator):
    """Draws one uniform per row and reuses it for every draft position, so acceptances are
    correlated (visible only from the second position on)."""
    q, p, q_x, p_x = _parts(draft_tokens, draft_probs, target_probs)
    r = torch.rand(q_x.shape[0], 1, generator=generator, device=q.device, dtype=torch.float64)
    n = (r * q_x < p_x).long().cumprod(-1).sum(-1)
    return n, _finish(q, p, n, generator)


def deterministic_accept_step(draft_tokens, draft_probs, target_probs, generator):
    """Accepts exactly when ``p(x) >= q(x)`` instead of with probability ``min(1, p(x)/q(x))``."""
    q, p, q_x, p_x = _parts(draft_tokens, draft_probs, target_probs)
    torch.rand(q_x.shape, generator=generator, device=q.device, dtype=torch.float64)
    n = (p_x >= q_x).long().cumprod(-1).sum(-1)
    return n, _finish(q, p, n, generator)


def inverted_ratio_step(draft_tokens, draft_probs, target_probs, generator):
    """Accepts when ``r < q(x)/p(x)``: the ratio is upside down."""
    q, p, q_x, p_x = _parts(draft_tokens, draft_probs, target_probs)
    r = torch.rand(q_x.shape, generator=generator, device=q.device, dtype=torch.float64)
    n = (r * p_x < q_x).long().cumprod(-1).sum(-1)
    return n, _finish(q, p, n, generator)


def resample_from_target_step(draft_tokens, draft_probs, target_probs, generator):
    """At a rejection, samples from ``p`` instead of ``norm(max(0, p - q))``."""
    q, p, q_x, p_x = _parts(draft_tokens, draft_probs, target_probs)
    r = torch.rand(q_x.shape, generator=generator, device=q.device, dtype=torch.float64)
    n = (r * q_x < p_x).long().cumprod(-1).sum(-1)
    return n, _finish(torch.zeros_like(q), p, n, generator)


def total_accepted_step(draft_tokens, draft_probs, target_probs, generator):
    """Counts every accepted position (``accept.sum()``) instead of the accepted prefix, so a
    rejected draft token can be emitted after an accepted later one."""
    q, p, q_x, p_x = _parts(draft_tokens, draft_probs, target_probs)
    r = torch.rand(q_x.shape, generator=generator, device=q.device, dtype=torch.float64)
    n = (r * q_x < p_x).long().sum(-1)
    return n, _finish(q, p, n, generator)


def first_rejection_argmax_step(draft_tokens, draft_probs, target_probs, generator):
    """Finds the first rejection with ``argmax`` over the rejections, which is 0 when nothing was
    rejected: an all-accepted step emits one residual token instead of ``G`` drafts and a bonus."""
    q, p, q_x, p_x = _parts(draft_tokens, draft_probs, target_probs)
    r = torch.rand(q_x.shape, generator=generator, device=q.device, dtype=torch.float64)
    n = (r * q_x >= p_x).long().argmax(-1)
    return n, _finish(q, p, n, generator)


WRONG_STEPS: tuple[str, ...] = (
    "abs_residual_step",
    "unnormalised_residual_step",
    "bonus_from_last_draft_position_step",
    "shared_uniform_step",
    "deterministic_accept_step",
    "inverted_ratio_step",
    "resample_from_target_step",
    "total_accepted_step",
    "first_rejection_argmax_step",
)
"""Names of the wrong steps, in the order the grader tries them."""

"""Speculative sampling: the verification step.

Run `inferview grade speculative-sampling <this file>` to check it.
"""

from __future__ import annotations

import torch
from torch import Tensor


def speculative_verify(draft_tokens: Tensor, draft_probs: Tensor, target_probs: Tensor,
                       generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Accept a prefix of the draft tokens and sample one more token, for every row.

    draft_tokens: (B, G) int64, sampled from draft_probs
    draft_probs:  (B, G, V)     q_i, the draft model's distributions
    target_probs: (B, G + 1, V) p_i, the target model's distributions (one more position)
    generator:    every random draw must come from it

    Returns (num_accepted, next_token), both (B,) int64.
    """
    # 1. For each position i, read q_i(x_i) and p_i(x_i) for the draft token x_i.
    # 2. Accept x_i with probability min(1, p_i(x_i) / q_i(x_i)); keep only the accepted prefix.
    # 3. Sample next_token from norm(max(0, p_n - q_n)) at the first rejection n,
    #    or from p_G when every draft token was accepted.
    raise NotImplementedError(
        "speculative_verify is not written yet: accept each draft token with probability "
        "min(1, p/q), then sample one token from the residual (or the bonus distribution)."
    )

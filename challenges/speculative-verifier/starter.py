"""A statistical test for speculative sampling.

Run `inferview grade speculative-verifier <this file>` to check it.
"""

from __future__ import annotations

import torch
from torch import Tensor


def preserves_distribution(step, target_probs: Tensor, draft_probs: Tensor, num_samples: int,
                           generator: torch.Generator) -> float:
    """p-value for "the tokens `step` emits are distributed as the target model would emit them".

    step:         step(draft_tokens (B, G), draft_probs (B, G, V), target_probs (B, G+1, V),
                       generator) -> (num_accepted (B,), next_token (B,)), both int64
    target_probs: (G + 1, V) the target's distribution at each position, the same for every row
    draft_probs:  (G, V)     the draft's distribution at each position
    num_samples:  B, the number of rows to run step on, in one call
    generator:    every random draw (yours and step's) must come from it
    """
    # 1. Expand the distributions to (num_samples, ...) and sample draft tokens from draft_probs.
    # 2. Run step once on the whole batch.
    # 3. Test the emitted tokens against target_probs and return the p-value.
    raise NotImplementedError(
        "preserves_distribution is not written yet: sample draft tokens, run step on the batch, "
        "and test the emitted tokens position by position against target_probs."
    )

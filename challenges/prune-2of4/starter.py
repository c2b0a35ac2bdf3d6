"""Challenge prune-2of4: 2:4 semi-structured magnitude pruning.

Fill in the two functions. `inferview grade prune-2of4 <this file>` runs the checks.
"""

from __future__ import annotations

import torch  # noqa: F401  (you will need it)
from torch import Tensor


def prune_2_4(w: Tensor) -> tuple[Tensor, Tensor]:
    """w (out, in) -> (pruned w, mask bool): keep the 2 largest |w| of every 4 along dim -1."""
    raise NotImplementedError("prune_2_4: per group of 4 inputs keep the 2 largest magnitudes")


def is_2_4_sparse(t: Tensor) -> bool:
    """True when every group of 4 along the last dim has at most 2 non-zeros."""
    raise NotImplementedError("is_2_4_sparse: count non-zeros per group of 4")

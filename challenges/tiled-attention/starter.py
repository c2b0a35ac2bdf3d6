"""Challenge tiled-attention: exact attention over key blocks with an online softmax.

`inferview grade tiled-attention <this file>` runs the checks.
"""

from __future__ import annotations

from torch import Tensor


def tiled_attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False,
                    sm_scale: float | None = None, block_size: int = 64) -> Tensor:
    """q (B, H, Tq, D), k, v (B, H, Tk, D) -> (B, H, Tq, D), walking the keys block_size at a time."""
    raise NotImplementedError("tiled_attention: keep a running max, sum and accumulator per query row")

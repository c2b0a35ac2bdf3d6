"""Challenge gqa-attention: attention with grouped key/value heads and a bottom-right causal mask.

`inferview grade gqa-attention <this file>` runs the checks.
"""

from __future__ import annotations

from torch import Tensor


def gqa_attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False,
                  sm_scale: float | None = None) -> Tensor:
    """q (B, Hq, Tq, D); k, v (B, Hkv, Tk, D); query head h reads kv head h // (Hq // Hkv)."""
    raise NotImplementedError("gqa_attention: map query heads to kv heads, mask, softmax, weight v")

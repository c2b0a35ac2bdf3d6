"""Rotary position embeddings and Hugging Face rope_scaling.

Run `inferview grade rope <this file>` to check it.
"""

from __future__ import annotations

from torch import Tensor


def rope_frequencies(config: dict, seq_len: int | None = None) -> tuple[Tensor, float]:
    """(inv_freq float32 (d/2,), attention_factor) for config's rope_scaling.

    d = int(head_dim * partial_rotary_factor); types: default, linear, dynamic, yarn, llama3
    (rope_scaling["rope_type"], or the legacy "type"); anything else raises ValueError.
    """
    raise NotImplementedError(
        "rope_frequencies is not written yet: start from base ** (-2i/d), then apply the "
        "rope_scaling type's rule."
    )


def apply_rope(x: Tensor, positions: Tensor, inv_freq: Tensor, attention_factor: float = 1.0,
               interleaved: bool = False) -> Tensor:
    """Rotate the first R = 2 * len(inv_freq) dims of x (batch, heads, seq, head_dim).

    positions: (batch, seq) int64. Pairs (i, i + R/2), or (2i, 2i + 1) when interleaved, turn by
    positions * inv_freq[i]; cos and sin are scaled by attention_factor; x[..., R:] is unchanged.
    """
    raise NotImplementedError(
        "apply_rope is not written yet: rotate each pair (a, b) by theta = position * inv_freq."
    )

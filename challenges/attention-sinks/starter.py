"""Challenge attention-sinks: a StreamingLLM cache (sink tokens plus a sliding window, positions by
cache slot, RoPE applied when the keys are used).

`inferview grade attention-sinks <this file>` runs the checks.
"""

from __future__ import annotations

import torch
from torch import Tensor


class SinkCache:
    def __init__(self, num_sinks: int, window: int, num_heads: int, head_dim: int,
                 rope_theta: float = 10000.0, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu") -> None:
        raise NotImplementedError("SinkCache: keep the first num_sinks tokens and the newest window")

    @property
    def num_seen(self) -> int:
        raise NotImplementedError("num_seen: tokens appended so far")

    @property
    def num_cached(self) -> int:
        raise NotImplementedError("num_cached: min(num_seen, num_sinks + window)")

    def append(self, k: Tensor, v: Tensor) -> None:
        """k, v (num_heads, t_new, head_dim): keys before RoPE and values of the next tokens."""
        raise NotImplementedError("append: add the tokens, then evict the window's oldest")

    def token_ids(self) -> list[int]:
        raise NotImplementedError("token_ids: stream index of the token in each slot")

    def keys(self) -> Tensor:
        raise NotImplementedError("keys: cached keys rotated at their slots 0..num_cached-1")

    def values(self) -> Tensor:
        raise NotImplementedError("values: cached values in slot order")

    def attend(self, q: Tensor) -> Tensor:
        """q (num_heads, t_q, head_dim): queries before RoPE of the newest t_q tokens."""
        raise NotImplementedError("attend: rotate query i at slot num_cached - t_q + i, causal softmax")

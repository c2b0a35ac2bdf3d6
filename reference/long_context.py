"""Long-context arithmetic: RoPE frequencies and wavelengths, the context-extension scalings
(NTK-aware base change, YaRN's attention factor, Llama 3.1's frequency bands) and the cache of a
streaming (attention-sink) window.

Sources:

- Su et al. 2021, RoFormer: pair ``i`` of a ``d``-dim rotary head turns by ``theta^(-2i/d)`` radians
  per position, so its wavelength is ``2 pi theta^(2i/d)`` tokens.
- bloc97 2023, "NTK-Aware Scaled RoPE" (as written in Peng et al. 2023, YaRN, Sec. 3.1): to extend
  the context ``s`` times, change the base to ``b' = b s^(d / (d - 2))``.
- Peng et al. 2023, YaRN, Sec. 3.4: attention temperature ``sqrt(1/t) = 0.1 ln(s) + 1``; both q and
  k are multiplied by it (the ``mscale`` / ``attention_factor`` on cos and sin in Hugging Face
  transformers and vLLM), so the logits grow by its square.
- Llama 3.1's ``rope_scaling`` (``rope_type: llama3``; Hugging Face transformers
  ``_compute_llama3_parameters``): with ``L`` = ``original_max_position_embeddings``, pairs whose
  wavelength is below ``L / high_freq_factor`` keep their frequency, pairs above
  ``L / low_freq_factor`` are divided by ``factor``, and the pairs between are blended.
- Xiao et al. 2023, StreamingLLM: keep the first few tokens (4 attention sinks) and a rolling window
  of recent tokens, so the cache stops growing at ``sinks + window`` tokens.

Pure Python; no torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from inferview.reference import estimators as est
from inferview.reference.quantity import Params, Quantity

Config = Mapping[str, Any]

LLAMA3_BANDS = ("unscaled", "blended", "divided")
"""Llama 3.1's frequency bands: kept as trained, interpolated between, divided by ``factor``."""


def rotary_dim(config: Config) -> int:
    """Dimensions a head rotates: ``qk_rope_head_dim`` for MLA, else ``head_dim`` times
    ``partial_rotary_factor`` (1 when absent)."""
    if config.get("qk_rope_head_dim"):
        return int(config["qk_rope_head_dim"])
    return int(est.head_dim(config) * float(config.get("partial_rotary_factor") or 1.0))


def rope_base(config: Config) -> float:
    """``rope_theta`` (10,000 when the config does not say)."""
    return float(config.get("rope_theta") or 10000.0)


def training_context(config: Config) -> int:
    """The context the RoPE frequencies were trained at: ``rope_scaling``'s
    ``original_max_position_embeddings`` when the model was extended, else
    ``max_position_embeddings``."""
    scaling = config.get("rope_scaling") or {}
    return int(scaling.get("original_max_position_embeddings") or config["max_position_embeddings"])


def wavelengths(dim: int, base: float) -> list[float]:
    """Tokens per full turn of each of the ``dim / 2`` pairs: ``2 pi base^(2i/dim)``."""
    if dim < 2 or dim % 2:
        raise ValueError(f"rotary dimension must be even and at least 2, got {dim}")
    return [2 * math.pi * base ** (2 * i / dim) for i in range(dim // 2)]


def longest_wavelength(config: Config) -> float:
    """The slowest pair's wavelength, ``2 pi theta^((d - 2) / d)`` tokens."""
    return wavelengths(rotary_dim(config), rope_base(config))[-1]


def pairs_longer_than(config: Config, tokens: int) -> int:
    """Pairs whose wavelength exceeds ``tokens``: over that many positions they never complete a
    turn, so angles beyond it are ones training never produced."""
    return sum(w > tokens for w in wavelengths(rotary_dim(config), rope_base(config)))


def ntk_aware_base(base: float, dim: int, scale: float) -> float:
    """The NTK-aware base for an ``scale``-times longer context: ``base * scale^(dim/(dim-2))``."""
    if scale <= 0:
        raise ValueError("scale must be positive")
    return base * scale ** (dim / (dim - 2))


def yarn_mscale(scale: float) -> float:
    """YaRN's ``sqrt(1/t) = 0.1 ln(s) + 1`` (1 for ``s <= 1``), applied to both q and k."""
    return 1.0 if scale <= 1 else 0.1 * math.log(scale) + 1.0


def yarn_logit_factor(scale: float) -> float:
    """How much YaRN multiplies the attention logits: ``(0.1 ln(s) + 1)^2``."""
    return yarn_mscale(scale) ** 2


def llama3_band(wavelength: float, original: int, low_freq_factor: float,
                high_freq_factor: float) -> str:
    """Which Llama 3.1 band a pair of this wavelength falls in (one of ``LLAMA3_BANDS``)."""
    if wavelength < original / high_freq_factor:
        return "unscaled"
    if wavelength > original / low_freq_factor:
        return "divided"
    return "blended"


def llama3_band_pairs(config: Config, band: str) -> int:
    """Pairs of the config's rotary head in ``band`` under its ``llama3`` ``rope_scaling``."""
    if band not in LLAMA3_BANDS:
        raise ValueError(f"band must be one of {', '.join(LLAMA3_BANDS)}, got {band!r}")
    s = config.get("rope_scaling") or {}
    if (s.get("rope_type") or s.get("type")) != "llama3":
        raise ValueError("the config has no llama3 rope_scaling")
    original = int(s["original_max_position_embeddings"])
    lo, hi = float(s["low_freq_factor"]), float(s["high_freq_factor"])
    return sum(llama3_band(w, original, lo, hi) == band
               for w in wavelengths(rotary_dim(config), rope_base(config)))


def streaming_cache_tokens(seq_len: int, sinks: int, window: int) -> int:
    """Tokens a StreamingLLM cache holds after ``seq_len`` tokens: ``min(seq_len, sinks + window)``."""
    if min(seq_len, sinks, window) < 0:
        raise ValueError("lengths must be non-negative")
    return min(seq_len, sinks + window)


def _train_len(c: dict[str, Any], p: Params) -> int:
    return int(p["train_len"]) if int(p.get("train_len") or 0) else training_context(c)


QUANTITIES: list[Quantity] = [
    Quantity(
        "rope_longest_wavelength", "tokens",
        "2 pi x rope_theta^((d - 2) / d), d the rotary dimension (Su et al. 2021, RoFormer)",
        lambda c, p: longest_wavelength(c),
    ),
    Quantity(
        "rope_pairs_beyond_context", "count",
        "number of pairs i < d/2 with 2 pi x rope_theta^(2i/d) > training context (the pairs "
        "that never complete a turn in training; YaRN's r < 1, interpolated fully)",
        lambda c, p: float(pairs_longer_than(c, _train_len(c, p))),
        defaults={"train_len": 0},
    ),
    Quantity(
        "ntk_aware_rope_base", "count",
        "rope_theta x s^(d / (d - 2)) (NTK-aware scaling, as in Peng et al. 2023, YaRN, Sec. 3.1)",
        lambda c, p: ntk_aware_base(rope_base(c), rotary_dim(c), float(p["scale"])),
        required=("scale",),
    ),
    Quantity(
        "yarn_logit_factor", "ratio",
        "(0.1 ln(s) + 1)^2: YaRN's sqrt(1/t) = 0.1 ln(s) + 1 multiplies both q and k "
        "(Peng et al. 2023, YaRN, Sec. 3.4)",
        lambda c, p: yarn_logit_factor(float(p["scale"])),
        needs_model=False, required=("scale",),
    ),
    Quantity(
        "llama3_rope_band_pairs", "count",
        "pairs with wavelength 2 pi theta^(2i/d) below L / high_freq_factor (unscaled), above "
        "L / low_freq_factor (divided by factor), or between (blended); L = "
        "original_max_position_embeddings (Llama 3.1 rope_scaling)",
        lambda c, p: float(llama3_band_pairs(c, str(p["band"]))),
        required=("band",),
    ),
    Quantity(
        "streaming_kv_bytes", "bytes",
        "KV bytes of min(seq_len, sinks + window) cached tokens x batch (Xiao et al. 2023, "
        "StreamingLLM: 4 sink tokens plus a rolling window)",
        lambda c, p: float(est.kv_cache_bytes(
            c, streaming_cache_tokens(int(p["seq_len"]), int(p["sinks"]), int(p["window"])),
            int(p["batch"]), str(p["dtype"]))),
        required=("seq_len", "window"), defaults={"sinks": 4, "batch": 1, "dtype": "bf16"},
    ),
]
"""The long-context quantities numeric drills ask for."""

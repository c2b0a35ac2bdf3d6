"""Rotary position embeddings (RoPE): the inverse frequencies of Hugging Face ``rope_scaling``
configs and the rotation itself, in both pair layouts.

Sources:
- Su et al. 2021, *RoFormer: Enhanced Transformer with Rotary Position Embedding*
  (arXiv:2104.09864): pair ``i`` of a ``d``-dimensional rotary head turns by
  ``theta_i = base^(-2i/d)`` radians per position; ``(a, b) -> (a cos - b sin, b cos + a sin)``.
- Pair layouts: GPT-J (Wang & Komatsuzaki 2021, ``rotate_every_two``) rotates the interleaved
  pairs ``(2i, 2i + 1)``; GPT-NeoX (Black et al. 2022) and Llama in Hugging Face transformers
  (``rotate_half``) rotate the half-split pairs ``(i, i + d/2)``. Both rotate only the first ``d``
  dimensions of a head (``rotary_dim`` / ``partial_rotary_factor``) and pass the rest through.
- Hugging Face transformers 4.57, ``modeling_rope_utils``: ``_compute_default_rope_parameters``,
  ``_compute_linear_scaling_rope_parameters`` (kaiokendev 2023: divide every frequency by
  ``factor``), ``_compute_dynamic_ntk_parameters`` (bloc97 and emozilla 2023: a larger base once
  the sequence outgrows ``max_position_embeddings``), ``_compute_yarn_parameters`` (Peng et al.
  2023, *YaRN*, arXiv:2309.00071: a per-pair ramp between extrapolation and interpolation, and the
  attention factor ``0.1 ln(s) + 1`` applied to cos and sin) and ``_compute_llama3_parameters``
  (Llama 3.1's three frequency bands). The rules are restated in the ``rope`` challenge's statement;
  this module implements them independently, in float64.
- Until transformers issue #38224 was fixed (PR #40320, August 2025), YaRN replaced ``factor`` by
  ``max_position_embeddings / original_max_position_embeddings`` whenever the latter was set; the
  rule here is the fixed one: ``factor`` as configured.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

__all__ = [
    "ROPE_TYPES",
    "angles",
    "apply_rope",
    "apply_rope_f64",
    "head_dim",
    "rope_frequencies",
    "rope_frequencies_f64",
    "rope_type",
    "rotary_dim",
    "yarn_correction_dims",
]

Config = Mapping[str, Any]

ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3")
"""The ``rope_scaling`` types implemented here."""


def head_dim(config: Config) -> int:
    """``head_dim`` when present and not null, else ``hidden_size // num_attention_heads``."""
    if config.get("head_dim"):
        return int(config["head_dim"])
    return int(config["hidden_size"]) // int(config["num_attention_heads"])


def rotary_dim(config: Config) -> int:
    """``d = int(head_dim * partial_rotary_factor)`` (the factor defaults to 1)."""
    factor = config.get("partial_rotary_factor")
    return int(head_dim(config) * (1.0 if factor is None else float(factor)))


def rope_type(config: Config) -> str:
    """``rope_scaling["rope_type"]``, else the legacy ``rope_scaling["type"]``; ``"default"`` when
    ``rope_scaling`` is absent or null. Raises ``ValueError`` for a type not in :data:`ROPE_TYPES`."""
    scaling = config.get("rope_scaling")
    if not scaling:
        return "default"
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind not in ROPE_TYPES:
        raise ValueError(f"unsupported rope_scaling type {kind!r}; expected one of {ROPE_TYPES}")
    return str(kind)


def _base_inv_freq(base: float, dim: int) -> Tensor:
    """``base^(-2i/d)`` for ``i = 0 .. d/2 - 1``, float64."""
    if dim < 2 or dim % 2:
        raise ValueError(f"the rotary dimension must be even and >= 2, got {dim}")
    exponent = torch.arange(0, dim, 2, dtype=torch.float64) / dim
    return 1.0 / (float(base) ** exponent)


def _mscale(scale: float, mscale: float = 1.0) -> float:
    """YaRN's ``0.1 * mscale * ln(scale) + 1`` (1 when ``scale <= 1``)."""
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def yarn_correction_dims(config: Config) -> tuple[float, float]:
    """YaRN's correction dimensions before truncation and clamping:
    ``c(r) = d ln(L / (2 pi r)) / (2 ln base)`` for ``r = beta_fast`` and ``r = beta_slow``."""
    s = config["rope_scaling"]
    dim, base = rotary_dim(config), float(config.get("rope_theta") or 10000.0)
    original = s.get("original_max_position_embeddings") or config["max_position_embeddings"]

    def corr(rotations: float) -> float:
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

    return corr(s.get("beta_fast") or 32), corr(s.get("beta_slow") or 1)


def rope_frequencies_f64(config: Config, seq_len: int | None = None) -> tuple[Tensor, float]:
    """``(inv_freq, attention_factor)``: float64 ``(d/2,)`` and a float, for every type in
    :data:`ROPE_TYPES`. ``seq_len`` (the length reached, largest position + 1) matters only to
    ``dynamic``."""
    kind = rope_type(config)
    s = config.get("rope_scaling") or {}
    base = float(config.get("rope_theta") or 10000.0)
    dim = rotary_dim(config)
    inv = _base_inv_freq(base, dim)
    if kind == "default":
        return inv, 1.0
    factor = float(s["factor"])
    if kind == "linear":
        return inv / factor, 1.0
    if kind == "dynamic":
        max_pos = int(config["max_position_embeddings"])
        length = max_pos if seq_len is None else max(int(seq_len), max_pos)
        new_base = base * (factor * length / max_pos - (factor - 1)) ** (dim / (dim - 2))
        return _base_inv_freq(new_base, dim), 1.0
    if kind == "llama3":
        original = float(s["original_max_position_embeddings"])
        lo, hi = float(s["low_freq_factor"]), float(s["high_freq_factor"])
        wavelen = 2 * math.pi / inv
        smooth = (original / wavelen - lo) / (hi - lo)
        blended = (1 - smooth) * inv / factor + smooth * inv
        out = torch.where(wavelen > original / lo, inv / factor, inv)  # long waves: divided
        medium = (wavelen >= original / hi) & (wavelen <= original / lo)
        return torch.where(medium, blended, out), 1.0
    # yarn
    low, high = yarn_correction_dims(config)
    if s.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = ((torch.arange(dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    inv_freq = inv * (1 - ramp) + (inv / factor) * ramp  # ramp 0: extrapolate, 1: interpolate
    attention = s.get("attention_factor")
    if attention is None:
        mscale, mscale_all = s.get("mscale"), s.get("mscale_all_dim")
        if mscale and mscale_all:
            attention = _mscale(factor, float(mscale)) / _mscale(factor, float(mscale_all))
        else:
            attention = _mscale(factor)
    return inv_freq, float(attention)


def rope_frequencies(config: Config, seq_len: int | None = None) -> tuple[Tensor, float]:
    """:func:`rope_frequencies_f64` with ``inv_freq`` cast to float32, as the challenge returns it."""
    inv, attention = rope_frequencies_f64(config, seq_len)
    return inv.float(), attention


def _pair_index(dim: int, rot: int, interleaved: bool) -> tuple[Tensor, Tensor]:
    """Indices ``(a, b)`` of the ``rot/2`` rotated pairs within a head of ``dim`` dimensions."""
    half = torch.arange(rot // 2)
    if interleaved:
        return 2 * half, 2 * half + 1
    return half, half + rot // 2


def apply_rope_f64(x: Tensor, positions: Tensor, inv_freq: Tensor, attention_factor: float = 1.0,
                   interleaved: bool = False) -> Tensor:
    """RoPE in float64: ``x`` ``(B, H, T, D)``, ``positions`` ``(B, T)`` int, ``inv_freq``
    ``(R/2,)`` with ``R <= D``. Pair ``i`` (``(2i, 2i+1)`` interleaved, ``(i, i + R/2)`` half-split)
    turns by ``positions * inv_freq[i]`` and is scaled by ``attention_factor``; dimensions ``R..D-1``
    pass through unchanged. Returns float64 ``(B, H, T, D)`` on ``x``'s device."""
    batch, _, seq, dim = x.shape
    rot = 2 * inv_freq.numel()
    if rot > dim:
        raise ValueError(f"inv_freq rotates {rot} dimensions but the head has {dim}")
    if tuple(positions.shape) != (batch, seq):
        raise ValueError(f"positions must be (batch, seq) = ({batch}, {seq}), got {tuple(positions.shape)}")
    xd = x.detach().to(torch.float64)
    theta = positions.to(xd.device, torch.float64)[:, None, :, None] * inv_freq.to(xd.device, torch.float64)
    cos, sin = torch.cos(theta) * attention_factor, torch.sin(theta) * attention_factor  # (B, 1, T, R/2)
    ia, ib = (i.to(xd.device) for i in _pair_index(dim, rot, interleaved))
    a, b = xd[..., ia], xd[..., ib]
    out = xd.clone()
    out[..., ia] = a * cos - b * sin
    out[..., ib] = b * cos + a * sin
    return out


def apply_rope(x: Tensor, positions: Tensor, inv_freq: Tensor, attention_factor: float = 1.0,
               interleaved: bool = False) -> Tensor:
    """:func:`apply_rope_f64` rounded once to ``x``'s dtype."""
    return apply_rope_f64(x, positions, inv_freq, attention_factor, interleaved).to(x.dtype)


def angles(positions: Tensor, inv_freq: Tensor) -> Tensor:
    """``positions[..., None] * inv_freq`` in float64: the angle of every pair, ``(..., R/2)``."""
    return positions.to(torch.float64)[..., None] * inv_freq.detach().cpu().to(torch.float64)

"""The records of the model and GPU presets (``inferview.reference.presets``)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

GiB = 2**30


@dataclass(frozen=True)
class ModelPreset:
    """A published model configuration."""

    name: str
    """Short name used on the command line and in drills, e.g. ``llama-3-70b``."""
    title: str
    """Display name, e.g. "Llama-3-70B"."""
    config: dict[str, Any]
    """``config.json``-style dict (Hugging Face keys)."""
    source: str
    """Where the numbers come from (repository config.json and/or paper)."""
    notes: str = ""
    """Anything a user should know when reading the numbers (e.g. an inactive sliding window)."""

    def config_copy(self) -> dict[str, Any]:
        """A deep copy of ``config`` that callers may modify."""
        return copy.deepcopy(self.config)


@dataclass(frozen=True)
class GpuPreset:
    """An accelerator's memory and peak throughput, from its datasheet."""

    name: str
    """Short name, e.g. ``h100-sxm``."""
    title: str
    """Display name, e.g. "NVIDIA H100 SXM 80GB"."""
    memory_bytes: int
    """Memory capacity in bytes (datasheet "N GB" read as N GiB, see module docstring)."""
    bf16_flops: float
    """Dense BF16 tensor-core peak, FLOP/s."""
    bandwidth_bytes_per_s: float
    """Peak memory bandwidth, bytes/s."""
    source: str
    """Datasheet the figures come from."""

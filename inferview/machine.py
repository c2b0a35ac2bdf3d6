"""What this machine grades with: inferview's version, Python, torch, CUDA and its GPUs, Triton.

``inferview doctor`` prints :func:`probe`'s :class:`MachineInfo` (``--json``: ``to_json()``), and
``inferview doctor --remote HOST`` reads the remote's back with ``from_json()``. Importing this
module is cheap; :func:`probe` imports torch, so only ``doctor`` calls it, and
:func:`device_name` asks torch only where the grading has already imported it.
"""

from __future__ import annotations

import platform
import socket
import sys
from dataclasses import dataclass, field
from typing import Any

from inferview import __version__


@dataclass
class MachineInfo:
    """One machine's grading set-up."""

    version: str
    """inferview's version: a remote must run the same one (its challenges are the same then)."""
    python: str
    platform: str
    host: str
    torch: str | None = None
    """torch's version, or None when torch cannot be imported."""
    cuda: str | None = None
    """The CUDA version torch was built with, or None for a CPU build."""
    gpus: list[str] = field(default_factory=list)
    """The GPUs torch can use, by name (empty: grading runs on the CPU)."""
    triton: str | None = None
    """Triton's version, or None when it is not installed."""
    problem: str = ""
    """Why torch could not be asked (an import error), or ""."""

    @property
    def device(self) -> str:
        """Where a CUDA challenge would run: the first GPU's name, or ``cpu``."""
        return self.gpus[0] if self.gpus else "cpu"

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "python": self.python, "platform": self.platform,
                "host": self.host, "torch": self.torch, "cuda": self.cuda, "gpus": list(self.gpus),
                "triton": self.triton, "device": self.device, "problem": self.problem}

    @classmethod
    def from_json(cls, data: Any) -> MachineInfo:
        """Read ``to_json()``'s object (``ValueError`` when it is not one)."""
        if not isinstance(data, dict) or not isinstance(data.get("version"), str):
            raise ValueError("not an inferview doctor report")
        gpus = data.get("gpus") or []
        if not isinstance(gpus, list):
            raise ValueError("not an inferview doctor report (gpus is not a list)")
        return cls(data["version"], str(data.get("python", "")), str(data.get("platform", "")),
                   str(data.get("host", "")), data.get("torch"), data.get("cuda"),
                   [str(g) for g in gpus], data.get("triton"), str(data.get("problem") or ""))

    def lines(self) -> list[tuple[str, str]]:
        """``(label, value)`` rows for people."""
        if self.torch is None:
            torch = f"not importable: {self.problem}" if self.problem else "not installed"
        else:
            torch = f"{self.torch} ({f'CUDA {self.cuda}' if self.cuda else 'CPU build'})"
        if self.gpus:
            gpu = ", ".join(self.gpus)
        else:
            gpu = "none: solutions run on the CPU" + (", Triton in its interpreter"
                                                      if self.triton else "")
        return [("inferview", self.version), ("python", self.python), ("platform", self.platform),
                ("host", self.host), ("torch", torch), ("GPU", gpu),
                ("triton", self.triton or "not installed")]


def _triton_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return None


def probe() -> MachineInfo:
    """This machine's set-up (imports torch)."""
    info = MachineInfo(__version__, platform.python_version(), platform.platform(terse=True),
                       socket.gethostname(), triton=_triton_version())
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - a broken torch is what doctor is for: say it
        info.problem = f"{type(exc).__name__}: {exc}".splitlines()[0]
        return info
    info.torch = str(torch.__version__)
    info.cuda = torch.version.cuda
    try:
        if torch.cuda.is_available():
            info.gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except Exception as exc:  # noqa: BLE001 - a driver problem: report it, list no GPU
        info.problem = f"CUDA: {type(exc).__name__}: {exc}".splitlines()[0]
    return info


def device_name(backend: str) -> str:
    """The name of the device a grading ran on: ``cpu``, or the GPU's name for ``cuda``. Asks
    torch only for ``cuda``, where the grading process has already imported and set it up."""
    if backend != "cuda":
        return "cpu"
    torch = sys.modules.get("torch")
    if torch is None:
        return "cuda"
    try:
        return str(torch.cuda.get_device_name(torch.cuda.current_device()))
    except Exception:  # noqa: BLE001 - the name is for the record only
        return "cuda"

"""The one grading a batch runs per submission, on this machine or on a cluster node.

:func:`grade_submission` receives the submission's bytes (a node need not share the submitter's
filesystem), writes them under their own file name in a fresh temporary folder and grades that file
through :func:`inferview.submit.submit` with the :class:`~inferview.submit.LocalBackend`, which
is exactly what ``inferview grade --no-record`` does: the same engine, the solution in its own
isolated worker process, nothing recorded (a batch grades other people's work). It returns a
:class:`TaskOutcome`: the schema-1 result, the host and the device it ran on.

:class:`ChallengeRef` names the challenge for the node: a built-in one by id (every node has the
package), any other one with its folder's files, unpacked next to the submission.
:func:`choose_device` is the rule for where a challenge runs, given how many GPUs there are.
"""

from __future__ import annotations

import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferview.grading import GradingUsageError

SHIPPED_LIMIT = 16 << 20
"""The most bytes of a challenge folder shipped with each task."""
_NOT_SHIPPED = {"solutions", "hostile", "__pycache__"}


@dataclass(frozen=True)
class ChallengeRef:
    """The challenge to grade against, as a task carries it."""

    name: str
    """A built-in challenge's id, or a folder this machine can read, or (with ``files``) the
    folder's name."""
    files: tuple[tuple[str, bytes], ...] = ()
    """The folder's files (relative path, bytes) when it is shipped, else empty."""

    @classmethod
    def shipped(cls, folder: Path) -> ChallengeRef:
        """``folder``'s files, its solutions and hidden files left out (``GradingUsageError`` past
        :data:`SHIPPED_LIMIT`)."""
        files, size = [], 0
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder)
            if (not path.is_file() or rel.parts[0] in _NOT_SHIPPED
                    or any(p.startswith(".") or p == "__pycache__" for p in rel.parts)):
                continue
            data = path.read_bytes()
            size += len(data)
            if size > SHIPPED_LIMIT:
                raise GradingUsageError(f"the challenge folder {folder} is over "
                                        f"{SHIPPED_LIMIT >> 20} MB: too large to ship to the cluster")
            files.append((rel.as_posix(), data))
        return cls(folder.name, tuple(files))

    def unpack(self, into: Path) -> str:
        """What ``find_challenge`` is given on this machine (the files written under ``into``)."""
        if not self.files:
            return self.name
        folder = into / "challenge" / self.name
        for rel, data in self.files:
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return str(folder)


@dataclass(frozen=True)
class TaskOutcome:
    """What grading one submission gave."""

    result: dict[str, Any] | None
    """The schema-1 result object, or None when the submission could not be graded."""
    host: str
    """The machine that graded it."""
    device: str = ""
    """``cpu``, or the CUDA device's name."""
    error: str | None = None
    """Why it could not be graded (an unknown challenge on the node, a device not there)."""


def device_name(backend: str) -> str:
    """``cpu``, or the name of the CUDA device this process sees first (torch is already imported
    by the engine when this is called)."""
    if backend != "cuda":
        return "cpu"
    import torch

    return str(torch.cuda.get_device_name(torch.cuda.current_device()))


def choose_device(spec: Any, device: str, gpus: int) -> str:
    """``cuda`` or ``cpu``: where ``spec``'s challenge is graded when ``device`` is asked for and
    ``gpus`` GPUs are there. ``GradingUsageError`` when the two cannot be met."""
    if device == "cuda" or spec.device == "cuda":
        if spec.device == "cpu":
            raise GradingUsageError(f"challenge {spec.id} is graded on the CPU only")
        if gpus <= 0:
            raise GradingUsageError(f"challenge {spec.id} needs a CUDA GPU and none is available"
                                    if device != "cuda" else "--device cuda: no CUDA GPU is available")
        return "cuda"
    if device == "cpu" or spec.device == "cpu":
        return "cpu"
    return "cuda" if gpus > 0 else "cpu"


def grade_submission(challenge: ChallengeRef, filename: str, source: bytes, device: str = "auto",
                     seed: int | None = None, fail_fast: bool = False) -> TaskOutcome:
    """Grade ``source`` as the file ``filename`` against ``challenge``. Its name is what a Ray
    worker shows while it runs (``ray::grade_submission``)."""
    host = socket.gethostname()
    from inferview.content.loader import UnknownChallenge, find_challenge
    from inferview.submit import GradingUnavailable, LocalBackend, submit

    with tempfile.TemporaryDirectory(prefix="inferview-batch-") as tmp:
        try:
            found = find_challenge(challenge.unpack(Path(tmp)))
        except UnknownChallenge as exc:
            return TaskOutcome(None, host, error=f"on {host}: {exc}")
        path = Path(tmp) / Path(filename).name
        path.write_bytes(source)
        try:
            outcome = submit(found, path, LocalBackend(), device=device, seed=seed,
                             fail_fast=fail_fast)
        except (GradingUsageError, GradingUnavailable) as exc:
            return TaskOutcome(None, host, error=str(exc))
    result = outcome.result
    return TaskOutcome(result.to_json(), host, device_name(result.backend))

"""A cohort's folder → one :class:`Submission` per candidate.

Two layouts, mixed freely: ``DIR/<candidate>.py`` (a file per candidate) and
``DIR/<candidate>/<file>.py`` (a folder per candidate holding exactly one ``.py`` file). Hidden
entries, ``__pycache__`` and files that are not ``.py`` are ignored. A folder that is not there or
holds no submission is a :class:`DiscoveryError` (a usage error); a candidate whose submission
cannot be read (a folder with no ``.py`` file or several, an unreadable file, the same name twice)
is still a :class:`Submission`, with ``problem`` saying why, so the batch reports it as not graded
instead of losing it.

The submission's bytes are read here, once: they are what is graded, on this machine or shipped to
a cluster node that does not share this filesystem.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

LAYOUTS = "a .py file per candidate, or DIR/<candidate>/<file>.py"
"""The accepted layouts, for messages."""


class DiscoveryError(ValueError):
    """The folder itself cannot be graded (missing, not a folder, no submission in it)."""


@dataclass(frozen=True)
class Submission:
    """One candidate's submission."""

    candidate: str
    """The file's stem (``DIR/alice.py``) or the folder's name (``DIR/alice/solution.py``)."""
    path: Path
    """The file graded, or the candidate's folder when there is no single file."""
    source: bytes = b""
    """The file's bytes as read (empty when ``problem`` is set)."""
    problem: str | None = None
    """Why this submission cannot be graded, or None."""

    @property
    def filename(self) -> str:
        """The file's name as the grader sees it."""
        return self.path.name if self.path.suffix == ".py" else self.path.name + ".py"


def _ignored(entry: Path) -> bool:
    return entry.name.startswith(".") or entry.name == "__pycache__"


def _read(candidate: str, path: Path) -> Submission:
    try:
        return Submission(candidate, path, path.read_bytes())
    except OSError as exc:
        return Submission(candidate, path, problem=f"cannot read {path.name}: "
                                                   f"{exc.strerror or exc}")


def _from_folder(folder: Path) -> Submission:
    try:
        files = sorted(p for p in folder.iterdir()
                       if p.suffix == ".py" and not _ignored(p) and p.is_file())
    except OSError as exc:
        return Submission(folder.name, folder,
                          problem=f"cannot read the folder {folder.name}/: {exc.strerror or exc}")
    if not files:
        return Submission(folder.name, folder, problem=f"no .py file in {folder.name}/")
    if len(files) > 1:
        names = ", ".join(p.name for p in files[:5]) + (", ..." if len(files) > 5 else "")
        return Submission(folder.name, folder,
                          problem=f"{len(files)} .py files in {folder.name}/ ({names}): "
                                  "keep exactly one")
    return _read(folder.name, files[0])


def discover(root: Path) -> list[Submission]:
    """Every candidate's submission in ``root``, sorted by candidate (case-insensitively)."""
    if not root.exists():
        raise DiscoveryError(f"no such folder: {root}")
    if not root.is_dir():
        raise DiscoveryError(f"not a folder: {root} (expected {LAYOUTS})")
    try:
        entries = sorted(root.iterdir())
    except OSError as exc:
        raise DiscoveryError(f"cannot read the folder {root}: {exc.strerror or exc}") from None
    found: dict[str, Submission] = {}
    seen: dict[str, str] = {}  # candidate (casefolded) -> the entry it came from, for messages
    for entry in entries:
        if _ignored(entry):
            continue
        if entry.is_dir():
            sub = _from_folder(entry)
        elif entry.suffix == ".py" and entry.is_file():
            sub = _read(entry.stem, entry)
        else:
            continue
        key = sub.candidate.casefold()
        label = entry.name + ("/" if entry.is_dir() else "")
        if key in found:
            found[key] = Submission(found[key].candidate, root / seen[key].rstrip("/"), problem=(
                f"two submissions for {sub.candidate}: {seen[key]} and {label}"))
            continue
        found[key], seen[key] = sub, label
    if not found:
        raise DiscoveryError(f"no submissions in {root} (expected {LAYOUTS})")
    return sorted(found.values(), key=lambda s: (s.candidate.casefold(), s.candidate))


"""Grading folders that say whose they are, and the sweep of those whose owner has died.

Every worker's folder (``inferview-grade-*``) and fork server's folder (``inferview-zygote-*``) is an
:class:`OwnedDir`: it holds an ``owner`` file that the process which made it keeps locked
(``flock``) for as long as it lives, and a ``pids`` file naming the processes started in it (pid
and start time). A process killed with SIGKILL cannot remove its folder, but the kernel releases
its lock. The first folder a process makes sweeps the temporary folder first
(:func:`sweep_once`): each folder whose lock it can take belongs to no live process, so what is
left of its processes (the recorded ones, when their start time still matches, so a reused pid
is never touched; and any process carrying the run's token in its environment) is killed and the
folder removed. A folder whose lock is held is never touched.

This runs wherever a grading starts a worker: ``inferview grade``, ``watch``, ``challenge`` and the
app's grading service alike.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

PREFIXES = ("inferview-grade-", "inferview-zygote-")
OWNER_FILE = "owner"
PIDS_FILE = "pids"
UNOWNED_GRACE_S = 600.0
"""A folder without an ``owner`` file (made by an older inferview, or being made this instant) is
removed only when it is older than this."""

_SWEPT = False
_SWEPT_LOCK = threading.Lock()


@dataclass
class SweepReport:
    """What one sweep removed."""

    folders: list[Path] = field(default_factory=list)
    """Folders of dead owners, removed."""
    killed: list[int] = field(default_factory=list)
    """Pids of their processes that were still running, killed."""


class OwnedDir:
    """A new temporary folder named ``prefix*``, locked by this process until :meth:`remove`."""

    def __init__(self, prefix: str, token: str = "") -> None:
        sweep_once()
        self.path = Path(tempfile.mkdtemp(prefix=prefix))
        self._fd = os.open(self.path / OWNER_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)  # written after the lock: see _sweep_folder
        os.write(self._fd, f"{os.getpid()} {token}\n".encode())

    def record_pid(self, pid: int, start_ticks: int) -> None:
        """Name a process started for this folder, for the sweep should this process die."""
        with contextlib.suppress(OSError), open(self.path / PIDS_FILE, "a", encoding="ascii") as f:
            f.write(f"{pid} {start_ticks}\n")

    def remove(self) -> None:
        """Remove the folder, then let go of it."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1


def start_ticks(pid: int) -> int:
    """When ``pid`` started (clock ticks after boot), 0 when unknown."""
    from inferview.graders.process import _proc_stat

    st = _proc_stat(pid)
    return st[3] if st else 0


def sweep_once() -> None:
    """:func:`sweep_stale` the first time this process makes a grading folder."""
    global _SWEPT
    with _SWEPT_LOCK:
        if _SWEPT:
            return
        _SWEPT = True
    with contextlib.suppress(OSError):
        sweep_stale()


def sweep_stale(root: Path | None = None) -> SweepReport:
    """Remove the grading folders in ``root`` (the temporary folder) whose owner is gone, after
    killing what is left of their processes."""
    report = SweepReport()
    root = Path(root) if root is not None else Path(tempfile.gettempdir())
    with os.scandir(root) as entries:
        folders = [Path(e.path) for e in entries
                   if e.name.startswith(PREFIXES) and e.is_dir(follow_symlinks=False)]
    for folder in folders:
        with contextlib.suppress(OSError):
            _sweep_folder(folder, report)
    return report


def _sweep_folder(folder: Path, report: SweepReport) -> None:
    st = folder.lstat()
    if st.st_uid != os.getuid():
        return  # another user's
    try:
        fd = os.open(folder / OWNER_FILE, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        if time.time() - st.st_mtime > UNOWNED_GRACE_S:
            shutil.rmtree(folder, ignore_errors=True)
            report.folders.append(folder)
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # its owner lives
        owner = os.pread(fd, 4096, 0).decode("ascii", "replace").split()
        if not owner and time.time() - st.st_mtime < UNOWNED_GRACE_S:
            return  # made this instant: its owner opened the file and is about to lock it
        token = owner[1] if len(owner) > 1 else ""
        report.killed += _kill_leftovers(folder, token)
        shutil.rmtree(folder, ignore_errors=True)
        report.folders.append(folder)
    finally:
        os.close(fd)


def _kill_leftovers(folder: Path, token: str) -> list[int]:
    """SIGKILL the recorded processes of ``folder`` that still run (their start time matching)
    with their process groups, and every process carrying ``token``."""
    from inferview.graders.process import TOKEN_VAR, _all_pids, _has_token, _proc_stat

    killed = []
    try:
        lines = (folder / PIDS_FILE).read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    for line in lines:
        try:
            pid, ticks = (int(x) for x in line.split())
        except ValueError:
            continue
        st = _proc_stat(pid)
        if st is None or st[3] != ticks or pid == os.getpid():
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if st[1] == pid:  # a group leader (workers and fork servers start their own)
                os.killpg(pid, signal.SIGKILL)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    if token:
        needle = f"{TOKEN_VAR}={token}".encode()
        for pid in _all_pids():
            if pid != os.getpid() and _has_token(pid, needle):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
    return killed

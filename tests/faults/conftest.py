"""Shared set-up of the fault suite: a checked store, a private temporary folder, a small disk."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from inferview.store import Store


def quick_check(path: Path) -> str:
    """``PRAGMA quick_check`` of a SQLite file, opened read-only (nothing written beside it)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("PRAGMA quick_check").fetchone()[0]
    finally:
        conn.close()


@pytest.fixture
def open_checked() -> Callable[[Path], Store]:
    """Open a store as the next start would, and check it: no repair notice, ``quick_check`` ok."""

    def open_(path: Path) -> Store:
        store = Store.open(path, backup=False)
        assert store.notice is None, store.notice
        with store._lock:
            assert store._conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        return store

    return open_


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder of this test's own (``TMPDIR``), so that what its processes leave behind
    and what their sweeps remove are this test's alone."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


def cli(*args: str, env: dict[str, str] | None = None, **kw) -> subprocess.Popen:
    """Start the real ``inferview`` command (``python -m inferview``'s entry point)."""
    return subprocess.Popen([sys.executable, "-c", "from inferview.cli import main; main()", *args],
                            env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


@dataclass
class SmallDisk:
    """A folder on a disk that can be filled: ``mode`` is ``tmpfs`` (a 2 MiB filesystem mounted
    for the test) or ``fsize`` (no mount allowed: writes past :attr:`limit` bytes fail with EFBIG
    in a process run with :meth:`preexec`)."""

    mode: str
    path: Path
    limit: int

    def fill(self, leave: int = 0) -> None:
        """Take every byte left but ``leave`` (tmpfs); with ``fsize`` the limit is applied per
        process instead."""
        if self.mode != "tmpfs":
            return
        fd = os.open(self.path / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for block in (65536, 512, 1):  # then the last partial blocks
                with contextlib.suppress(OSError):
                    while True:
                        os.write(fd, b"\0" * block)
            if leave:
                os.ftruncate(fd, max(0, os.fstat(fd).st_size - leave))
        finally:
            os.close(fd)

    def free(self) -> None:
        """Give the space back."""
        (self.path / "filler").unlink(missing_ok=True)

    def preexec(self, limit: int) -> Callable[[], None] | None:
        """For ``subprocess``: in ``fsize`` mode, a child whose files cannot grow past ``limit``
        bytes; None on a tmpfs (the disk itself is full)."""
        if self.mode != "fsize":
            return None

        def apply() -> None:
            import resource
            import signal

            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past it fail with EFBIG
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        return apply


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    """A 2 MiB tmpfs mounted at a folder of this test (unmounted afterwards, whatever happens), or,
    where mounting is not allowed, a per-process file-size limit of 2 MiB."""
    mount = tmp_path / f"disk-{uuid.uuid4().hex[:8]}"
    mount.mkdir()
    size = 2 << 20
    mounted = False
    if (os.geteuid() == 0 and sys.platform.startswith("linux")
            and os.environ.get("INFERVIEW_TEST_DISK") != "fsize"):  # (to try the fallback)
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs",
                                  str(mount)], capture_output=True).returncode == 0
    try:
        yield SmallDisk("tmpfs" if mounted else "fsize", mount, size)
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@pytest.fixture
def quick_check_fn() -> Callable[[Path], str]:
    """:func:`quick_check`, for tests."""
    return quick_check

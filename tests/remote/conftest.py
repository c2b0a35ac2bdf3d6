"""A real ``sshd`` on loopback, and a "remote" inferview with a data folder of its own."""

from __future__ import annotations

import os
import secrets
import shlex
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from inferview.tests.remote.sshd import SSHServer, missing


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHServer]:
    reason = missing()
    if reason:
        pytest.skip(f"no OpenSSH server for the remote-grading tests: {reason}")
    server = SSHServer.start(tmp_path_factory.mktemp("sshd"))
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Remote:
    """The remote side: its inferview command, data folder and temporary folder."""

    server: SSHServer
    command: str
    home: Path
    tmp: Path
    token: str
    """In the environment of every process the remote starts (to find leftovers)."""

    def processes(self) -> list[int]:
        """The remote's processes still running: its inferview (the token in its environment)
        and any worker (working in a folder under the remote's temporary folder)."""
        found = []
        needle = f"INFERVIEW_TEST_TOKEN={self.token}".encode()
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    mine = needle in f.read()
                mine = mine or os.readlink(f"/proc/{name}/cwd").startswith(str(self.tmp))
            except OSError:
                continue
            if mine:
                found.append(int(name))
        return found

    def wait_clean(self, timeout_s: float = 15) -> tuple[list[int], list[str]]:
        """Wait for the remote to end every process and remove its temporary files; what is
        left (processes, files) when it has not."""
        deadline = time.monotonic() + timeout_s
        while True:
            procs, files = self.processes(), sorted(p.name for p in self.tmp.iterdir())
            if (not procs and not files) or time.monotonic() > deadline:
                return procs, files
            time.sleep(0.1)


@pytest.fixture
def remote(sshd: SSHServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Remote:
    inferview = Path(sys.executable).with_name("inferview")
    if not inferview.is_file():
        pytest.skip(f"no inferview script beside {sys.executable} (install the package)")
    home, tmp = tmp_path / "remote-home", tmp_path / "remote-tmp"
    home.mkdir()
    tmp.mkdir()
    token = secrets.token_hex(8)
    command = (f"env INFERVIEW_HOME={shlex.quote(str(home))} TMPDIR={shlex.quote(str(tmp))} "
               f"INFERVIEW_TEST_TOKEN={token} {shlex.quote(str(inferview))}")
    monkeypatch.setenv("INFERVIEW_SSH_COMMAND", sshd.ssh_command)
    monkeypatch.delenv("INFERVIEW_REMOTE", raising=False)
    monkeypatch.delenv("INFERVIEW_REMOTE_COMMAND", raising=False)
    return Remote(sshd, command, home, tmp, token)

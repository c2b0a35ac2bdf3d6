"""A real, local Ray head for the tests (``ray start --head``, 2 CPUs, no dashboard, no usage
statistics), and the means to stop it for certain: every process whose command line names its
temporary folder, with all their descendants, is killed, and the test fails if one survives."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

WORKER_TITLE = b"ray::grade_submission"
"""What a Ray worker's command line reads while it grades."""


def ray_cli() -> Path:
    return Path(sys.executable).with_name("ray")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _procs() -> dict[int, tuple[int, str, bytes]]:
    """pid -> (parent pid, state, command line) of every process now."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        out[int(entry)] = (int(stat[1]), stat[0], cmd)
    return out


def cluster_pids(marker: str) -> set[int]:
    """Live processes whose command line holds ``marker``, and all their descendants."""
    procs = _procs()
    live = {pid for pid, (_, state, _) in procs.items() if state != "Z"}
    found = {pid for pid in live if marker.encode() in procs[pid][2]}
    grew = True
    while grew:
        more = {pid for pid in live if procs[pid][0] in found} - found
        grew = bool(more)
        found |= more
    return found


def grading_workers(marker: str) -> list[int]:
    """Ray workers of the cluster that are grading a submission now."""
    procs = _procs()
    return [pid for pid, (ppid, state, cmd) in procs.items()
            if state != "Z" and cmd.startswith(WORKER_TITLE) and ppid in procs
            and marker.encode() in procs[ppid][2]]


def stop(marker: str, timeout: float = 15.0) -> set[int]:
    """SIGKILL the cluster's processes until none is left; returns the survivors (none, normally)."""
    deadline = time.monotonic() + timeout
    me = os.getpid()
    while True:
        pids = cluster_pids(marker)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
        for pid, (ppid, _, _) in _procs().items():  # daemons this process adopted: reap them
            if ppid == me:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)
        left = cluster_pids(marker)
        if not left or time.monotonic() > deadline:
            return left


@contextlib.contextmanager
def local_head() -> Iterator[tuple[str, str]]:
    """A running head: yields (its address, the marker naming its processes)."""
    temp = tempfile.mkdtemp(prefix="ivray-")  # short: Ray's socket paths must fit in 107 bytes
    port = free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    try:
        proc = subprocess.run(
            [str(ray_cli()), "start", "--head", "--num-cpus", "2", "--num-gpus", "0",
             "--port", str(port), "--node-ip-address", "127.0.0.1", "--include-dashboard=false",
             "--disable-usage-stats", "--temp-dir", temp],
            env=env, capture_output=True, text=True, timeout=180, cwd=temp)
        if proc.returncode != 0:
            raise RuntimeError(f"ray start failed ({proc.returncode}): {proc.stderr[-2000:]}")
        yield f"127.0.0.1:{port}", temp
    finally:
        survivors = stop(temp)
        subprocess.run(["rm", "-rf", temp], check=False)
        assert not survivors, f"Ray processes survived the test: {sorted(survivors)}"

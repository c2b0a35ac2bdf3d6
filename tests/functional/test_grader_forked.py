"""Workers forked from the fork server (``graders/zygote.py``) are isolated exactly as spawned
ones: every hostile submission gets the verdict and message it gets from a spawned worker, no
process of a run survives it, and the fork server itself survives every one of them."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from inferview.graders.engine import grade
from inferview.graders.forkserver import ForkedProcess
from inferview.graders.pool import POOL

from tests.functional.test_grader_hostile import (
    CASES,
    DEMO,
    HOSTILE,
    SEED,
    _short_limit_demo,
    _sleepers,
)

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
KEY = (False, "cpu", 3072)


@pytest.fixture(scope="module")
def server():
    POOL.shutdown()
    fork, POOL.fork = POOL.fork, True
    try:
        POOL.server(KEY)
        deadline = time.monotonic() + 120
        while POOL.server(KEY) is None:
            assert time.monotonic() < deadline, "the fork server did not boot"
            time.sleep(0.2)
        yield POOL.server(KEY)
    finally:
        POOL.fork = fork
        POOL.shutdown()


def _forked_grade(name: str, server) -> tuple:
    seen: list[object] = []
    real_start = POOL.start

    def start(key):
        w = real_start(key)
        seen.append(w.proc)
        return w

    POOL.start = start  # type: ignore[method-assign]
    try:
        challenge = _short_limit_demo() if name in ("infinite_loop", "native_hang") else DEMO
        result = grade(challenge, HOSTILE / f"{name}.py", device="cpu", seed=SEED)
    finally:
        del POOL.start
    return result, seen


@pytest.mark.parametrize("name", sorted(CASES))
def test_forked_worker_gives_the_spawned_verdict(name: str, server) -> None:
    verdict, text, _ = CASES[name]
    result, seen = _forked_grade(name, server)
    messages = "\n".join(c.message for c in result.checks)
    assert seen and all(isinstance(p, ForkedProcess) for p in seen), seen
    assert result.verdict == verdict, f"{name}: {result.verdict}\n{messages}"
    if text:
        assert text in messages, messages
    # the server outlives whatever its child did, and nothing of the run is left
    assert server.alive and POOL.server(KEY) is server
    deadline = time.monotonic() + 5
    while _sleepers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sleepers() == []


def test_forked_worker_starts_clean(server) -> None:
    """A forked worker has its own folder and session, and not the fork server's socket."""
    from inferview.graders.process import WorkerProcess

    w = WorkerProcess(triton=False, device="cpu")
    try:
        w.start(server)
        assert isinstance(w.proc, ForkedProcess)
        info = w.wait_ready()
        assert info["pid"] == w.proc.pid != server.pid
        with open(f"/proc/{w.proc.pid}/stat") as f:
            stat = f.read().rsplit(")", 1)[1].split()
        assert int(stat[3]) == int(stat[2]) == w.proc.pid  # its own session and group
        assert os.readlink(f"/proc/{w.proc.pid}/cwd") == str(w.cwd)
        links = [os.readlink(f"/proc/{w.proc.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{w.proc.pid}/fd")]
        assert not [x for x in links if x.startswith("socket:")], links
        assert links.count(str(w.out_path)) == 1 and links.count(str(w.err_path)) == 1, links
    finally:
        w.close()
    assert w.proc.returncode is not None
    assert server.alive


def test_a_dead_fork_server_is_replaced_and_its_workers_still_end_cleanly() -> None:
    """Killing the server leaves its forked worker to this process (a subreaper): the worker's end
    is still seen, the next worker is spawned while a new server boots, and none is left over."""
    import signal

    from inferview.graders.forkserver import ForkServer
    from inferview.graders.process import WorkerProcess, base_env

    s = ForkServer(base_env(triton=False, device="cpu"))
    try:
        deadline = time.monotonic() + 120
        while not s.poll_ready():
            assert time.monotonic() < deadline
            time.sleep(0.1)
        w = WorkerProcess(triton=False, device="cpu")
        w.start(s)
        assert isinstance(w.proc, ForkedProcess)
        w.wait_ready()
        os.kill(s.pid, signal.SIGKILL)
        s.proc.wait(timeout=10)
        assert w.proc.poll() is None  # the worker lives on without its server
        w.close()
        assert w.proc.returncode == -signal.SIGKILL
        assert not os.path.exists(f"/proc/{w.proc.pid}/stat") or \
            open(f"/proc/{w.proc.pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
        w2 = WorkerProcess(triton=False, device="cpu")
        w2.start(s)  # a dead server: spawned instead
        try:
            assert not isinstance(w2.proc, ForkedProcess)
            assert w2.wait_ready()["pid"] == w2.proc.pid
        finally:
            w2.close()
    finally:
        s.close()


def test_a_patient_pool_never_boots_a_worker_beside_its_booting_server() -> None:
    """The app's service: warming boots the fork server only; a grade that comes first waits for
    it and gets a forked worker; the next is a fork at once."""
    from inferview.graders.pool import WorkerPool

    pool = WorkerPool(fork=True, patient=True)
    try:
        pool.warm(KEY)
        assert not pool.has_warm(KEY), "a spawned worker was started beside the booting server"
        first = pool.take(KEY)
        assert isinstance(first.proc, ForkedProcess)
        pool.warm(KEY)
        assert pool.has_warm(KEY)
        second = pool.take(KEY)
        assert isinstance(second.proc, ForkedProcess)
        for w in (first, second):
            w.close()
    finally:
        pool.shutdown()

"""Supervisor side of the fork server (``zygote.py``): CPU workers in milliseconds, not seconds.

A worker's start is dominated by importing torch (seconds of CPU on a laptop), and a test suite
that grades hundreds of solutions starts one per grading. A :class:`ForkServer` imports it once
and forks each worker from there; a :class:`ForkedProcess` stands in for the ``Popen`` of a
spawned worker (``pid``, ``poll``, ``wait``, ``kill``), its exit status reported by the server
that reaps it.
Everything else about a worker (its folder, environment, pipes, session, memory watch, kill and
sweep) is unchanged. Used for CPU workers only; any failure of the server falls back to a spawn.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from inferview.graders.sweep import OwnedDir, start_ticks

ZYGOTE_SCRIPT = Path(__file__).resolve().with_name("zygote.py")
FORK_TIMEOUT_S = 10.0


class ForkServerError(Exception):
    """The server could not fork a worker (the caller spawns one instead)."""


class ForkServer:
    """One server process for one worker environment (Triton or not; always CPU)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.folder = OwnedDir("inferview-zygote-")  # swept should we die
        self.tmp = self.folder.path
        self._lock = threading.Lock()
        self._status: dict[int, int] = {}
        self._children: set[int] = set()
        self._replies: list[dict[str, Any]] = []
        self._rid = 0
        self.closed = False
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        log = open(self.tmp / "server.log", "wb")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", str(ZYGOTE_SCRIPT), str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), cwd=self.tmp, env=env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=log, start_new_session=True, close_fds=True,
            )
        finally:
            log.close()
            theirs.close()
        self.folder.record_pid(self.proc.pid, start_ticks(self.proc.pid))
        self.ready = False
        self.unusable = False
        """It started with more than one thread, so it cannot fork safely: never used again."""

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return not self.closed and self.proc.poll() is None

    # -- messages -------------------------------------------------------------------------------
    def _take(self, timeout: float) -> bool:
        """Read the server's messages for up to ``timeout`` seconds; False once it has gone."""
        if self.closed:
            return False
        ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        if not ready:
            return True
        while True:
            try:
                msg = self.sock.recv(1 << 16, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return True
            except OSError:
                msg = b""
            if not msg:
                self._gone()
                return False
            body = json.loads(msg)
            if body.get("op") == "exit":
                self._status[int(body["pid"])] = int(body["status"])
            else:
                self._replies.append(body)

    def _gone(self) -> None:
        """The server died: its children are re-parented to this (subreaper) process."""
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.close()

    def _reply(self, want: set[str], rid: int | None, deadline: float) -> dict[str, Any]:
        while True:
            for i, body in enumerate(self._replies):
                if body.get("op") in want and body.get("rid") == rid:
                    return self._replies.pop(i)
            left = deadline - time.monotonic()
            if left <= 0:
                raise ForkServerError("the fork server did not answer in time")
            if not self._take(min(left, 0.5)):
                raise ForkServerError("the fork server ended")

    def poll_ready(self) -> bool:
        """Whether the server has finished its imports (never waits)."""
        if self.ready:
            return True
        if not self._lock.acquire(blocking=False):
            return False
        try:
            self._take(0.0)
            for i, body in enumerate(self._replies):
                if body.get("op") == "ready":
                    self._replies.pop(i)
                    self.ready = int(body.get("threads", 1)) == 1
                    self.unusable = not self.ready
                    return self.ready
            return False
        finally:
            self._lock.release()

    # -- forking --------------------------------------------------------------------------------
    def fork(self, fds: list[int], cwd: Path, env: dict[str, str]) -> ForkedProcess:
        """A new worker with ``fds`` (request pipe, reply pipe, stdout, stderr) in ``cwd``."""
        if not self.poll_ready():
            raise ForkServerError("the fork server is not ready")
        with self._lock:
            self._rid += 1
            rid = self._rid
            req = {"rid": rid, "cwd": str(cwd), "env": env,
                   "argv0": str(ZYGOTE_SCRIPT.with_name("worker.py"))}
            try:
                self.sock.sendmsg([json.dumps(req).encode()],
                                  [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
            except OSError as exc:
                self._gone()
                raise ForkServerError(f"the fork server is gone ({exc})") from None
            body = self._reply({"forked", "refused"}, rid, time.monotonic() + FORK_TIMEOUT_S)
            if body["op"] != "forked":
                raise ForkServerError(f"the fork server refused: {body.get('why')}")
            pid = int(body["pid"])
            self._children.add(pid)
            return ForkedProcess(self, pid)

    def status(self, pid: int, timeout: float = 0.0) -> int | None:
        """The exit status of ``pid`` if it has ended (waiting up to ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                if pid in self._status:
                    return self._status[pid]
                left = deadline - time.monotonic()
                if self.closed:
                    got = _orphan_status(pid, self._status)
                    if got is not None or left <= 0:
                        return got
                    time.sleep(min(left, 0.02))
                    continue
                self._take(min(max(left, 0.0), 0.2))
                if left <= 0:
                    if pid in self._status:
                        return self._status[pid]
                    return _orphan_status(pid, self._status) if self.closed else None

    def forget(self, pid: int) -> None:
        with self._lock:
            self._status.pop(pid, None)
            self._children.discard(pid)

    def close(self) -> None:
        """Stop the server (its idle socket read ends) and remove its folder."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5.0)
        with self._lock:
            self._gone()
        self.folder.remove()


def _orphan_status(pid: int, cache: dict[int, int]) -> int | None:
    """After the server died its child is ours (subreaper): reap it ourselves."""
    try:
        got, raw = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            cache[pid] = -signal.SIGKILL  # gone, and its status went with the server
            return cache[pid]
        return None  # alive and not (yet) re-parented to us
    if got == 0:
        return None
    cache[pid] = -os.WTERMSIG(raw) if os.WIFSIGNALED(raw) else os.WEXITSTATUS(raw)
    return cache[pid]


class ForkedProcess:
    """What ``subprocess.Popen`` offers the supervisor, for a worker forked by a server."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self.server = server
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.status(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self.server.status(self.pid, 3600.0 if timeout is None else timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, signal.SIGKILL)

    def release(self) -> None:
        """Drop the server's record of this worker once it has been reaped."""
        if self.returncode is not None:
            self.server.forget(self.pid)

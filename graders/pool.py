"""Warm workers: a worker started before it is needed, so a grade does not wait for torch.

A worker is keyed by what its start-up depends on: whether it loads Triton, the device, and the
memory limit. The pool keeps at most one warm worker (a warm worker holds a torch import's worth of
memory). With ``refill`` on, taking the warm worker starts the next one at once, so the next grade
of the same kind finds one ready: the grading service and the meta-test work that way.

With ``fork`` on, CPU workers are forked from a fork server per kind (``forkserver.py``), which
imports torch once instead of once per worker; until that server is ready (it boots in the
background, like a worker) workers are spawned as usual.
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any

from inferview.graders.forkserver import ForkServer
from inferview.graders.process import WorkerProcess, base_env, spare

Key = tuple[bool, str, int]
"""(loads Triton, device, memory limit in MB)."""


def key_for(spec: Any, backend: str) -> Key:
    """The pool key of a challenge spec graded on ``backend``."""
    return (bool(spec.requires_triton), backend, int(spec.memory_limit_mb))


def guess_backend(spec: Any, device: str) -> str:
    """The backend a grading will most likely use, without importing torch: ``cuda`` when asked
    for, or when the challenge may use it and an NVIDIA device node exists. Only a guess, to start
    the right worker early; the engine decides with torch."""
    if device in ("cpu", "cuda"):
        return device
    if spec.device == "cpu":
        return "cpu"
    return "cuda" if any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0")) else "cpu"


class WorkerPool:
    """At most one warm worker, handed out once."""

    def __init__(self, refill: bool = False, fork: bool = False) -> None:
        self.refill = refill
        """Start the next warm worker as soon as one is taken."""
        self.fork = fork
        """Fork CPU workers from a fork server once one is ready."""
        self._warm: dict[Key, WorkerProcess] = {}
        self._servers: dict[bool, ForkServer] = {}
        self._lock = threading.Lock()
        self._server_lock = threading.Lock()

    def server(self, key: Key) -> ForkServer | None:
        """The ready fork server for ``key``'s kind, starting one if there is none (then None)."""
        if not self.fork or key[1] != "cpu":
            return None
        with self._server_lock:
            s = self._servers.get(key[0])
            if s is not None and s.unusable:
                return None
            if s is not None and not s.alive:
                s.close()
                spare(s.pid, keep=False)
                s = None
            if s is None:
                s = self._servers[key[0]] = ForkServer(base_env(triton=key[0], device="cpu"))
                spare(s.pid)  # never swept as a stray of a worker that ends while it boots
                return None
        return s if s.poll_ready() else None

    def start(self, key: Key) -> WorkerProcess:
        """A new worker for ``key``, started (it boots in the background)."""
        w = WorkerProcess(triton=key[0], device=key[1], memory_limit_mb=key[2])
        w.start(self.server(key))
        return w

    def take(self, key: Key) -> WorkerProcess:
        """The warm worker for ``key`` if there is a live one, else a new one."""
        with self._lock:
            w = self._warm.pop(key, None)
        if w is not None and not w.alive:
            w.close()
            w = None
        if w is None:
            w = self.start(key)
        if self.refill:
            self.warm(key)
        return w

    def warm(self, key: Key) -> None:
        """Have a warm worker for ``key`` (replacing one of another key)."""
        with self._lock:
            old = self._warm.get(key)
            if old is not None and old.alive:
                return
            for k in list(self._warm):
                self._warm.pop(k).close()
            self._warm[key] = self.start(key)

    def has_warm(self, key: Key) -> bool:
        with self._lock:
            w = self._warm.get(key)
        return w is not None and w.alive

    def shutdown(self) -> None:
        """Stop every warm worker."""
        with self._lock:
            workers = list(self._warm.values())
            self._warm.clear()
        with self._server_lock:
            servers = list(self._servers.values())
            self._servers.clear()
        for w in workers:
            w.close()
        for s in servers:
            s.close()
            spare(s.pid, keep=False)


POOL = WorkerPool()
"""This process's pool."""
atexit.register(POOL.shutdown)

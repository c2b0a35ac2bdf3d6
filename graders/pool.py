"""Warm workers: a worker started before it is needed, so a grade does not wait for torch.

A worker is keyed by what its start-up depends on: whether it loads Triton, the device, and the
memory limit. The pool keeps at most one warm worker (a warm worker holds a torch import's worth of
memory). With ``refill`` on, taking the warm worker starts the next one at once, so the next grade
of the same kind finds one ready: the grading service and the meta-test work that way.

With ``fork`` on, CPU workers are forked from a fork server per kind (``forkserver.py``), which
imports torch once instead of once per worker; until that server is ready (it boots in the
background, like a worker) workers are spawned as usual. With ``patient`` on as well (the app's
grading service), a worker never boots beside a booting server: warming only boots the server, and
a grade that comes first waits for it (a second torch import on the same cores would only slow
both). Every later worker of that kind is a fork, ready in milliseconds.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
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

    def __init__(self, refill: bool = False, fork: bool = False, patient: bool = False) -> None:
        self.refill = refill
        """Start the next warm worker as soon as one is taken."""
        self.fork = fork
        """Fork CPU workers from a fork server once one is ready."""
        self.patient = patient
        """With ``fork``: wait for a booting server instead of spawning a worker beside it."""
        self._warm: dict[Key, WorkerProcess] = {}
        self._servers: dict[bool, ForkServer] = {}
        self._lock = threading.Lock()
        self._server_lock = threading.Lock()

    def server(self, key: Key, wait_s: float = 0.0) -> ForkServer | None:
        """The ready fork server for ``key``'s kind, starting one if there is none; None when
        it is not ready within ``wait_s`` seconds (or cannot be used)."""
        if not self.fork or key[1] != "cpu":
            return None
        deadline = time.monotonic() + wait_s
        while True:
            s = self._server_now(key)
            if s is not None or time.monotonic() >= deadline:
                return s
            with self._server_lock:
                booting = self._servers.get(key[0])
            if booting is None or booting.unusable or not booting.alive:
                return None
            time.sleep(0.02)

    def _server_now(self, key: Key) -> ForkServer | None:
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
        w.start(self.server(key, SERVER_BOOT_WAIT_S if self.patient else 0.0))
        return w

    def _booting(self, key: Key) -> bool:
        """Patient mode, and ``key``'s server is booting (now started if it was not)."""
        return self.patient and self.fork and key[1] == "cpu" and self.server(key) is None and (
            (s := self._servers.get(key[0])) is not None and s.alive and not s.unusable)

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
            if self._booting(key):
                return  # the server's boot is the warm-up; a grade that comes first waits for it
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


SERVER_BOOT_WAIT_S = 120.0
"""How long a patient pool waits for a booting fork server before it spawns instead."""

POOL = WorkerPool()
"""This process's pool."""
atexit.register(POOL.shutdown)

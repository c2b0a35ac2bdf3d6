"""A torch-free client for the grading service, for the TUI.

``GradingClient`` starts ``python -m inferview.graders.service`` on first use and talks JSON lines
to it. Importing this module imports neither torch nor the engine, so the UI stays fast.

Cancellation: ``cancel()`` (from any thread) kills the running grade's worker promptly; the
``grade()`` call that was waiting then raises :class:`GradingCancelled`.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["GradingCancelled", "GradingClient", "GradingServiceError", "GradingUsageError"]


class GradingCancelled(Exception):
    """The grade was cancelled with :meth:`GradingClient.cancel`."""


class GradingServiceError(RuntimeError):
    """The service failed (it died, or grading raised an internal error)."""


class GradingUsageError(ValueError):
    """Bad request: unknown challenge, missing file, no CUDA for ``device="cuda"``."""


class GradingClient:
    """Talks to one grading service process; one grade at a time."""

    def __init__(self, python: str | None = None, start_timeout_s: float = 120.0) -> None:
        self.python = python or sys.executable
        self.start_timeout_s = start_timeout_s
        self._proc: subprocess.Popen[str] | None = None
        self._events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._gone = threading.Event()
        """Set by the reader when the service's output ends (it died, or was closed)."""
        self._write_lock = threading.Lock()
        self._grade_lock = threading.Lock()
        self._next_id = 0
        self.last_streams: tuple[str, str] = ("", "")
        """What the graded solution printed: (stdout, stderr), each trimmed."""

    # -- process -------------------------------------------------------------------------------
    def _ensure(self) -> None:
        if self._proc is not None and self._proc.poll() is None and not self._gone.is_set():
            return
        self._discard()
        self._events = queue.Queue()
        self._gone = threading.Event()
        env = dict(os.environ)
        self._proc = subprocess.Popen(
            [self.python, "-m", "inferview.graders.service"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, bufsize=1, env=env, start_new_session=True,
        )
        threading.Thread(target=self._read, args=(self._proc, self._events, self._gone),
                         daemon=True).start()

    @staticmethod
    def _read(proc: subprocess.Popen[str], events: queue.Queue[dict[str, Any] | None],
              gone: threading.Event) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                events.put(json.loads(line))
            except json.JSONDecodeError:
                continue
        gone.set()  # its output closed: it is dying even if it cannot be reaped yet
        events.put(None)

    def _discard(self, proc: subprocess.Popen[str] | None = None) -> None:
        """Forget a service that has died (or is dying; ``proc``, by default the current one):
        reap it, so the next request starts a new one. Its workers are swept when the next
        service starts its first."""
        if proc is None or proc is self._proc:
            proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.close()

    @staticmethod
    def _death(proc: subprocess.Popen[str] | None) -> str:
        """Why the service's output ended, in words ("it was killed by SIGKILL while grading")."""
        rc = None
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                rc = proc.wait(timeout=2)
        if rc is not None and rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            return f"it was killed by {name} while grading"
        if rc is not None:
            return f"it exited with status {rc} while grading"
        return "it stopped answering while grading"

    def _send(self, req: dict[str, Any]) -> None:
        """Send one request, starting the service first when it is not running (once more when
        the one there turns out to have just died)."""
        for attempt in (1, 2):
            with self._write_lock:  # (one start, when the app's threads ask at once)
                self._ensure()
                assert self._proc is not None and self._proc.stdin is not None
                try:
                    self._proc.stdin.write(json.dumps(req) + "\n")
                    self._proc.stdin.flush()
                    return
                except (BrokenPipeError, OSError, ValueError) as exc:
                    if attempt == 2:
                        raise GradingServiceError(
                            f"the grading service is not running: {exc}") from None
            self._discard()

    # -- API -----------------------------------------------------------------------------------
    def prepare(self, challenge: str | Path, device: str = "auto") -> None:
        """Start the service (if needed) and warm a worker for the challenge in folder
        ``challenge``; returns at once."""
        self._send({"op": "prepare", "challenge": str(challenge), "device": device})

    def grade(self, challenge: str | Path, path: str | Path, device: str = "auto",
              seed: int | None = None,
              on_progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
        """Grade ``path`` against the challenge in folder ``challenge``; returns the schema-1
        result object (CHALLENGES.md).

        Raises :class:`GradingCancelled`, :class:`GradingUsageError` or
        :class:`GradingServiceError`.
        """
        with self._grade_lock:
            self._next_id += 1
            rid = self._next_id
            self._send({"op": "grade", "id": rid, "challenge": str(challenge), "path": str(path),
                        "device": device, "seed": seed})
            # this service's events: a restart by another thread meanwhile brings a new queue
            events, proc = self._events, self._proc
            while True:
                event = events.get()
                if event is None:
                    why = self._death(proc)
                    self._discard(proc)
                    raise GradingServiceError(why)
                kind = event.get("event")
                if kind == "ready" or event.get("id") not in (rid, None):
                    continue
                if kind == "progress" and on_progress is not None:
                    on_progress(int(event["done"]), int(event["total"]), str(event["check"]))
                elif kind == "result":
                    self.last_streams = (str(event.get("stdout", "")), str(event.get("stderr", "")))
                    return dict(event["result"])
                elif kind == "cancelled":
                    raise GradingCancelled("cancelled")
                elif kind == "error" and event.get("id") == rid:
                    if event.get("usage"):
                        raise GradingUsageError(str(event.get("message")))
                    raise GradingServiceError(str(event.get("message")))

    def cancel(self) -> None:
        """Stop the running grade (its ``grade()`` call raises :class:`GradingCancelled`)."""
        if self._proc is not None and self._proc.poll() is None:
            self._send({"op": "cancel"})

    def close(self) -> None:
        """Stop the service and its workers."""
        proc = self._proc
        self._proc = None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.write(json.dumps({"op": "close"}) + "\n")
                proc.stdin.flush()
                proc.stdin.close()
        except (BrokenPipeError, OSError, ValueError):
            pass
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    def __enter__(self) -> GradingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""The grading service: ``python -m inferview.graders.service``.

A long-lived process for the TUI (which must never import torch): it imports torch and the engine
once, keeps a worker pre-started for the challenge in view, and grades on request. Protocol:
JSON lines on stdin (requests) and stdout (events); see ``client.py`` for the client side.

Requests: ``{"op": "prepare", "challenge": FOLDER}``, ``{"op": "grade", "id": N, "challenge":
FOLDER, "path": FILE, "device": "auto", "seed": null}``, ``{"op": "cancel"}``, ``{"op": "close"}``
(a challenge is sent as its folder, loaded with the content loader's checks).
Events: ``{"event": "ready"}``, ``{"event": "progress", "id", "done", "total", "check"}``,
``{"event": "result", "id", "result": {schema-1 object}, "stdout": str, "stderr": str}``,
``{"event": "cancelled", "id"}``, ``{"event": "error", "id", "message", "usage": bool}``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any, TextIO


class Service:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.lock = threading.Lock()
        self.cancel = threading.Event()
        self.thread: threading.Thread | None = None
        self.busy = threading.Event()

    def emit(self, event: dict[str, Any]) -> None:
        with self.lock:
            self.out.write(json.dumps(event) + "\n")
            self.out.flush()

    def run_grade(self, req: dict[str, Any]) -> None:
        from inferview.graders import engine

        rid = req.get("id")
        try:
            challenge = engine.as_challenge(req["challenge"])
            result = engine.grade(
                challenge, req["path"], device=req.get("device") or "auto",
                seed=req.get("seed"),
                progress=lambda d, t, n: self.emit({"event": "progress", "id": rid, "done": d,
                                                    "total": t, "check": n}),
                cancel=self.cancel.is_set,
            )
        except engine.GradingUsageError as exc:
            self.busy.clear()
            self.emit({"event": "error", "id": rid, "message": str(exc), "usage": True})
            return
        except engine.WorkerKilled as exc:  # no verdict: say so, and have the next worker ready
            self.busy.clear()
            self.emit({"event": "error", "id": rid, "usage": False, "message": str(exc)})
            self._warm_next(challenge, req)
            return
        except Exception as exc:  # noqa: BLE001 - the client shows one line
            self.busy.clear()
            self.emit({"event": "error", "id": rid, "usage": False,
                       "message": f"{type(exc).__name__}: {exc}"})
            return
        self.busy.clear()
        if result.cancelled:
            self.emit({"event": "cancelled", "id": rid})
        else:
            self.emit({"event": "result", "id": rid, "result": result.to_json(),
                       "stdout": result.stdout[-65536:], "stderr": result.stderr[-65536:]})
        self._warm_next(challenge, req)

    @staticmethod
    def _warm_next(challenge: Any, req: dict[str, Any]) -> None:
        from inferview.graders import engine

        try:
            engine.prestart(challenge, req.get("device") or "auto")
        except Exception:  # noqa: BLE001 - warming up is best effort
            pass

    def prepare(self, req: dict[str, Any]) -> None:
        """Warm a worker for the challenge: first the worker (torch-free here, so its torch
        import starts at once), then the engine's own import of torch, side by side."""
        from pathlib import Path

        from inferview.graders.pool import POOL, guess_backend, key_for

        from inferview.content.loader import load_challenge_folder

        try:
            ch, errors = load_challenge_folder(Path(req["challenge"]))
            if ch is not None:
                POOL.warm(key_for(ch.spec, guess_backend(ch.spec, req.get("device") or "auto")))
            from inferview.graders import engine

            if ch is None:
                raise engine.GradingUsageError("; ".join(str(e) for e in errors))
            engine.prestart(ch, req.get("device") or "auto")  # the real backend, now torch is in
        except Exception as exc:  # noqa: BLE001
            self.emit({"event": "error", "id": None, "usage": True, "message": str(exc)})

    def serve(self, inp: TextIO) -> None:
        # ready at once: torch is imported on the first "prepare" (beside a worker's boot) or grade
        self.emit({"event": "ready", "pid": os.getpid()})
        for line in inp:
            line = line.strip()
            if not line:
                continue
            try:
                req = json.loads(line)
            except json.JSONDecodeError:
                self.emit({"event": "error", "id": None, "usage": True, "message": "bad request"})
                continue
            op = req.get("op")
            if op == "grade":
                if self.busy.is_set():
                    self.emit({"event": "error", "id": req.get("id"), "usage": True,
                               "message": "a grade is already running"})
                    continue
                self.cancel.clear()
                self.busy.set()
                self.thread = threading.Thread(target=self.run_grade, args=(req,), daemon=True)
                self.thread.start()
            elif op == "prepare":
                threading.Thread(target=self.prepare, args=(req,), daemon=True).start()
            elif op == "cancel":
                self.cancel.set()
            elif op == "close":
                break
        self.cancel.set()
        if self.thread is not None:
            self.thread.join(timeout=10)
        from inferview.graders.pool import POOL

        POOL.shutdown()


def main() -> None:
    from inferview.graders.pool import POOL

    # CPU workers are forked from a fork server that imports torch once, so the next ctrl+r after
    # a grade finds a worker at once; patient: no spawned worker boots beside the booting server
    POOL.fork = POOL.patient = True
    # stdout carries the protocol only: anything else printed goes to stderr
    proto = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1, encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    Service(proto).serve(sys.stdin)


if __name__ == "__main__":
    main()

"""A batch on this machine: a few supervisor processes, each grading one submission at a time.

Each *slot* is a process of its own (``concurrent.futures`` with the ``spawn`` start method, one
worker per executor) that runs :func:`~inferview.batch.task.grade_submission`, i.e. what
``inferview grade`` runs, one submission after another; the engine inside starts each solution's
isolated worker process as usual. Processes rather than threads because the engine's supervisor
runs Hypothesis and the challenge's checks, which are written for one grading per process.

How many slots: for a CPU challenge one per core, as many as memory allows (each grading holds a
supervisor and a worker, each with torch imported: the challenge's memory limit plus
:data:`SUPERVISOR_MB`), never more than there are submissions; for a CUDA challenge one per GPU,
pinned to it with ``CUDA_VISIBLE_DEVICES``, so two gradings never share a GPU or its timings.
A slot whose process dies (killed, out of memory) is restarted and the submission retried, up to
``retries`` times; then that submission is not graded, with the reason.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import re
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context

from inferview.batch.discover import Submission
from inferview.batch.table import BatchRow
from inferview.batch.task import ChallengeRef, grade_submission

SUPERVISOR_MB = 1024
"""What a grading's supervisor process holds besides its worker (torch, Hypothesis, checks)."""

DoneFn = Callable[[BatchRow], None]


@dataclass(frozen=True)
class Slot:
    """One supervisor process of the local pool."""

    label: str
    """``cpu`` or ``cuda:N``."""
    env: dict[str, str] = field(default_factory=dict)
    """Set in the process before anything imports torch (``CUDA_VISIBLE_DEVICES``)."""


def cuda_devices() -> list[str]:
    """The GPUs this process may use, found without torch: ``CUDA_VISIBLE_DEVICES`` when set, else
    the NVIDIA device nodes."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        out = []
        for item in visible.split(","):
            item = item.strip()
            if not item or item.startswith("-"):
                break  # CUDA stops at the first invalid entry
            out.append(item)
        return out
    try:
        nodes = os.listdir("/dev")
    except OSError:
        return []
    return sorted((n[len("nvidia"):] for n in nodes if re.fullmatch(r"nvidia\d+", n)), key=int)


def _available_mb() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def plan_slots(memory_limit_mb: int, backend: str, submissions: int,
               jobs: int | None = None) -> list[Slot]:
    """The pool for ``submissions`` gradings on ``backend`` (``jobs``: at most that many)."""
    if backend == "cuda":
        gpus = cuda_devices()
        slots = ([Slot(f"cuda:{g}", {"CUDA_VISIBLE_DEVICES": g}) for g in gpus]
                 or [Slot("cuda")])  # no device node seen: one slot, and the engine decides
    else:
        n = _cores()
        free = _available_mb()
        if free is not None:
            n = min(n, max(1, free // (int(memory_limit_mb) + SUPERVISOR_MB)))
        slots = [Slot("cpu")] * n
    limit = max(1, min(submissions, jobs if jobs else len(slots)))
    return slots[:limit]


def _start_slot(env: dict[str, str]) -> None:
    """In a slot's process, first: its environment; ctrl+c is the batch's to handle, and a
    SIGTERM from it ends the grading under way through the engine's own clean-up (its worker is
    killed), not by dying in the middle."""
    os.environ.update(env)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_on_term)


def _exit_on_term(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def run_local(challenge: ChallengeRef, submissions: list[Submission], slots: list[Slot], *,
              device: str = "auto", seed: int | None = None, fail_fast: bool = False,
              retries: int = 1, on_done: DoneFn | None = None) -> list[BatchRow]:
    """Grade every submission on ``slots``; a row per submission, in the order they finished.
    ``on_done`` is called from the slot's thread."""
    todo: queue.Queue[Submission] = queue.Queue()
    for sub in submissions:
        todo.put(sub)
    rows: list[BatchRow] = []
    lock = threading.Lock()
    stop = threading.Event()

    def finish(row: BatchRow) -> None:
        with lock:
            rows.append(row)
        if on_done is not None:
            on_done(row)

    def loop(slot: Slot) -> None:
        executor: ProcessPoolExecutor | None = None
        try:
            while not stop.is_set():
                try:
                    sub = todo.get_nowait()
                except queue.Empty:
                    return
                if sub.problem is not None:
                    finish(BatchRow.not_graded(sub, sub.problem))
                    continue
                attempts = 0
                row: BatchRow | None = None
                while row is None:
                    if executor is None:
                        executor = ProcessPoolExecutor(1, mp_context=get_context("spawn"),
                                                       initializer=_start_slot,
                                                       initargs=(slot.env,))
                    attempts += 1
                    try:
                        row = BatchRow.from_outcome(sub, executor.submit(
                            grade_submission, challenge, sub.filename, sub.source, device, seed,
                            fail_fast).result())
                    except BaseException as exc:
                        if stop.is_set():  # the batch was interrupted: no row, no message
                            return
                        if isinstance(exc, BrokenProcessPool):  # its process died: a new one
                            executor.shutdown(wait=False, cancel_futures=True)
                            executor = None
                            if attempts > retries:
                                row = BatchRow.not_graded(
                                    sub, f"its grading process died ({_tries(attempts)})")
                        else:  # anything else: said on its row, never a verdict
                            row = BatchRow.not_graded(sub, _describe(exc))
                finish(row)
        finally:
            if executor is not None:
                executor.shutdown(wait=True, cancel_futures=True)

    threads = [threading.Thread(target=loop, args=(s,), name=f"batch-{s.label}-{i}", daemon=True)
               for i, s in enumerate(slots)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.2)
    except BaseException:  # ctrl+c: stop every slot's process, then let it through
        stop.set()
        for child in multiprocessing.active_children():
            child.terminate()
        for t in threads:
            t.join(10.0)
        raise
    return rows


def _tries(n: int) -> str:
    return "1 attempt" if n == 1 else f"{n} attempts"


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


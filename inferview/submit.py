"""One way in for every submission: ``submit(challenge, file, backend) -> Outcome``.

``inferview grade``, ``inferview watch``, ``ctrl+r`` in the app and the mock interview's coding item
all call :func:`submit`. It grades through a :class:`Backend`, records the result in the progress
store against the content it graded, schedules the challenge's linked questions when the result
did not pass, and returns both. A backend is anything with a ``grade`` method of the
:class:`Backend` shape: the in-process engine (:class:`LocalBackend`, for the CLI and ``watch``),
the app's pre-started grading service (:class:`ServiceBackend`), or a remote one.

Torch-free: the engine is imported by :class:`LocalBackend` only when it grades.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from inferview.content.loader import LoadedChallenge
from inferview.grading import GradeResult, GradingUsageError

ProgressFn = Callable[[int, int, str], None]
"""``progress(done, total, check_name)``, called before each check."""


class Backend(Protocol):
    """Where a submission is graded."""

    name: str
    """For messages: ``local``, ``service``, ``ssh:HOST``..."""

    def grade(self, challenge: LoadedChallenge, file: Path, *, device: str = "auto",
              seed: int | None = None, progress: ProgressFn | None = None,
              cancel: Callable[[], bool] | None = None, fail_fast: bool = False) -> GradeResult:
        """Grade ``file`` (``fail_fast``: stop at the first failing check); raises ``GradingUsageError`` for bad input, ``GradingCancelled`` when
        cancelled, and ``GradingUnavailable`` when the backend itself failed."""
        ...


class GradingCancelled(Exception):
    """The grade was cancelled before it finished; nothing is recorded."""


class GradingUnavailable(RuntimeError):
    """The backend could not grade (the service died, a host is unreachable); nothing is
    recorded, and ``str()`` says why in one line."""


class LocalBackend:
    """The engine, in this process (the worker is still a separate, isolated process)."""

    name = "local"

    def grade(self, challenge: LoadedChallenge, file: Path, *, device: str = "auto",
              seed: int | None = None, progress: ProgressFn | None = None,
              cancel: Callable[[], bool] | None = None, fail_fast: bool = False) -> GradeResult:
        from inferview.graders.pool import POOL, guess_backend, key_for

        # start the worker first: its torch import then runs beside this process's own
        POOL.warm(key_for(challenge.spec, guess_backend(challenge.spec, device)))
        from inferview.graders import engine

        try:
            result = engine.grade(challenge, file, device=device, seed=seed, progress=progress,
                                  cancel=cancel, fail_fast=fail_fast)
        except engine.WorkerKilled as exc:  # killed from outside: no verdict for the solution
            raise GradingUnavailable(str(exc)) from None
        if result.cancelled:
            raise GradingCancelled("cancelled")
        return result


class ServiceBackend:
    """The app's grading service (``inferview.graders.client.GradingClient``), which keeps a
    worker warm so that ``ctrl+r`` does not wait for torch."""

    name = "service"

    def __init__(self, client: Any) -> None:
        self.client = client

    def grade(self, challenge: LoadedChallenge, file: Path, *, device: str = "auto",
              seed: int | None = None, progress: ProgressFn | None = None,
              cancel: Callable[[], bool] | None = None, fail_fast: bool = False) -> GradeResult:
        """(The app's service always runs every check: ``fail_fast`` is for headless runs.)"""
        from inferview.graders import client as gc

        try:
            data = self.client.grade(str(challenge.folder), file, device=device, seed=seed,
                                     on_progress=progress)
        except gc.GradingCancelled:
            raise GradingCancelled("cancelled") from None
        except gc.GradingUsageError as exc:
            raise GradingUsageError(str(exc)) from None
        except gc.GradingServiceError as exc:
            raise GradingUnavailable(f"the grading service failed: {exc}") from None
        stdout, stderr = getattr(self.client, "last_streams", ("", ""))
        return GradeResult.from_json(data, stdout=stdout, stderr=stderr)


@dataclass
class Outcome:
    """What a submission led to."""

    result: GradeResult
    source: str
    """The source that was graded (a result belongs to the content it graded)."""
    scheduled: list[str] = field(default_factory=list)
    """Linked questions put in the review queue because the result did not pass."""
    record_error: str | None = None
    """Why the result could not be saved (grading itself succeeded), or None."""

    @property
    def recorded(self) -> bool:
        return self.record_error is None


def read_source(file: Path) -> str:
    """The submission's text as graded (undecodable bytes replaced, for the record only)."""
    return file.read_text(encoding="utf-8", errors="replace")


def record(outcome: Outcome, challenge: LoadedChallenge, store: Any, library: Any,
           mock_id: int | None = None, now: datetime | None = None) -> None:
    """Save ``outcome``'s result and schedule the linked questions when it did not pass."""
    from inferview.progress import record_challenge_result

    outcome.scheduled = record_challenge_result(store, library, challenge.id,
                                                outcome.result.to_json(), outcome.source,
                                                mock_id=mock_id, now=now)


def submit(challenge: LoadedChallenge, file: Path, backend: Backend, *,
           store: Any = None, library: Any = None, device: str = "auto", seed: int | None = None,
           progress: ProgressFn | None = None, cancel: Callable[[], bool] | None = None,
           mock_id: int | None = None, now: datetime | None = None,
           open_store: Callable[[], Any] | None = None, fail_fast: bool = False) -> Outcome:
    """Grade ``file`` through ``backend``, record the result and schedule linked questions.

    ``store`` (or ``open_store()``, called after grading) is the progress store; without either,
    nothing is recorded. ``library`` gives the linked questions their topics (loaded when needed).
    Raises ``GradingUsageError``, ``GradingCancelled`` or ``GradingUnavailable``; a store that
    cannot be written is reported in ``Outcome.record_error``, never raised.
    """
    if not file.is_file():
        raise GradingUsageError(f"{'not a regular file' if file.exists() else 'no such file'}: {file}")
    source = read_source(file)
    result = backend.grade(challenge, file, device=device, seed=seed, progress=progress,
                           cancel=cancel, **({"fail_fast": True} if fail_fast else {}))
    outcome = Outcome(result, source)
    if store is None and open_store is None:
        outcome.record_error = "not recorded"
        return outcome
    opened = None
    try:
        if store is None:
            store = opened = open_store()
        if library is None and not result.passed and challenge.spec.questions:
            from inferview.content.loader import load_library

            library = load_library()
        record(outcome, challenge, store, library, mock_id=mock_id, now=now)
    except Exception as exc:  # noqa: BLE001 - grading succeeded: say why it was not saved
        outcome.record_error = f"{type(exc).__name__}: {exc}" if not str(exc) else str(exc)
    finally:
        if opened is not None:
            opened.close()
    return outcome

"""What the app needs from the headless engine, behind one injectable object.

The screens never open the store, load the library or start the grading service themselves; they
ask ``app.services``. Tests build the app with their own store path, a prepared library, a fake or
real grading client and a fixed clock (``create_app``), so every test runs isolated and
deterministic. Nothing here imports torch or textual.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


def utc_now() -> datetime:
    """The current time, timezone-aware UTC (the store keeps every timestamp in UTC)."""
    return datetime.now(timezone.utc)


@dataclass
class Services:
    """Lazily opened handles to the store, the content library and the grading client."""

    store_path: Path | None = None
    """Progress store file; ``None`` means the default one under the data folder."""
    library: Any = None
    """A loaded ``inferview.content.loader.Library``; ``None`` loads the built-in and user content."""
    grading_client: Any = None
    """An ``inferview.graders.client.GradingClient`` (or anything with its methods); ``None``
    starts the real one the first time a challenge is opened."""
    clock: Callable[[], datetime] = utc_now
    """Where "now" comes from (tests fix it)."""
    editor_command: str | None = None
    """Override of ``$VISUAL`` / ``$EDITOR`` for "open in editor"."""
    judge: Any = "settings"
    """The local-model judge for open answers: a ``JudgeConfig``, ``None`` for the rubric alone,
    or ``"settings"`` (the default) to read it from the environment and the data folder's
    ``config.toml``."""
    judge_problem: str = ""
    """Why a configured judge cannot be used (a broken settings file), for the user."""
    remote: Any = "settings"
    """Where challenges are graded: an ``inferview.remote.config.RemoteConfig`` (over SSH),
    ``None`` for the local grading service, or ``"settings"`` (the default) to read
    ``INFERVIEW_REMOTE`` from the environment and the data folder's ``config.toml``."""
    _backend: Any = field(default=None, init=False, repr=False)
    _store: Any = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _library_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def library_ready(self) -> bool:
        """The library is loaded (Home loads it in a worker so the first frame comes at once)."""
        return self.library is not None

    def get_library(self) -> Any:
        """The content library, loaded on first use (a second caller waits for the first)."""
        if self.library is None:
            with self._library_lock:
                if self.library is None:
                    from inferview.content.loader import load_library

                    self.library = load_library()
        return self.library

    def get_store(self) -> Any:
        """The progress store, opened on first use (thread-safe: graders reply from workers)."""
        with self._lock:
            if self._store is None:
                from inferview.store import Store

                self._store = Store.open(self.store_path)
            return self._store

    def adopt_store(self, store: Any) -> None:
        """Use an already opened store (``run_app`` opens it before the app starts, so a store
        that cannot be used is reported on the terminal, and a repair notice reaches Home)."""
        with self._lock:
            self._store = store

    def get_grader(self) -> Any:
        """The grading client, created on first use. Creating it starts nothing heavy."""
        with self._lock:
            if self.grading_client is None:
                from inferview.graders.client import GradingClient

                self.grading_client = GradingClient()
            return self.grading_client

    def get_backend(self) -> Any:
        """Where a submission is graded (an ``inferview.submit`` backend): ``SSHBackend`` when a
        remote is set, else the local grading service. A broken setting gives a backend whose
        every grading fails with its one line, so nothing is recorded."""
        from inferview.submit import ServiceBackend

        with self._lock:
            if self.remote == "settings":
                from inferview.grading import GradingUsageError
                from inferview.remote.config import resolve
                from inferview.settings import SettingsError

                try:
                    self.remote = resolve()
                except (SettingsError, GradingUsageError) as exc:
                    from inferview.remote.backend import Unusable

                    self._backend = Unusable(str(exc))
                    self.remote = None
            if self._backend is None and self.remote is not None:
                from inferview.remote.backend import SSHBackend

                self._backend = SSHBackend(self.remote)
        return self._backend if self._backend is not None else ServiceBackend(self.get_grader())

    def warm_grading(self, folder: Any) -> None:
        """Start the local grading service (if it is where grading happens) and warm a worker for
        the challenge in ``folder``, so that the first ``ctrl+r`` finds torch already imported
        there. Blocking: call it from a thread worker. Nothing to warm for a remote backend."""
        from inferview.submit import ServiceBackend

        if not isinstance(self.get_backend(), ServiceBackend):
            return
        prepare = getattr(self.get_grader(), "prepare", None)
        if prepare is not None:
            prepare(folder)

    def get_judge(self) -> Any:
        """The judge's config, or None; a broken settings file is reported in ``judge_problem``
        and grading falls back to the rubric."""
        if self.judge == "settings":
            from inferview.practice.judge import JudgeConfig
            from inferview.settings import SettingsError

            try:
                self.judge = JudgeConfig.from_settings()
            except SettingsError as exc:
                self.judge, self.judge_problem = None, str(exc)
        return self.judge

    def now(self) -> datetime:
        """The current time from the injected clock."""
        return self.clock()

    def close(self) -> None:
        """Close the grading service and the store (called when the app exits)."""
        client, self.grading_client = self.grading_client, None
        if client is not None and hasattr(client, "close"):
            try:
                client.close()
            except Exception:  # noqa: BLE001 - shutting down: nothing useful to report
                pass
        with self._lock:
            store, self._store = self._store, None
        if store is not None:
            store.close()

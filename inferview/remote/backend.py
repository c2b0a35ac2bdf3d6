"""``SSHBackend``: a :class:`~inferview.submit.Backend` that grades on another machine.

It runs the remote's own ``inferview grade --json --no-record --events ID -`` through ``ssh``,
sends the source on stdin and reads the schema-1 result back, with ``host`` and ``device`` added;
the caller records it here. The challenge travels by id: the remote's version is checked the first
time (``<command> --version``), and equal versions have equal challenges. Any failure (unreachable,
key refused, version mismatch, connection lost, no inferview there) raises ``GradingUnavailable``
with one line, so nothing is recorded. Cancelling stops ssh; the remote then stops its grading.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferview.content.loader import LoadedChallenge
from inferview.grading import GradeResult, GradingUsageError
from inferview.remote import ssh
from inferview.remote.config import DEFAULT_COMMAND, RemoteConfig
from inferview.remote.serve import STDIN, parse_event
from inferview.submit import GradingCancelled, GradingUnavailable, ProgressFn

POLL_S = 0.05
USAGE_ERROR = 2
"""``inferview grade``'s status for a usage error (an unknown challenge there, no CUDA there)."""


class SSHBackend:
    """Grades on ``host`` with the remote command ``command`` (its inferview)."""

    def __init__(self, host: str | RemoteConfig, command: str = DEFAULT_COMMAND, *,
                 ssh_command: tuple[str, ...] = ("ssh",)) -> None:
        self.config = host if isinstance(host, RemoteConfig) else RemoteConfig(
            host, command, tuple(ssh_command))
        self.name = f"ssh:{self.config.host}"
        self.version: str | None = None
        """The remote's inferview version once checked."""
        self._proc: subprocess.Popen[bytes] | None = None
        self._cancelled = threading.Event()

    @property
    def host(self) -> str:
        return self.config.host

    def check_version(self) -> str:
        """Check (once) that the remote runs this inferview version; ``GradingUnavailable`` if not."""
        if self.version is None:
            try:
                self.version = ssh.remote_version(self.config)
            except ssh.RemoteFailure as exc:
                raise GradingUnavailable(str(exc)) from None
        return self.version

    def cancel(self) -> None:
        """Stop the grading in progress (from another thread): ssh is ended at once."""
        self._cancelled.set()
        proc = self._proc
        if proc is not None:
            ssh.stop(proc)

    def remote_command(self, challenge_id: str, name: str, *, device: str, seed: int | None,
                       fail_fast: bool) -> str:
        """The command line the remote's shell runs (``--remote ''``: it grades there, whatever
        its own settings say)."""
        words = ["grade", "--json", "--no-record", "--events", "--remote", "", "--device", device,
                 "--stdin-name", name]
        if seed is not None:
            words += ["--seed", str(seed)]
        if fail_fast:
            words.append("--fail-fast")
        words += ["--", challenge_id, STDIN]
        return f"{self.config.command} {shlex.join(words)}"

    def grade(self, challenge: LoadedChallenge, file: Path, *, device: str = "auto",
              seed: int | None = None, progress: ProgressFn | None = None,
              cancel: Callable[[], bool] | None = None, fail_fast: bool = False) -> GradeResult:
        self._cancelled.clear()
        self.check_version()
        try:
            source = file.read_bytes()
        except OSError as exc:
            raise GradingUsageError(f"cannot read {file}: {exc.strerror or exc}") from None
        command = self.remote_command(challenge.id, file.name, device=device, seed=seed,
                                      fail_fast=fail_fast)
        try:
            proc = self._proc = ssh.spawn(self.config, command)
        except FileNotFoundError as exc:
            raise GradingUnavailable(str(exc)) from None
        try:
            return self._exchange(proc, source, progress, cancel)
        finally:
            self._proc = None
            ssh.stop(proc)

    def _exchange(self, proc: subprocess.Popen[bytes], source: bytes,
                  progress: ProgressFn | None, cancel: Callable[[], bool] | None) -> GradeResult:
        out: list[bytes] = []
        err_lines: list[str] = []
        events: dict[str, dict[str, Any]] = {}

        def send() -> None:
            assert proc.stdin is not None
            try:
                proc.stdin.write(source)
                proc.stdin.close()
            except (OSError, ValueError):
                pass  # the connection failed: ssh's status and stderr say how

        def read_out() -> None:
            assert proc.stdout is not None
            out.append(proc.stdout.read())

        def read_err() -> None:
            assert proc.stderr is not None
            for raw in proc.stderr:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                event = parse_event(line)
                if event is None:
                    err_lines.append(line)
                    continue
                events[event["event"]] = event
                if event["event"] == "progress" and progress is not None:
                    try:
                        progress(int(event["done"]), int(event["total"]), str(event["check"]))
                    except (KeyError, TypeError, ValueError):
                        pass

        threads = [threading.Thread(target=t, daemon=True, name=f"ssh {t.__name__}")
                   for t in (send, read_out, read_err)]
        for t in threads:
            t.start()
        while proc.poll() is None:
            if self._cancelled.is_set() or (cancel is not None and cancel()):
                ssh.stop(proc)
                raise GradingCancelled("cancelled")
            time.sleep(POLL_S)
        for t in threads:
            t.join(timeout=5)
        if self._cancelled.is_set():
            raise GradingCancelled("cancelled")
        return self._result(proc.returncode, b"".join(out), "\n".join(err_lines), events)

    def _result(self, rc: int, stdout: bytes, stderr: str,
                events: dict[str, dict[str, Any]]) -> GradeResult:
        if rc == USAGE_ERROR:
            raise GradingUsageError(f"on {self.host}: "
                                    + (ssh.last_line(stderr).removeprefix("inferview: ")
                                       or "usage error"))
        lines = stdout.decode("utf-8", "replace").strip().splitlines()
        data = None
        if rc in (0, 1) and lines:
            try:
                data = json.loads(lines[-1])
            except ValueError:
                data = None
        if not isinstance(data, dict):
            raise GradingUnavailable(ssh.explain(self.config, rc, stderr,
                                                 connected="progress" in events))
        output = events.get("output", {})
        try:
            result = GradeResult.from_json(data, stdout=str(output.get("stdout", "")),
                                           stderr=str(output.get("stderr", "")))
        except ValueError as exc:
            raise GradingUnavailable(f"{self.host} sent a result this inferview cannot read: "
                                     f"{exc}") from None
        result.host = self.host
        result.device = str(events.get("where", {}).get("device") or result.backend)
        return result


class Unusable:
    """A backend that cannot grade (a broken remote setting): every grading says why in one line,
    so nothing is recorded and nothing falls back to grading elsewhere unasked."""

    name = "unusable"

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def grade(self, challenge: LoadedChallenge, file: Path, **_options: Any) -> GradeResult:
        raise GradingUnavailable(self.reason)

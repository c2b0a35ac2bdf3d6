"""The remote side of remote grading, inside ``inferview grade``.

``inferview grade --json --no-record --events ID - --stdin-name NAME`` reads the source from stdin
into a private temporary folder (removed however the grading ends), writes the schema-1 result on
stdout and, on stderr, ``@inferview {json}`` event lines: ``progress`` before each check, then
``output`` (what the solution printed) and ``where`` (this machine's device). When whoever reads
its stdout goes away (the ssh connection died) or a hangup arrives, the grading is cancelled,
which stops its worker, so nothing is left running.
"""

from __future__ import annotations

import contextlib
import json
import select
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

EVENT_PREFIX = "@inferview "
STDIN = "-"
"""FILE meaning "read the source from stdin"."""


def event_line(kind: str, **data: Any) -> str:
    """One event as its stderr line (without the newline)."""
    return EVENT_PREFIX + json.dumps({"event": kind, **data}, ensure_ascii=True)


def parse_event(line: str) -> dict[str, Any] | None:
    """The event on ``line``, or None when it is not one."""
    if not line.startswith(EVENT_PREFIX):
        return None
    try:
        data = json.loads(line[len(EVENT_PREFIX):])
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("event"), str) else None


class Events:
    """Writes events on a stream; once the reader has gone, writing stops quietly."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self._lock = threading.Lock()

    def emit(self, kind: str, **data: Any) -> None:
        with self._lock, contextlib.suppress(OSError, ValueError):
            self.stream.write(event_line(kind, **data) + "\n")
            self.stream.flush()

    def progress(self, done: int, total: int, check: str) -> None:
        self.emit("progress", done=done, total=total, check=check)


def check_stdin_name(name: str) -> str:
    """``name`` when it is a plain file name (``ValueError`` with one line when not)."""
    if not name or name in (".", "..") or any(c in name for c in "/\\\0") or not name.isprintable():
        raise ValueError(f"--stdin-name must be a plain file name, not {name!r}")
    return name


@contextlib.contextmanager
def stdin_submission(name: str, stream: IO[bytes] | None = None) -> Iterator[Path]:
    """The source read from ``stream`` (stdin) as ``<private temporary folder>/name``; the folder
    is removed when the block ends, whichever way."""
    name = check_stdin_name(name)
    data = (stream if stream is not None else sys.stdin.buffer).read()
    with tempfile.TemporaryDirectory(prefix="inferview-stdin-") as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        yield path


def watch_caller(stream: IO[Any] | None = None) -> threading.Event:
    """An event that is set once the reader of ``stream`` (stdout) has gone, e.g. the ssh
    connection closed, or a hangup signal arrives. A terminal or a file never sets it."""
    gone = threading.Event()
    stream = stream if stream is not None else sys.stdout
    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        return gone
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGHUP, lambda *_: gone.set())

    def wait() -> None:
        poller = select.poll()
        poller.register(fd, 0)  # no events asked: only an error or a hang-up wakes it
        try:
            while not gone.is_set():
                for _fd, mask in poller.poll(1000):
                    if mask & (select.POLLERR | select.POLLHUP | select.POLLNVAL):
                        gone.set()
        except OSError:
            gone.set()

    threading.Thread(target=wait, name="inferview caller watch", daemon=True).start()
    return gone

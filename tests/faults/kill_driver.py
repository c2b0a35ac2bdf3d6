"""A program to kill -9: it saves progress in a loop through the app's own code paths.

    python kill_driver.py

It imports everything and loads the library once, then reads commands on stdin. ``go KIND N HOME``
forks a child that opens the store in data folder ``HOME`` (a real ``Store.open``: migrations,
``quick_check``, the daily backup) and saves one ``KIND`` of record after another, forever,
writing ``done KIND ID`` on stdout after each save has returned. The parent answers ``pid PID``
at once, so the test can SIGKILL the child at any moment, then ``exit PID STATUS`` once it is
reaped. Forking keeps an iteration to milliseconds; the child is an ordinary process, killed as
any would be.

Kinds: ``attempt`` (a practice answer graded and rated: ``PracticeSession.rate``), ``result`` (a
challenge result through ``submit.record``, a failed one scheduling the challenge's questions),
``mock`` (a mock interview answered and saved item by item, then finished), ``backup``
(``Store.backup`` to a named file, and the daily backup of ``Store.open``).
"""

from __future__ import annotations

import os
import sys
import tempfile
from datetime import date, datetime, timezone
from pathlib import Path

from inferview.tui.practice_session import PracticeSession

from inferview import paths
from inferview.content.loader import load_library
from inferview.grading import SCHEMA, GradeResult
from inferview.mock import store as mock_store
from inferview.practice.openq import RubricContext
from inferview.store import Store
from inferview.submit import Outcome, record

CHALLENGE = "kv-cache"
TOPIC = "kv-cache"
MOCK_MINUTES = 10
MOCK_SEED = 1
"""Every mock asks the same questions, whose rubrics the parent compiled once."""


QUIET = False


def say(line: str) -> None:
    """One line on stdout, in one write (atomic in a pipe), nothing buffered across a fork."""
    if not QUIET:
        os.write(1, (line + "\n").encode())


def canned_result(uid: int, passed: bool) -> GradeResult:
    """A grading result as the engine returns it (no grading needed)."""
    return GradeResult.from_json({
        "schema": SCHEMA, "challenge": CHALLENGE, "verdict": "passed" if passed else "failed",
        "backend": "cpu", "seed": uid, "duration_s": 1.5,
        "checks": [{"name": "matches the reference", "status": "passed" if passed else "failed",
                    "message": "" if passed else f"run {uid}: expected 3, got 4",
                    "counterexample": None if passed else "seq_len=1", "hint": None}],
    })


def answer_for(question) -> object:
    kind = question.kind
    if kind == "open":
        return "The KV cache stores keys and values of past tokens, so only the new token is computed."
    if kind == "choice":
        return [0]
    return "1"


def run_attempts(lib, store: Store, base: int, count: int = 10**9) -> None:
    session = None
    for n in range(count):
        uid = base + n
        if session is None or session.current() is None:
            session = PracticeSession(lib, store, TOPIC, now=lambda: datetime.now(timezone.utc))
            # every choice and numeric question of the topic, due or not (open answers grade in
            # a second or so each; the save is the same for every kind)
            session.queue = [q.id for q in lib.questions.values()
                             if q.topic == TOPIC and q.kind != "open"]
        item = session.current()
        feedback = session.grade(answer_for(item.question), duration_s=float(uid))
        session.rate(feedback, 1 + n % 4)
        say(f"done attempt {uid}")


def run_results(lib, store: Store, base: int, count: int = 10**9) -> None:
    challenge = lib.challenges[CHALLENGE]
    for n in range(count):
        uid = base + n
        outcome = Outcome(canned_result(uid, passed=n % 3 == 2), f"# run {uid}\n")
        record(outcome, challenge, store, lib)
        say(f"done result {uid}")


def run_mocks(lib, store: Store, base: int, count: int = 10**9) -> None:
    for n in range(count):
        mock_id, session = mock_store.start(store, lib, minutes=MOCK_MINUTES, seed=MOCK_SEED)
        while session.current is not None:
            if session.current.kind == "question":
                session.answer(text=f"answer {base + n}: the KV cache stores keys and values")
            else:
                session.skip()  # a coding item would need a grading
            mock_store.save(store, mock_id, session)
            say(f"done mock {mock_id}:{len(session.responses)}")
        mock_store.finish(store, lib, mock_id, session)
        say(f"done finished {mock_id}")


def run_backups(lib, store: Store, base: int, count: int = 10**9) -> None:
    path = paths.store_path()
    folder = paths.backups_dir()
    daily = folder / f"{path.stem}-{date.today().isoformat()}.sqlite3"
    for n in range(count):
        uid = base + n
        if n % 2:
            name = f"manual-{uid}.sqlite3"
            store.backup(folder / name)
            say(f"done backup {name}")
        else:
            store.close()
            daily.unlink(missing_ok=True)
            store = Store.open()  # the day's first start: it backs up
            say(f"done daily {daily.name}")


RUNS = {"attempt": run_attempts, "result": run_results, "mock": run_mocks, "backup": run_backups}


def main() -> int:
    lib = load_library()
    context = RubricContext.from_library(lib)
    RubricContext.from_library = classmethod(lambda cls, _lib: context)  # compiled rubrics kept
    with tempfile.TemporaryDirectory() as scratch, Store.open(Path(scratch) / "warm.sqlite3") as s:
        global QUIET
        QUIET = True
        for run in (run_attempts, run_results, run_mocks):  # grading's lazy loads, before forking
            run(lib, s, 0, count=2)
        QUIET = False
    say("ready")
    for line in sys.stdin:
        op, kind, n, home = line.split()
        assert op == "go" and kind in RUNS
        pid = os.fork()
        if pid == 0:
            os.environ["INFERVIEW_HOME"] = home
            code = 0
            try:
                RUNS[kind](lib, Store.open(), int(n) * 100_000)
            except BaseException as exc:  # noqa: BLE001 - the test sees it on stderr
                os.write(2, f"{kind} failed: {type(exc).__name__}: {exc}\n".encode())
                code = 1
            finally:
                os._exit(code)
        say(f"pid {pid}")
        _, status = os.waitpid(pid, 0)
        say(f"exit {pid} {status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

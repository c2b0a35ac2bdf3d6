"""kill -9 at any moment of a save: the store opens, passes ``quick_check``, holds every save that
was reported done, and no save is half there.

A driver (``kill_driver.py``) saves practice attempts, challenge results, mock interviews and
backups in a loop through the app's own functions; each child it forks is SIGKILLed after a
seeded random delay (0 to 300 ms, a third of them in the first 10 ms, while the store opens), then
the store is checked as the next start would find it. The real ``inferview stats`` is killed the
same way while it makes the day's backup.
"""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path

import pytest

from inferview.mock import store as mock_store
from inferview.store import Store

DRIVER = Path(__file__).with_name("kill_driver.py")
SEED = 20240
KILLS = {"attempt": 30, "result": 30, "mock": 25, "backup": 20}
CLI_KILLS = 10
LINKED = ("kv-500th-token", "kv-why-slow-without-cache", "kv-prefill-decode", "kv-decode-reads-cache")
"""The questions a failed kv-cache result schedules (its spec's ``questions``)."""

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


class Driver:
    """The driver process: ``run(kind, n, home, delay)`` forks one saving child and kills it."""

    def __init__(self, stderr: Path) -> None:
        self._err = open(stderr, "w")
        self.proc = subprocess.Popen([sys.executable, str(DRIVER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._err, text=True, bufsize=1)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        assert self._next(120) == "ready"

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put("")

    def _next(self, timeout: float = 30) -> str:
        line = self.lines.get(timeout=timeout)
        assert line, "the driver ended"
        return line

    def run(self, kind: str, n: int, home: Path, delay: float) -> tuple[list[str], int]:
        """The ids the child reported done before the kill, and its wait status."""
        self.proc.stdin.write(f"go {kind} {n} {home}\n")
        self.proc.stdin.flush()
        op, pid = self._next().split()
        assert op == "pid"
        time.sleep(delay)
        os.kill(int(pid), signal.SIGKILL)
        done = []
        while True:
            words = self._next().split()
            if words[0] == "exit":
                return done, int(words[2])
            assert words[0] == "done", words
            done.append(f"{words[1]} {words[2]}")

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
        self._err.close()


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    d = Driver(tmp_path_factory.mktemp("driver") / "stderr.txt")
    yield d
    d.close()


def _delay(rng: random.Random) -> float:
    return rng.uniform(0, 0.01) if rng.random() < 1 / 3 else rng.uniform(0, 0.3)


def kill_loop(driver: Driver, kind: str, home: Path, check, count: int) -> int:
    """``count`` children killed at random moments, ``check(done)`` after each; returns the saves
    reported done."""
    rng = random.Random(f"{SEED}-{kind}")
    done: list[str] = []
    for n in range(count):
        got, status = driver.run(kind, n + 1, home, _delay(rng))
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (
            f"the {kind} child ended by itself (status {status}): see {driver._err.name}")
        done += got
        check(done)
    return len(done)


def _ids(done: list[str], kind: str) -> list[str]:
    return [d.split()[1] for d in done if d.split()[0] == kind]


def test_kill9_while_saving_practice_attempts(driver, tmp_path, open_checked):
    home = tmp_path / "home"

    def check(done):
        with open_checked(home / "progress.sqlite3") as s:
            attempts = s.question_attempts()
            rated = {a["duration_s"] for a in attempts if a["rating"] is not None}
            assert {float(i) for i in _ids(done, "attempt")} <= rated
            cards = {c["question_id"]: c for c in s.cards()}
            for a in attempts:  # no attempt without its card's review (one transaction)
                assert a["question_id"] in cards, a
                assert cards[a["question_id"]]["updated_at"] >= a["created_at"], a

    assert kill_loop(driver, "attempt", home, check, KILLS["attempt"]) > KILLS["attempt"]


def test_kill9_while_saving_challenge_results(driver, tmp_path, open_checked):
    home = tmp_path / "home"

    def check(done):
        with open_checked(home / "progress.sqlite3") as s, s.transaction() as conn:
            sources = {r[0] for r in conn.execute("SELECT source FROM submissions")}
            assert {f"# run {i}\n" for i in _ids(done, "result")} <= sources
            bad = conn.execute(  # a whole result object, or no row
                "SELECT COUNT(*) FROM submissions WHERE NOT json_valid(result) OR"
                " json_extract(result, '$.verdict') IS NOT verdict OR"
                " json_array_length(result, '$.checks') < 1").fetchone()[0]
            assert bad == 0
            failed = conn.execute(
                "SELECT MAX(created_at) FROM submissions WHERE verdict = 'failed'").fetchone()[0]
            if failed:  # the newest failure scheduled every linked question with it
                suggested = {x["question_id"]: x["created_at"] for x in s.suggestions()}
                assert all(suggested.get(q, "") >= failed for q in LINKED), suggested

    assert kill_loop(driver, "result", home, check, KILLS["result"]) > KILLS["result"]


def test_kill9_while_saving_mock_interviews(driver, tmp_path, open_checked):
    home = tmp_path / "home"

    def check(done):
        with open_checked(home / "progress.sqlite3") as s:
            mocks = {m["id"]: m for m in s.list_mocks()}  # config and state parse
            for d in _ids(done, "mock"):
                mid, answered = (int(x) for x in d.split(":"))
                assert len(mocks[mid]["state"]["responses"]) >= answered
            for mid in _ids(done, "finished"):
                assert mocks[int(mid)]["status"] == "finished" and "report" in mocks[int(mid)]["state"]
            per_mock: dict[int, int] = {}
            for a in s.question_attempts():
                per_mock[a["mock_id"]] = per_mock.get(a["mock_id"], 0) + 1
            resumable = {m["id"] for m in mock_store.resumable(s)}
            for mid, m in mocks.items():  # reported with every answer recorded once, or none
                answered = sum(1 for r in m["state"]["responses"].values() if r.get("text"))
                reported = "report" in m["state"]
                assert per_mock.get(mid, 0) == (answered if reported else 0), (mid, per_mock)
                assert reported == (m["status"] == "finished" and mid not in resumable), mid

    assert kill_loop(driver, "mock", home, check, KILLS["mock"]) > KILLS["mock"]


def _fill(home: Path, rows: int = 2000) -> None:
    """A store of a few MiB, so that a backup takes long enough to be killed in the middle."""
    with Store.open(home / "progress.sqlite3") as s, s.transaction():
        for i in range(rows):
            s.record_submission("kv-cache", {"verdict": "failed", "checks": []}, f"# {i}\n" + "x" * 1000)


def _check_backups(home: Path, quick_check, named: list[str]) -> int:
    """Every backup file passes ``quick_check`` and the named ones exist; returns the ``.part``
    files a kill left (never a backup: the restore reads ``*.sqlite3`` only)."""
    folder = home / "backups"
    for name in named:
        assert (folder / name).is_file(), name
    for f in folder.glob("*.sqlite3"):
        assert quick_check(f) == "ok", f
    return len(list(folder.glob("*.part")))


def test_kill9_while_backing_up(driver, tmp_path, open_checked, quick_check_fn):
    home = tmp_path / "home"
    home.mkdir()
    _fill(home)
    parts_seen = 0

    def check(done):
        nonlocal parts_seen
        open_checked(home / "progress.sqlite3").close()
        parts_seen = max(parts_seen, _check_backups(home, quick_check_fn, _ids(done, "backup")))

    assert kill_loop(driver, "backup", home, check, KILLS["backup"]) > 0
    # the next start cleans what killed backups left, and a damaged store is restored from a
    # whole backup, never from a .part
    Store.open(home / "progress.sqlite3").close()
    assert not list((home / "backups").glob("*.part*"))
    (home / "progress.sqlite3").write_bytes(b"not a database" * 100)
    with Store.open(home / "progress.sqlite3") as s:
        assert s.notice and "restored from the backup progress-" in s.notice
        assert len(s.submissions()) >= 2000
    print(f"backup kills: {KILLS['backup']}, most .part files left at once: {parts_seen}")


def test_kill9_of_the_real_cli_during_its_first_start_of_the_day(tmp_path, open_checked,
                                                                 quick_check_fn):
    home = tmp_path / "home"
    home.mkdir()
    _fill(home)
    daily = home / "backups" / f"progress-{date.today().isoformat()}.sqlite3"
    rng = random.Random(f"{SEED}-cli")
    env = {**os.environ, "INFERVIEW_HOME": str(home)}
    outcomes = {"finished": 0, "killed": 0}
    command = [sys.executable, "-c", "from inferview.cli import main; main()", "stats", "--json"]
    # how long a whole run takes on this machine now: the kills land within it, wherever the
    # store is opened and backed up (a loaded or a quiet machine alike)
    daily.unlink(missing_ok=True)
    t0 = time.monotonic()
    subprocess.run(command, env=env, capture_output=True, check=True, timeout=60)
    whole = time.monotonic() - t0
    for _ in range(CLI_KILLS):
        daily.unlink(missing_ok=True)
        proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.3, 0.95) * whole)
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=30)
        outcomes["killed" if proc.returncode == -signal.SIGKILL else "finished"] += 1
        if proc.returncode == 0:
            assert json.loads(out)
        open_checked(home / "progress.sqlite3").close()
        _check_backups(home, quick_check_fn, [daily.name] if proc.returncode == 0 else [])
    assert outcomes["killed"] >= CLI_KILLS // 2, outcomes

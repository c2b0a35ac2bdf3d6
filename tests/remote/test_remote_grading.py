"""Grading over SSH against a real sshd on loopback: the verdict is the remote's own grading's,
the result is recorded here with the host and device, and a connection that dies during grading
records nothing and leaves nothing running and no temporary file on the remote (cancelling is
tested through the app, in ``test_remote_app``)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from inferview.tests.remote.conftest import Remote

from inferview.cli import main as cli_main
from inferview.content.loader import find_challenge
from inferview.remote.backend import SSHBackend
from inferview.remote.config import resolve
from inferview.store import Store
from inferview.submit import GradingUnavailable, LocalBackend, submit

SIZE = find_challenge("kv-cache-size")
RIGHT = SIZE.folder / "solutions" / "correct" / "closed_form_search.py"
WRONG = SIZE.folder / "solutions" / "wrong" / "forgets_k_and_v.py"
SLOW = ("\nimport time as _time\n_fast = kv_cache_bytes\n\n\n"
        "def kv_cache_bytes(*args, **kwargs):\n    _time.sleep(120)\n    return _fast(*args, **kwargs)\n")


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``inferview ARGS`` in this process: exit status, stdout, stderr."""
    try:
        cli_main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def backend(remote: Remote) -> SSHBackend:
    config = resolve("remote", remote.command)
    assert config is not None
    return SSHBackend(config)


def test_a_correct_solution_passes_there_and_is_recorded_here(remote: Remote, capsys) -> None:
    # the remote grades itself whatever its own settings say (no hop to yet another host)
    (remote.home / "config.toml").write_text('INFERVIEW_REMOTE = "closed"\n')
    code, out, err = run_cli(capsys, "grade", "kv-cache-size", str(RIGHT), "--json", "--seed", "3",
                             "--remote", "remote", "--remote-command", remote.command)
    assert code == 0, err
    data = json.loads(out)
    assert data["verdict"] == "passed" and data["seed"] == 3
    assert data["host"] == "remote" and data["device"] == "cpu"
    with Store.open() as store:
        saved = store.submissions("kv-cache-size")
    assert len(saved) == 1 and saved[0]["result"] == data and saved[0]["source"] == RIGHT.read_text()
    assert not any(remote.home.glob("progress*")), "the remote must record nothing"
    assert remote.wait_clean() == ([], [])


def test_a_wrong_solution_fails_there_as_it_does_here(remote: Remote, tmp_path: Path) -> None:
    chatty = tmp_path / "chatty.py"
    chatty.write_text(WRONG.read_text() + "\nprint('hello from the remote')\n")
    seen: list[tuple[int, int, str]] = []
    there = backend(remote).grade(SIZE, chatty, seed=1, progress=lambda *a: seen.append(a))
    here = LocalBackend().grade(SIZE, chatty, seed=1)
    assert there.verdict == here.verdict == "failed"
    assert [(c.name, c.status, c.counterexample) for c in there.checks] == \
        [(c.name, c.status, c.counterexample) for c in here.checks]
    assert "hello from the remote" in there.stdout
    assert there.host == "remote" and there.device == "cpu" and here.host is None
    assert seen[0][0] == 0 and seen[-1][0] == seen[-1][1] == len(here.checks)


def _slow(tmp_path: Path) -> Path:
    path = tmp_path / "slow.py"
    path.write_text(RIGHT.read_text() + SLOW)
    return path


def _when_grading(remote: Remote, started: threading.Event, act) -> threading.Thread:
    """Run ``act()`` once the remote is running the slow solution's first check."""

    def wait_then_act() -> None:
        if started.wait(60):
            time.sleep(1.0)
            act()

    thread = threading.Thread(target=wait_then_act, daemon=True)
    thread.start()
    return thread


def test_a_connection_killed_during_grading_records_nothing_and_leaves_nothing(
        remote: Remote, tmp_path: Path) -> None:
    started = threading.Event()

    def kill_the_connection() -> None:
        for pid in remote.server.sessions():
            os.kill(pid, signal.SIGKILL)

    thread = _when_grading(remote, started, kill_the_connection)
    with Store.open() as store:
        t0 = time.monotonic()
        with pytest.raises(GradingUnavailable) as exc:
            submit(SIZE, _slow(tmp_path), backend(remote), store=store,
                   progress=lambda *_: started.set())
        assert time.monotonic() - t0 < 60, "the loss was noticed at once, not at the timeout"
        assert store.submissions("kv-cache-size") == []
    thread.join(5)
    message = str(exc.value)
    assert message.startswith("connection to remote lost") and "\n" not in message, message
    assert remote.wait_clean() == ([], []), "the remote left processes or files behind"

"""``inferview watch --remote``: every save is graded on the remote, recorded here with its host,
and Ctrl+C stops watching cleanly, leaving nothing on the remote."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from inferview.tests.remote.conftest import Remote

from inferview.content.loader import find_challenge
from inferview.store import Store

SIZE = find_challenge("kv-cache-size")
RIGHT = SIZE.folder / "solutions" / "correct" / "closed_form_search.py"
WRONG = SIZE.folder / "solutions" / "wrong" / "forgets_k_and_v.py"


def test_watch_grades_each_save_on_the_remote(remote: Remote, tmp_path: Path) -> None:
    sol = tmp_path / "solution.py"
    sol.write_text(WRONG.read_text())
    log = tmp_path / "watch.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "inferview", "watch", "kv-cache-size", str(sol), "--seed", "2",
             "--debounce-ms", "50", "--remote", "remote", "--remote-command", remote.command],
            stdout=out, stderr=subprocess.STDOUT, text=True, env=dict(os.environ))

    def wait_for(text: str, count: int = 1) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and log.read_text().count(text) < count:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.2)
        assert log.read_text().count(text) >= count, log.read_text()

    try:
        wait_for("FAILED")
        wait_for("watching")
        sol.write_text(RIGHT.read_text())
        wait_for("PASSED")
        wait_for("watching", 2)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    seen = log.read_text()
    assert "grading" in seen and "on remote" in seen and "Traceback" not in seen, seen
    assert "stopped watching" in seen
    with Store.open() as store:
        saved = store.submissions("kv-cache-size")
    assert sorted(s["result"]["verdict"] for s in saved) == ["failed", "passed"]
    assert all(s["result"]["host"] == "remote" for s in saved)
    assert remote.wait_clean() == ([], [])

"""What a killed grading leaves behind (its folder, a worker busy in a slow solution) is swept at
the next start, and a folder whose owner lives is never touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from inferview.graders.sweep import OWNER_FILE, PIDS_FILE, UNOWNED_GRACE_S, start_ticks, sweep_stale

from inferview.paths import builtin_challenges_dir

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux's /proc")

SLOW = "import time\n\nwhile True:  # a solution that never finishes importing\n    time.sleep(0.05)\n"
CLI = [sys.executable, "-c", "from inferview.cli import main; main()"]


def _running(pid: int) -> bool:
    """Alive and not a zombie (reaped here when it is ours)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    if state == b"Z":
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return False
    return True


def _wait(pred, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _worker_folders(tmp: Path) -> list[Path]:
    return sorted(tmp.glob("inferview-grade-*"))


def test_a_killed_grade_leaves_a_running_worker_that_the_next_grade_sweeps(private_tmp, tmp_path):
    slow = tmp_path / "slow.py"
    slow.write_text(SLOW)
    first = subprocess.Popen([*CLI, "grade", "kv-cache-size", str(slow), "--no-record"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        pids_file = _wait(lambda: next((f / PIDS_FILE for f in _worker_folders(private_tmp)
                                        if (f / PIDS_FILE).exists()), None), 60, "the worker")
        folder = pids_file.parent
        worker = int(pids_file.read_text().split()[0])
        time.sleep(0.5)  # the worker is importing torch, or already stuck in the solution
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        time.sleep(2.5)  # had the worker noticed its supervisor's death, it would be gone by now
        survived = _running(worker)
        assert folder.exists()
        good = builtin_challenges_dir() / "kv-cache-size" / "solutions" / "correct" / "closed_form_search.py"
        second = subprocess.run([*CLI, "grade", "kv-cache-size", str(good), "--no-record"],
                                capture_output=True, text=True, timeout=120)
        assert second.returncode == 0, second.stderr
        assert not folder.exists(), "the dead grade's folder was not swept"
        assert not _running(worker), "the dead grade's worker is still running"
        assert _worker_folders(private_tmp) == []  # and the second grade removed its own
        print(f"the worker outlived its killed supervisor: {survived}")
    finally:
        first.kill()
        first.wait()


def _owner(tmp: Path, *, die: bool) -> tuple[subprocess.Popen, Path, int]:
    """A process that makes a grading folder (and a child recorded in it), then sleeps."""
    code = ("import subprocess, sys, time\n"
            "from inferview.graders.sweep import OwnedDir, start_ticks\n"
            "d = OwnedDir('inferview-grade-', token='t' + str(id(object())))\n"
            "child = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
            "d.record_pid(child.pid, start_ticks(child.pid))\n"
            "print(d.path, child.pid, flush=True)\n"
            "time.sleep(300)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp)})
    path, child = proc.stdout.readline().split()
    if die:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    return proc, Path(path), int(child)


def test_the_sweep_never_touches_a_live_owner_and_never_a_reused_pid(private_tmp):
    live, live_dir, live_child = _owner(private_tmp, die=False)
    dead, dead_dir, dead_child = _owner(private_tmp, die=True)
    decoy = subprocess.Popen(["sleep", "300"])  # its pid recorded with another start time
    legacy = private_tmp / "inferview-grade-legacy"  # an older inferview's, long dead
    being_made = private_tmp / "inferview-grade-justnow"  # made this instant, lock not yet taken
    try:
        (dead_dir / PIDS_FILE).open("a").write(f"{decoy.pid} {start_ticks(decoy.pid) + 1}\n")
        legacy.mkdir()
        os.utime(legacy, (time.time() - 2 * UNOWNED_GRACE_S,) * 2)
        being_made.mkdir()
        (being_made / OWNER_FILE).touch()
        report = sweep_stale(private_tmp)
        assert sorted(report.folders) == sorted([dead_dir, legacy])
        assert report.killed == [dead_child]
        assert not dead_dir.exists() and not legacy.exists()
        assert _wait(lambda: not _running(dead_child), 5, "the dead owner's child to die") is True
        assert live_dir.exists() and _running(live_child) and being_made.exists()
        assert _running(decoy.pid), "a pid recorded with another start time was killed"
        assert sweep_stale(private_tmp).folders == []  # the live owner's, every time
    finally:
        for p in (live, dead, decoy):
            p.kill()
            p.wait()
        for pid in (live_child, dead_child):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

"""A full disk: a save fails with one clear line, nothing saved before is lost or damaged, and the
daily backup never deletes the last good backup to make room.

The disk is a 2 MiB tmpfs mounted for the test, or (where mounting is not allowed) a per-process
file-size limit; each test prints which mode ran.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from inferview.store import BACKUPS_KEPT, Store

SAVE = textwrap.dedent("""
    import sys
    from inferview.content.loader import find_challenge
    from inferview.progress import record_challenge_result
    from inferview.store import Store, StoreError

    try:
        with Store.open() as store:
            store.record_question_attempt("kv-why", "kv-cache", "open", "small", {}, True)
            record_challenge_result(store, None, "kv-cache", {"verdict": "failed", "checks": []},
                                    "x" * (3 << 20))  # more than the disk holds
    except StoreError as exc:
        sys.exit(f"inferview: {exc}")
""")


def _seed(home: Path, n: int = 20) -> None:
    with Store.open(home / "progress.sqlite3") as s, s.transaction():  # (a small write-ahead log)
        for i in range(n):
            s.record_question_attempt(f"q{i}", "kv-cache", "open", "an answer " * 50, {"score": 1}, True)
        s.record_submission("kv-cache", {"verdict": "passed", "checks": []}, "src")


def _run(script: str, home: Path, disk, limit: int) -> subprocess.CompletedProcess:
    env = {"INFERVIEW_HOME": str(home), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          timeout=60, preexec_fn=disk.preexec(limit))


def test_a_save_on_a_full_disk_fails_in_one_line_and_loses_nothing(small_disk, open_checked):
    home = small_disk.path / "home"
    home.mkdir()
    _seed(home)
    small_disk.fill()
    got = _run(SAVE, home, small_disk, (home / "progress.sqlite3").stat().st_size)
    print(f"full disk mode: {small_disk.mode}")
    lines = got.stderr.strip().splitlines()
    assert got.returncode == 1 and len(lines) == 1, got.stderr
    # (a full tmpfs fails already at the open, which needs room for the write-ahead log)
    assert "Traceback" not in got.stderr and "disk" in lines[0] and "full" in lines[0], lines[0]
    small_disk.free()
    with open_checked(home / "progress.sqlite3") as s:
        # the earlier data, and nothing of the failed save (under a file-size limit the small
        # attempt before it may still fit)
        assert len(s.question_attempts()) in ((20,) if small_disk.mode == "tmpfs" else (20, 21))
        assert [r["source"] for r in s.submissions()] == ["src"]


def test_a_daily_backup_on_a_full_disk_keeps_every_good_backup(small_disk, quick_check_fn):
    home = small_disk.path / "home"
    home.mkdir()
    _seed(home, 150)  # a store of ~100 KiB
    folder = home / "backups"
    for old in folder.glob("*.sqlite3"):
        old.unlink()  # today's: the next open must try to make it again
    olds = [folder / f"progress-2026-01-0{i}.sqlite3" for i in range(1, BACKUPS_KEPT + 1)]
    for old in olds:
        shutil.copyfile(home / "progress.sqlite3", old)
    small_disk.fill(leave=48 << 10)  # room to open the store, not to back it up
    script = "from inferview.store import Store\nStore.open().close()\nprint('opened')\n"
    got = _run(script, home, small_disk, (home / "progress.sqlite3").stat().st_size // 2)
    print(f"full disk mode: {small_disk.mode}")
    assert got.returncode == 0 and got.stdout.strip() == "opened", got.stderr  # practice goes on
    assert sorted(folder.iterdir()) == olds  # no new backup, no .part, no good one removed
    small_disk.free()
    assert all(quick_check_fn(old) == "ok" for old in olds)

"""The progress store must never lose progress: corruption, concurrency, versions, backups."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
from datetime import datetime, timedelta, timezone

import pytest

from inferview.store import SCHEMA_VERSION, Store, StoreError


def test_fresh_store_records_and_reads_back(tmp_path):
    with Store.open(tmp_path / "p.sqlite3") as s:
        a = s.record_question_attempt("kv-why", "kv-cache", "open", "because", {"score": 1.0}, True, 3, 12.5)
        s.record_submission("kv-cache", {"verdict": "failed", "backend": "cpu", "seed": 1, "duration_s": 2.0}, "src")
        s.record_submission("kv-cache", {"verdict": "passed", "backend": "cpu", "seed": 2, "duration_s": 1.5}, "src2")
        s.set_attempt_rating(a, 4)
        attempts = s.question_attempts()
        assert attempts[0]["rating"] == 4 and attempts[0]["result"] == {"score": 1.0}
        status = s.challenge_status()["kv-cache"]
        assert status == {"status": "passed", "best_duration_s": 1.5, "backend": "cpu", "attempts": 2,
                          "last_at": status["last_at"]}
        assert s.submissions("kv-cache")[0]["source"] == "src2"
        assert s.summary()["topics"]["kv-cache"]["accuracy"] == 1.0
        assert s.streak() == 1


def test_cards_and_due_queue(tmp_path):
    now = datetime.now(timezone.utc)
    with Store.open(tmp_path / "p.sqlite3") as s:
        s.put_card("a", "kv-cache", "{}", now - timedelta(hours=2))
        s.put_card("b", "moe", "{}", now - timedelta(hours=1))
        s.put_card("c", "moe", "{}", now + timedelta(days=1))
        assert s.due_question_ids(now) == ["a", "b"]
        assert s.due_question_ids(now, topic="moe") == ["b"]
        s.put_card("a", "kv-cache", '{"x": 1}', now + timedelta(days=3))
        assert s.get_card("a") == '{"x": 1}'
        assert s.due_question_ids(now) == ["b"]


def test_mock_sessions_round_trip(tmp_path):
    with Store.open(tmp_path / "p.sqlite3") as s:
        mid = s.create_mock({"minutes": 30})
        s.update_mock(mid, {"item": 3, "report": {"score": 0.5}}, "paused")
        m = s.get_mock(mid)
        assert m["status"] == "paused" and m["state"]["item"] == 3 and m["config"] == {"minutes": 30}
        assert s.summary()["mock_sessions"][0]["score"] == 0.5
        assert s.get_mock(mid + 1) is None


def test_corrupt_store_is_moved_aside_and_a_fresh_one_made(tmp_path):
    path = tmp_path / "p.sqlite3"
    with Store.open(path) as s:
        s.record_question_attempt("q", "kv-cache", "open", "a", {}, True)
    # Overwrite the middle of the file: the header stays valid, the pages do not.
    data = bytearray(path.read_bytes())
    data[100:] = b"\xde\xad\xbe\xef" * ((len(data) - 100) // 4 + 1)
    path.write_bytes(bytes(data[: max(len(data), 8192)]))
    with Store.open(path) as s:
        assert s.notice and "kept as" in s.notice
        assert s.question_attempts() == []
        s.record_question_attempt("q", "kv-cache", "open", "a", {}, True)
    kept = list(tmp_path.glob("p.sqlite3.corrupt-*"))
    assert kept and kept[0].stat().st_size > 0


def test_garbage_file_is_kept_and_replaced(tmp_path):
    path = tmp_path / "p.sqlite3"
    path.write_bytes(b"not a database" * 100)
    with Store.open(path) as s:
        assert "could not be read" in s.notice
    assert list(tmp_path.glob("p.sqlite3.corrupt-*"))[0].read_bytes().startswith(b"not a database")


def test_store_from_a_newer_version_is_refused_untouched(tmp_path):
    path = tmp_path / "p.sqlite3"
    Store.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="newer inferview"):
        Store.open(path, backup=False)
    assert path.read_bytes() == before


def test_backups_are_made_and_readable(tmp_path):
    path = tmp_path / "p.sqlite3"
    with Store.open(path) as s:
        s.record_question_attempt("q", "kv-cache", "open", "a", {}, True)
        target = s.backup(tmp_path / "b" / "copy.sqlite3")
    with Store.open(target, backup=False) as b:
        assert len(b.question_attempts()) == 1
    assert list((tmp_path / "backups").glob("p-*.sqlite3"))


def _writer(path: str, tag: str, n: int) -> None:
    with Store.open(path, backup=False) as s:
        for i in range(n):
            s.record_question_attempt(f"{tag}-{i}", "kv-cache", "open", "x", {"i": i}, True)
            s.record_submission(tag, {"verdict": "passed", "duration_s": 1.0}, "src")


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "p.sqlite3")
    Store.open(path).close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, tag, 60)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with Store.open(path, backup=False) as s:
        assert len(s.question_attempts()) == 120
        assert s.challenge_status()["a"]["attempts"] == 60


def test_default_location_follows_inferview_home(inferview_home):
    with Store.open() as s:
        assert s.path.parent == inferview_home


def _hold_exclusive(path):
    """Another connection holding the store locked, as another process would."""
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("PRAGMA journal_mode = DELETE")  # a rollback journal blocks readers too
    raw.execute("BEGIN EXCLUSIVE")
    return raw


def test_a_locked_store_is_a_clear_error_never_moved_aside(tmp_path, monkeypatch):
    import inferview.store as store_mod

    monkeypatch.setattr(store_mod, "BUSY_TIMEOUT_MS", 200)
    path = tmp_path / "p.sqlite3"
    with Store.open(path) as s:
        s.record_submission("kv-cache", {"verdict": "passed", "backend": "cpu"}, "src")
    raw = _hold_exclusive(path)
    try:
        with pytest.raises(StoreError, match="locked by another process"):
            Store.open(path, backup=False)
    finally:
        raw.close()
    assert sorted(p.name for p in tmp_path.iterdir() if "corrupt" in p.name) == []
    with Store.open(path) as s:  # the progress is all still there
        assert s.challenge_status()["kv-cache"]["status"] == "passed"


def test_opening_a_locked_store_says_so_within_the_open_wait(tmp_path):
    """Opening does not wait the whole write timeout (the app's terminal would stay blank)."""
    import time

    import inferview.store as store_mod

    path = tmp_path / "p.sqlite3"
    Store.open(path, backup=False).close()
    raw = _hold_exclusive(path)
    try:
        t0 = time.monotonic()
        with pytest.raises(StoreError, match=r"locked by another process \(waited 1.5 s\)"):
            Store.open(path, backup=False)
        assert time.monotonic() - t0 < store_mod.BUSY_TIMEOUT_MS / 1000 / 2
    finally:
        raw.close()


def test_a_write_that_stays_locked_is_a_clear_error(tmp_path, monkeypatch):
    import inferview.store as store_mod

    monkeypatch.setattr(store_mod, "BUSY_TIMEOUT_MS", 200)
    path = tmp_path / "p.sqlite3"
    s = Store.open(path, backup=False)
    s._conn.execute("PRAGMA busy_timeout = 200")
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="locked by another process"):
            s.set_setting("k", "v")
    finally:
        raw.close()
        s.close()


def test_a_read_only_store_is_a_clear_error_never_moved_aside(tmp_path, monkeypatch):
    import inferview.store as store_mod

    path = tmp_path / "p.sqlite3"
    with Store.open(path) as s:
        s.set_setting("kept", "yes")
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA journal_mode = DELETE")
    raw.close()
    real_connect = sqlite3.connect

    def read_only(p, **kw):  # what a read-only file or folder gives (the tests may run as root)
        return real_connect(f"file:{p}?mode=ro", uri=True, **kw)

    monkeypatch.setattr(store_mod.sqlite3, "connect", read_only)
    with pytest.raises(StoreError, match="cannot be opened for writing"):
        Store.open(path, backup=False)
    monkeypatch.undo()
    assert not list(tmp_path.glob("*corrupt*"))
    with Store.open(path) as s:
        assert s.get_setting("kept") == "yes"


def test_a_backup_that_cannot_be_written_does_not_stop_the_store(tmp_path):
    from datetime import date

    path = tmp_path / "p.sqlite3"
    blocked = tmp_path / "backups" / f"p-{date.today().isoformat()}.sqlite3.part"
    blocked.mkdir(parents=True)  # sqlite cannot open a folder as the backup file
    with Store.open(path) as s:
        s.set_setting("k", "v")
        assert s.get_setting("k") == "v"


def test_a_corrupt_store_is_restored_from_the_newest_good_backup(tmp_path):
    path = tmp_path / "p.sqlite3"
    with Store.open(path, backup=False) as s:
        s.record_question_attempt("q", "kv-cache", "open", "a", {}, True)
        s.backup(tmp_path / "backups" / "p-2026-01-02.sqlite3")
        s.record_question_attempt("q", "kv-cache", "open", "b", {}, True)
    (tmp_path / "backups" / "p-2026-01-03.sqlite3").write_bytes(b"damaged too" * 100)
    path.write_bytes(b"not a database" * 100)
    with Store.open(path, backup=False) as s:
        assert "restored from the backup p-2026-01-02.sqlite3" in s.notice
        assert [a["answer"] for a in s.question_attempts()] == ["a"]
    assert list(tmp_path.glob("p.sqlite3.corrupt-*"))[0].read_bytes().startswith(b"not a database")

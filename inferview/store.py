"""The progress store: one SQLite file in the data folder that must never lose a user's progress.

- WAL journal, writes in ``BEGIN IMMEDIATE`` transactions with a busy timeout, so two processes (the
  TUI and ``inferview grade`` in another terminal) can write at once.
- A schema version (``PRAGMA user_version``) with forward migrations; a store written by a newer
  inferview is refused with a clear message rather than silently altered.
- ``PRAGMA quick_check`` on open; a corrupt file is moved aside (kept, named in ``Store.notice``) and
  the newest good backup is restored, or a fresh store made when there is none, so the command still
  works. A lock or a permission problem is not corruption: it is a :class:`StoreError` and the file is
  left alone.
- A backup through SQLite's online backup API on open (at most one a day), the last few kept.

Timestamps are stored as ISO-8601 UTC text; JSON payloads (grading results, FSRS cards, mock
sessions) as text.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from inferview import paths

SCHEMA_VERSION = 2
BUSY_TIMEOUT_MS = 10_000
OPEN_WAIT_MS = 1_500
"""How long opening waits for another process's lock before saying so: the app opens the store
before its first screen, so a long wait there is a blank terminal. Once open, writes wait
:data:`BUSY_TIMEOUT_MS` (another inferview finishing its write)."""
BACKUPS_KEPT = 5
PART_SUFFIX = ".part"
"""A backup being written: ``<backup>.<pid>.part``, never read as a backup."""

MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE question_attempts (
        id INTEGER PRIMARY KEY,
        question_id TEXT NOT NULL,
        topic TEXT NOT NULL,
        kind TEXT NOT NULL,
        answer TEXT NOT NULL,
        result TEXT NOT NULL,
        correct INTEGER,
        rating INTEGER,
        duration_s REAL,
        mock_id INTEGER,
        created_at TEXT NOT NULL
    );
    CREATE INDEX question_attempts_topic ON question_attempts (topic, created_at);
    CREATE INDEX question_attempts_question ON question_attempts (question_id);

    CREATE TABLE cards (
        question_id TEXT PRIMARY KEY,
        topic TEXT NOT NULL,
        card TEXT NOT NULL,
        due TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX cards_due ON cards (due);

    CREATE TABLE submissions (
        id INTEGER PRIMARY KEY,
        challenge_id TEXT NOT NULL,
        verdict TEXT NOT NULL,
        backend TEXT,
        seed INTEGER,
        duration_s REAL,
        result TEXT NOT NULL,
        source TEXT NOT NULL,
        mock_id INTEGER,
        created_at TEXT NOT NULL
    );
    CREATE INDEX submissions_challenge ON submissions (challenge_id, created_at);

    CREATE TABLE mock_sessions (
        id INTEGER PRIMARY KEY,
        status TEXT NOT NULL,
        config TEXT NOT NULL,
        state TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );

    CREATE TABLE settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    """,
    2: """
    CREATE TABLE suggestions (
        question_id TEXT PRIMARY KEY,
        topic TEXT NOT NULL,
        reason TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    """,
}


class StoreError(Exception):
    """The store cannot be used (written by a newer inferview, locked, read-only); ``str()`` is a
    message for the user."""


# SQLite primary result codes (sqlite.org/rescode.html)
_SQLITE_PERM, _SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 3, 5, 6, 8
_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL = 10, 11, 13
_SQLITE_CANTOPEN, _SQLITE_NOTADB = 14, 26


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    """True for a damaged file (worth moving aside); False for a lock, permissions or I/O trouble,
    where moving the file would hide a healthy store."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return not isinstance(exc, sqlite3.OperationalError) or str(exc).startswith("quick_check")
    return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)


def _usage_error(path: Path, exc: sqlite3.Error, waited_ms: int | None = None) -> StoreError:
    """A :class:`StoreError` that says what to do about a lock, permissions or another failure."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if code in (_SQLITE_BUSY, _SQLITE_LOCKED) or "locked" in str(exc):
        waited = BUSY_TIMEOUT_MS if waited_ms is None else waited_ms
        return StoreError(
            f"The progress store {path} is locked by another process (waited "
            f"{waited / 1000:g} s); close the other inferview and try again.")
    if code in (_SQLITE_READONLY, _SQLITE_CANTOPEN, _SQLITE_PERM):
        return StoreError(
            f"The progress store {path} cannot be opened for writing ({exc}); check the "
            "permissions of the file and its folder, or set INFERVIEW_HOME to another folder.")
    if code in (_SQLITE_IOERR, _SQLITE_FULL):
        return StoreError(f"The progress store {path} cannot be used ({exc}): is its disk full? "
                          "Nothing in it was changed.")
    return StoreError(f"The progress store {path} cannot be used ({exc}).")


def _write_error(path: Path, exc: sqlite3.Error) -> StoreError:
    """A :class:`StoreError` for a save that failed (nothing of it was kept): a full disk and an
    I/O error are said as such, anything else as :func:`_usage_error` says it."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if code == _SQLITE_FULL:
        return StoreError(f"Not saved: the disk holding the progress store {path} is full; free "
                          "some space and try again (everything saved before is intact).")
    if code == _SQLITE_IOERR:
        return StoreError(f"Not saved: the progress store {path} could not be written ({exc}: is "
                          "the disk full, or a file-size limit reached?); everything saved before "
                          "is intact.")
    return _usage_error(path, exc)


def _remove_part(part: Path) -> None:
    """Remove a backup's ``.part`` and the journal SQLite may have left beside it."""
    for side in ("-journal", "-wal", "-shm", ""):  # the .part last: a kill midway leaves it,
        with suppress(OSError):                    # and the next start removes the rest
            part.with_name(part.name + side).unlink()


def _remove_stale_parts(folder: Path) -> None:
    """Remove the ``.part`` files of backups whose process is gone (killed mid-backup)."""
    try:
        found = list(folder.glob(f"*{PART_SUFFIX}*"))
    except OSError:
        return
    # a .part, or a journal beside one (of a removal killed midway: its .part went first)
    parts = {f.with_name(f.name[: f.name.rindex(PART_SUFFIX) + len(PART_SUFFIX)]) for f in found}
    for part in sorted(parts):
        pid = part.name[: -len(PART_SUFFIX)].rpartition(".")[2]
        if pid.isdigit() and int(pid) != os.getpid() and _pid_alive(int(pid)):
            continue  # another process is writing it now
        _remove_part(part)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, another user's
    return True


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)


def _iso(ts: datetime) -> str:
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    return ts.astimezone(timezone.utc).isoformat(timespec="microseconds")


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts)


class Store:
    """The SQLite progress store. Open with :meth:`Store.open`; close with :meth:`close` (or use
    it as a context manager)."""

    def __init__(self, conn: sqlite3.Connection, path: Path, notice: str | None = None) -> None:
        self._conn = conn
        self._lock = threading.RLock()  # one connection, shared by the TUI's worker threads
        self._depth = 0  # transactions open on this connection (nested ones are savepoints)
        self.path = path
        self.notice = notice
        """A message for the user when something was repaired on open (corrupt file moved aside)."""

    # ---------------------------------------------------------------- opening and maintenance

    @classmethod
    def open(cls, path: Path | str | None = None, *, backup: bool = True) -> Store:
        """Open (creating, migrating, checking and backing up) the store at ``path``."""
        path = Path(path) if path is not None else paths.store_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"The progress store's folder {path.parent} cannot be made "
                             f"({exc.strerror or exc}).") from None
        notice = None
        try:
            try:
                conn = cls._connect_checked(path)
            except sqlite3.DatabaseError as exc:
                if not _is_corruption(exc):
                    raise
                try:
                    aside = cls._move_aside(path)
                except OSError as move_exc:
                    raise StoreError(
                        f"The progress store {path} could not be read ({exc}) and could not be "
                        f"moved aside ({move_exc.strerror or move_exc}); it was left untouched."
                    ) from None
                conn, restored = cls._restore_latest_backup(path)
                if restored is None:
                    notice = (f"The progress store {path} could not be read ({exc}); it was kept as "
                              f"{aside} and a fresh store was made.")
                    conn = cls._connect_checked(path)
                else:
                    notice = (f"The progress store {path} could not be read ({exc}); it was kept as "
                              f"{aside} and your progress was restored from the backup {restored.name} "
                              "(anything recorded after that backup is only in the kept file).")
            store = cls(conn, path, notice)
            try:
                store._migrate()
            except BaseException:
                conn.close()
                raise
        except sqlite3.Error as exc:
            raise _usage_error(path, exc) from None
        if backup:
            store._daily_backup()
        return store

    @staticmethod
    def _connect_checked(path: Path) -> sqlite3.Connection:
        wait = min(OPEN_WAIT_MS, BUSY_TIMEOUT_MS)
        conn = sqlite3.connect(path, timeout=wait / 1000, isolation_level=None,
                               check_same_thread=False)
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {wait}")
            result = conn.execute("PRAGMA quick_check").fetchone()[0]
            if result != "ok":
                raise sqlite3.DatabaseError(f"quick_check: {result}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as exc:
            conn.close()
            if "locked" in str(exc) or ((getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF) in (
                    _SQLITE_BUSY, _SQLITE_LOCKED):
                raise _usage_error(path, exc, waited_ms=wait) from None
            raise
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")  # open: writes wait longer
        return conn

    @classmethod
    def _restore_latest_backup(cls, path: Path) -> tuple[sqlite3.Connection | None, Path | None]:
        """Copy the newest backup that passes ``quick_check`` to ``path`` and open it."""
        folder = path.parent / "backups"
        for backup in sorted(folder.glob(f"{path.stem}-*.sqlite3"), reverse=True):
            try:
                shutil.copyfile(backup, path)
                return cls._connect_checked(path), backup
            except (OSError, sqlite3.DatabaseError):
                path.unlink(missing_ok=True)
        return None, None

    @staticmethod
    def _move_aside(path: Path) -> Path:
        stamp = utcnow().strftime("%Y%m%dT%H%M%SZ")
        aside = path.with_name(f"{path.name}.corrupt-{stamp}")
        n = 1
        while aside.exists():
            aside = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
            n += 1
        path.rename(aside)
        for suffix in ("-wal", "-shm"):
            side = path.with_name(path.name + suffix)
            if side.exists():
                side.rename(aside.with_name(aside.name + suffix))
        return aside

    def _migrate(self) -> None:
        with self.transaction() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"The progress store {self.path} was written by a newer inferview (schema "
                    f"{version}, this version knows {SCHEMA_VERSION}). Upgrade inferview, or set "
                    "INFERVIEW_HOME to use another data folder; the file was left untouched."
                )
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[target].split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {target}")

    def _daily_backup(self) -> None:
        folder = self.path.parent / "backups"
        today = date.today().isoformat()
        target = folder / f"{self.path.stem}-{today}.sqlite3"
        _remove_stale_parts(folder)
        if target.exists():
            return
        try:
            self.backup(target)
        except (OSError, sqlite3.Error):
            return  # a backup that cannot be written must not stop the user from practising
        # only a new backup that is whole may push the oldest out (a full disk never costs the
        # last good one)
        backups = sorted(folder.glob(f"{self.path.stem}-*.sqlite3"))
        for old in backups[:-BACKUPS_KEPT]:
            old.unlink(missing_ok=True)

    def backup(self, target: Path) -> Path:
        """Copy the store to ``target`` with SQLite's online backup API.

        The copy is written beside ``target`` as ``<target>.<pid>.part`` and renamed to ``target``
        only once it is complete and passes ``quick_check``: a killed or failed backup never
        stands in for one (and its ``.part`` is removed by the next daily backup, or at once when
        the copy failed)."""
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}{PART_SUFFIX}")
        try:
            dest = sqlite3.connect(tmp)
            try:
                with self._lock:
                    self._conn.backup(dest)
                result = dest.execute("PRAGMA quick_check").fetchone()[0]
                if result != "ok":
                    raise sqlite3.DatabaseError(f"the backup failed its check: {result}")
            finally:
                dest.close()
            os.replace(tmp, target)
        except BaseException:
            _remove_part(tmp)
            raise
        return target

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``): all or nothing.

        Nested in another transaction of this store (same thread), it is a savepoint of that one:
        several saves that belong together (a result and the questions it schedules) commit at
        once or not at all, and a failed inner part is undone without ending the outer one.

        Raises :class:`StoreError` with a clear message when the store stays locked by another
        process past the busy timeout, or cannot be written (a full disk, a read-only file)."""
        with self._lock:
            if self._depth:
                name = f"nested_{self._depth}"
                self._conn.execute(f"SAVEPOINT {name}")
                self._depth += 1
                try:
                    yield self._conn
                except BaseException:
                    if self._conn.in_transaction:  # (a full disk may have ended it already)
                        with suppress(sqlite3.Error):
                            self._conn.execute(f"ROLLBACK TO {name}")
                            self._conn.execute(f"RELEASE {name}")
                    raise
                else:
                    self._conn.execute(f"RELEASE {name}")
                finally:
                    self._depth -= 1
                return
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise _usage_error(self.path, exc) from None
            self._depth = 1
            try:
                try:
                    yield self._conn
                except BaseException:
                    self._rollback()
                    raise
                try:
                    self._conn.execute("COMMIT")
                except sqlite3.Error:
                    self._rollback()  # SQLite may have rolled back itself (a full disk): either way
                    raise
            except sqlite3.OperationalError as exc:
                raise _write_error(self.path, exc) from None
            finally:
                self._depth = 0

    def _rollback(self) -> None:
        """Undo the open transaction, if SQLite has not already (after a full disk or an I/O
        error it may have): a failed rollback must not hide the error that caused it."""
        if self._conn.in_transaction:
            with suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rows(self, sql: str, args: tuple = ()) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._conn.execute(sql, args).fetchall()]

    def _scalar_rows(self, sql: str, args: tuple = ()) -> list[Any]:
        with self._lock:
            return [r[0] for r in self._conn.execute(sql, args).fetchall()]

    # ---------------------------------------------------------------- question attempts

    def record_question_attempt(
        self,
        question_id: str,
        topic: str,
        kind: str,
        answer: str,
        result: dict[str, Any],
        correct: bool | None,
        rating: int | None = None,
        duration_s: float | None = None,
        mock_id: int | None = None,
        at: datetime | None = None,
    ) -> int:
        """Save one answered question (and the self-rating, if given); returns its row id."""
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO question_attempts (question_id, topic, kind, answer, result, correct,"
                " rating, duration_s, mock_id, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (question_id, topic, kind, answer, json.dumps(result), None if correct is None
                 else int(correct), rating, duration_s, mock_id, _iso(at or utcnow())),
            )
            return int(cur.lastrowid)

    def set_attempt_rating(self, attempt_id: int, rating: int) -> None:
        """Record the self-rating (1 Again … 4 Easy) given after seeing the grading."""
        with self.transaction() as conn:
            conn.execute("UPDATE question_attempts SET rating = ? WHERE id = ?", (rating, attempt_id))

    def question_attempts(
        self, topic: str | None = None, since: datetime | None = None, limit: int | None = None,
        question_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """Attempts, newest first, with ``result`` decoded."""
        sql, args = "SELECT * FROM question_attempts WHERE 1=1", []
        if topic:
            sql += " AND topic = ?"
            args.append(topic)
        if question_id:
            sql += " AND question_id = ?"
            args.append(question_id)
        if since:
            sql += " AND created_at >= ?"
            args.append(_iso(since))
        sql += " ORDER BY created_at DESC, id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        rows = self._rows(sql, tuple(args))
        for r in rows:
            r["result"] = json.loads(r["result"])
            r["correct"] = None if r["correct"] is None else bool(r["correct"])
        return rows

    # ---------------------------------------------------------------- scheduling (FSRS cards)

    def get_card(self, question_id: str) -> str | None:
        """The FSRS card of a question as JSON, or None if it was never reviewed."""
        rows = self._scalar_rows("SELECT card FROM cards WHERE question_id = ?", (question_id,))
        return rows[0] if rows else None

    def put_card(self, question_id: str, topic: str, card_json: str, due: datetime) -> None:
        """Save a question's FSRS card and its next due time."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO cards (question_id, topic, card, due, updated_at) VALUES (?,?,?,?,?)"
                " ON CONFLICT(question_id) DO UPDATE SET topic=excluded.topic, card=excluded.card,"
                " due=excluded.due, updated_at=excluded.updated_at",
                (question_id, topic, card_json, _iso(due), _iso(utcnow())),
            )

    def suggest(self, question_id: str, topic: str, reason: str, at: datetime | None = None) -> None:
        """Suggest a question never seen yet (a challenge failed, a mock interview missed it): it
        comes first among the new questions, with ``reason``. A later suggestion of the same
        question replaces the reason."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO suggestions (question_id, topic, reason, created_at) VALUES (?,?,?,?)"
                " ON CONFLICT(question_id) DO UPDATE SET topic=excluded.topic, reason=excluded.reason,"
                " created_at=excluded.created_at",
                (question_id, topic, reason, _iso(at or utcnow())),
            )

    def suggestions(self, topic: str | None = None) -> list[dict[str, Any]]:
        """Suggested questions not reviewed since, newest first: ``question_id``, ``topic``,
        ``reason``, ``created_at``."""
        sql = ("SELECT s.* FROM suggestions s LEFT JOIN cards c ON c.question_id = s.question_id"
               " WHERE c.question_id IS NULL")
        args: tuple = ()
        if topic:
            sql, args = sql + " AND s.topic = ?", (topic,)
        return self._rows(sql + " ORDER BY s.created_at DESC, s.question_id", args)

    def due_question_ids(self, now: datetime | None = None, topic: str | None = None) -> list[str]:
        """Ids of reviewed questions due at ``now``, most overdue first."""
        sql, args = "SELECT question_id FROM cards WHERE due <= ?", [_iso(now or utcnow())]
        if topic:
            sql += " AND topic = ?"
            args.append(topic)
        sql += " ORDER BY due"
        return self._scalar_rows(sql, tuple(args))

    def cards(self, topic: str | None = None) -> list[dict[str, Any]]:
        """Every card row (question_id, topic, card JSON, due)."""
        if topic:
            return self._rows("SELECT * FROM cards WHERE topic = ?", (topic,))
        return self._rows("SELECT * FROM cards")

    # ---------------------------------------------------------------- challenge submissions

    def record_submission(
        self, challenge_id: str, result: dict[str, Any], source: str, mock_id: int | None = None,
        at: datetime | None = None,
    ) -> int:
        """Save one grading run: the whole result object and the graded source."""
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO submissions (challenge_id, verdict, backend, seed, duration_s, result,"
                " source, mock_id, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
                (challenge_id, str(result.get("verdict", "error")), result.get("backend"),
                 result.get("seed"), result.get("duration_s"), json.dumps(result), source, mock_id,
                 _iso(at or utcnow())),
            )
            return int(cur.lastrowid)

    def submissions(self, challenge_id: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Submissions, newest first, with ``result`` decoded."""
        sql, args = "SELECT * FROM submissions", ()
        if challenge_id:
            sql, args = sql + " WHERE challenge_id = ?", (challenge_id,)
        sql += " ORDER BY created_at DESC, id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        rows = self._rows(sql, args)
        for r in rows:
            r["result"] = json.loads(r["result"])
        return rows

    def challenge_status(self) -> dict[str, dict[str, Any]]:
        """Per challenge: status (failed / passed), best passing duration, its backend, attempts,
        last attempt time. Challenges never attempted are absent (status "new")."""
        out: dict[str, dict[str, Any]] = {}
        for r in self._rows(
            "SELECT challenge_id, verdict, backend, duration_s, created_at FROM submissions ORDER BY created_at"
        ):
            s = out.setdefault(r["challenge_id"], {"status": "failed", "best_duration_s": None,
                                                   "backend": None, "attempts": 0, "last_at": None})
            s["attempts"] += 1
            s["last_at"] = r["created_at"]
            if r["verdict"] == "passed":
                s["status"] = "passed"
                if s["best_duration_s"] is None or (r["duration_s"] or 0) < s["best_duration_s"]:
                    s["best_duration_s"] = r["duration_s"]
                    s["backend"] = r["backend"]
            elif s["status"] != "passed":
                s["backend"] = r["backend"]
        return out

    # ---------------------------------------------------------------- mock interviews

    def create_mock(self, config: dict[str, Any], state: dict[str, Any] | None = None) -> int:
        """Start a mock-interview session; returns its id."""
        now = _iso(utcnow())
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO mock_sessions (status, config, state, created_at, updated_at)"
                " VALUES ('running', ?, ?, ?, ?)",
                (json.dumps(config), json.dumps(state or {}), now, now),
            )
            return int(cur.lastrowid)

    def update_mock(self, mock_id: int, state: dict[str, Any], status: str) -> None:
        """Save a session's state and status (running / paused / finished)."""
        with self.transaction() as conn:
            conn.execute(
                "UPDATE mock_sessions SET state = ?, status = ?, updated_at = ? WHERE id = ?",
                (json.dumps(state), status, _iso(utcnow()), mock_id),
            )

    def get_mock(self, mock_id: int) -> dict[str, Any] | None:
        """One session with ``config`` and ``state`` decoded, or None."""
        rows = self._rows("SELECT * FROM mock_sessions WHERE id = ?", (mock_id,))
        if not rows:
            return None
        r = rows[0]
        r["config"], r["state"] = json.loads(r["config"]), json.loads(r["state"])
        return r

    def list_mocks(self) -> list[dict[str, Any]]:
        """Every session, newest first, decoded."""
        rows = self._rows("SELECT * FROM mock_sessions ORDER BY created_at DESC, id DESC")
        for r in rows:
            r["config"], r["state"] = json.loads(r["config"]), json.loads(r["state"])
        return rows

    # ---------------------------------------------------------------- settings

    def get_setting(self, key: str, default: Any = None) -> Any:
        """A JSON-decoded setting, or ``default``."""
        rows = self._scalar_rows("SELECT value FROM settings WHERE key = ?", (key,))
        return json.loads(rows[0]) if rows else default

    def set_setting(self, key: str, value: Any) -> None:
        """Save a JSON-encodable setting."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, json.dumps(value)),
            )

    # ---------------------------------------------------------------- summaries

    def streak(self, today: date | None = None) -> int:
        """Consecutive days, ending today (or yesterday), with at least one attempt or submission."""
        days = {
            _parse(ts).astimezone().date()
            for ts in self._scalar_rows(
                "SELECT created_at FROM question_attempts UNION ALL SELECT created_at FROM submissions")
        }
        day = today or date.today()
        if day not in days:
            day -= timedelta(days=1)
        n = 0
        while day in days:
            n += 1
            day -= timedelta(days=1)
        return n

    def summary(self) -> dict[str, Any]:
        """Counts for ``inferview stats``: attempts and accuracy per topic, challenges, mocks."""
        topics: dict[str, dict[str, Any]] = {}
        for r in self._rows(
            "SELECT topic, COUNT(*) AS attempts, SUM(correct = 1) AS correct,"
            " SUM(correct IS NOT NULL) AS graded FROM question_attempts GROUP BY topic ORDER BY topic"
        ):
            graded = r["graded"] or 0
            topics[r["topic"]] = {
                "attempts": r["attempts"],
                "correct": r["correct"] or 0,
                "accuracy": (r["correct"] or 0) / graded if graded else None,
            }
        return {
            "topics": topics,
            "challenges": self.challenge_status(),
            "reviews_due": len(self.due_question_ids()),
            "streak_days": self.streak(),
            "mock_sessions": [
                {"id": m["id"], "status": m["status"], "created_at": m["created_at"],
                 "score": m["state"].get("report", {}).get("score") if isinstance(m["state"], dict) else None}
                for m in self.list_mocks()
            ],
        }

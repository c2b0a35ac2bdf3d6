"""The CLI skeleton: version, help, list, stats, and one clear line for every error."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from inferview import __version__
from inferview.cli import COMMANDS, cli
from inferview.store import Store


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "inferview", *args], capture_output=True, text=True)


def test_version():
    proc = _cli("--version")
    assert proc.returncode == 0 and __version__ in proc.stdout


def test_help_lists_every_command():
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert name in result.output


def test_every_command_module_exists_and_has_help():
    for name in COMMANDS:
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0, f"{name}: {result.output}"


def test_unknown_command_is_one_line_and_exit_2():
    proc = _cli("frobnicate")
    assert proc.returncode == 2
    assert "No such command" in proc.stderr and "Traceback" not in proc.stderr


def test_list_json_has_challenges_and_banks():
    data = json.loads(CliRunner().invoke(cli, ["list", "--json"]).output)
    assert set(data) == {"challenges", "banks", "skipped"}


def test_stats_json_reflects_the_store():
    with Store.open() as s:
        s.record_question_attempt("kv-why", "kv-cache", "open", "x", {}, False)
        s.record_submission("kv-cache", {"verdict": "passed", "backend": "cpu", "duration_s": 2.0}, "src")
    data = json.loads(CliRunner().invoke(cli, ["stats", "--json"]).output)
    assert data["topics"]["kv-cache"] == {"attempts": 1, "correct": 0, "accuracy": 0.0}
    assert data["challenges"]["kv-cache"]["status"] == "passed"


def test_stats_with_a_corrupt_store_still_works_and_says_so(inferview_home):
    (inferview_home / "progress.sqlite3").write_bytes(b"garbage" * 500)
    proc = _cli("stats", "--json")
    assert proc.returncode == 0
    assert "kept as" in proc.stderr
    json.loads(proc.stdout)


def test_store_from_newer_version_is_one_clear_line(inferview_home):
    import sqlite3

    Store.open().close()
    conn = sqlite3.connect(inferview_home / "progress.sqlite3")
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    proc = _cli("stats")
    assert proc.returncode == 1
    assert "newer inferview" in proc.stderr and "Traceback" not in proc.stderr


def test_a_locked_store_is_one_clear_line_after_the_busy_timeout(inferview_home, monkeypatch, capsys):
    import sqlite3

    import inferview.store as store_mod
    from inferview.cli import main

    Store.open().close()
    monkeypatch.setattr(store_mod, "BUSY_TIMEOUT_MS", 200)
    raw = sqlite3.connect(inferview_home / "progress.sqlite3", isolation_level=None)
    raw.execute("PRAGMA journal_mode = DELETE")
    raw.execute("BEGIN EXCLUSIVE")
    try:
        for args in (["stats"], ["list"], ["report"]):
            capsys.readouterr()
            try:
                main(args)
            except SystemExit as exc:
                code = exc.code
            err = capsys.readouterr().err
            assert code == 1, args
            assert err.startswith("inferview: The progress store") and "locked" in err, err
            assert len(err.strip().splitlines()) == 1, err
    finally:
        raw.close()
    assert not list(inferview_home.glob("*corrupt*"))


def test_inferview_home_pointing_at_a_file_is_one_clear_line(tmp_path, monkeypatch):
    home = tmp_path / "not-a-folder"
    home.write_text("x")
    monkeypatch.setenv("INFERVIEW_HOME", str(home))
    for args in (["stats"], ["start", "kv-cache-size"]):
        proc = _cli(*args)
        assert proc.returncode == 1, args
        assert proc.stderr.strip() == f"inferview: the data folder {home} is a file, not a folder " \
            "(see INFERVIEW_HOME)", proc.stderr


def test_app_with_an_unusable_store_says_so_before_taking_the_screen(inferview_home):
    import sqlite3

    Store.open().close()
    conn = sqlite3.connect(inferview_home / "progress.sqlite3")
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    proc = subprocess.run([sys.executable, "-m", "inferview"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "newer inferview" in proc.stderr and "Traceback" not in proc.stderr


def test_list_shows_every_id_whole_at_80_columns_in_learning_order():
    """Ids are what `grade`, `start` and `challenge` take: a cut id ('distillation-…') is useless."""
    result = CliRunner().invoke(cli, ["list"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    ids = [line.split("│")[1].strip() for line in lines if line.startswith("│") and line.split("│")[1].strip()]
    data = json.loads(CliRunner().invoke(cli, ["list", "--json"]).output)
    assert ids[:len(data["challenges"])] == [c["id"] for c in data["challenges"]]
    assert ids[0] == "kv-cache-size" and "…" not in "".join(ids)


def test_counts_are_worded_in_the_singular_and_the_plural():
    from inferview.text import plural

    assert [plural(n, "day") for n in (0, 1, 2)] == ["0 days", "1 day", "2 days"]
    assert plural(2, "query", "queries") == "2 queries"
    with Store.open() as s:
        s.record_question_attempt("kv-why", "kv-cache", "open", "x", {}, False)
    assert "Streak: 1 day ·" in CliRunner().invoke(cli, ["stats"]).output

"""``inferview challenge ID [--file PATH]``: usage errors exit 2 with one clear line; a good call
opens the app on that challenge with that file."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferview.cli import main


def test_unknown_challenge_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["challenge", "no-such-challenge"])
    assert exc.value.code == 2
    assert "unknown challenge 'no-such-challenge'" in capsys.readouterr().err


def test_missing_file_is_a_usage_error(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["challenge", "kv-cache-size", "--file", str(tmp_path / "nope.py")])
    assert exc.value.code == 2
    assert "no such file" in capsys.readouterr().err


def test_opens_the_app_on_the_challenge_with_the_file(tmp_path: Path, monkeypatch) -> None:
    mine = tmp_path / "mine.py"
    mine.write_text("x = 1\n")
    calls = []
    monkeypatch.setattr("inferview.tui.app.run_app", lambda initial=None, mock=None, **_: calls.append(initial))
    main(["challenge", "kv-cache-size", "--file", str(mine)])
    assert [(c.challenge_id, c.file) for c in calls] == [("kv-cache-size", mine.resolve())]


def test_mock_with_a_focus_but_no_length_asks_for_the_length(monkeypatch) -> None:
    calls = []
    monkeypatch.setattr("inferview.tui.app.run_app", lambda initial=None, mock=None, **_: calls.append(mock))
    main(["mock", "--focus", "flash-attention"])
    assert calls == [{"minutes": None, "focus": "flash-attention", "mock_id": None, "seed": None}]

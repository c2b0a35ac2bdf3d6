"""The app grades over SSH when ``INFERVIEW_REMOTE`` is set, says where, and escape (cancel)
stops ssh and the remote's grading, recording nothing."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from inferview.tests.remote.conftest import Remote
from inferview.tests.remote.test_remote_grading import RIGHT, SLOW
from inferview.tests.support.tui import screen_text, settle
from inferview.tui.app import InitialChallenge, create_app

from inferview.content.loader import load_library
from inferview.remote.backend import SSHBackend


async def wait_for(pilot, condition, seconds: float, what: str) -> None:  # noqa: ANN001
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        await pilot.pause(0.05)


async def test_the_app_grades_on_the_remote_and_escape_cancels_it(
        remote: Remote, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERVIEW_REMOTE", "remote")
    monkeypatch.setenv("INFERVIEW_REMOTE_COMMAND", remote.command)
    mine = tmp_path / "solution.py"
    mine.write_text(RIGHT.read_text() + SLOW)
    app = create_app(library=load_library(include_user=False), store_path=tmp_path / "p.sqlite3",
                     initial=InitialChallenge("kv-cache-size", mine))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        backend = app.services.get_backend()
        assert isinstance(backend, SSHBackend) and backend.host == "remote"
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: screen.grading, 5, "grading to start")
        assert "connecting to remote" in screen_text(app)
        await wait_for(pilot, lambda: screen._progress[0].startswith("check"), 60,
                       "the remote's first check")
        await pilot.pause(1.0)
        assert backend._proc is not None and backend._proc.poll() is None
        proc = backend._proc
        await pilot.press("escape")
        await wait_for(pilot, lambda: proc.poll() is not None, 5, "ssh to be stopped")
        await settle(pilot)
        assert not screen.grading
        assert app.services.get_store().submissions("kv-cache-size") == []
    assert remote.wait_clean() == ([], []), "the remote left processes or files behind"


async def test_an_unreachable_host_is_one_notification_and_nothing_recorded(
        remote: Remote, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERVIEW_REMOTE", "closed")
    mine = tmp_path / "solution.py"
    mine.write_text(RIGHT.read_text())
    app = create_app(library=load_library(include_user=False), store_path=tmp_path / "p.sqlite3",
                     initial=InitialChallenge("kv-cache-size", mine))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: not screen.grading, 30, "grading to end")
        await settle(pilot)
        said = [str(n.message) for n in app._notifications]
        assert len(said) == 1 and "\n" not in said[0], said
        assert said[0].startswith("cannot reach closed (ssh: connect to host 127.0.0.1"), said
        assert app.services.get_store().submissions("kv-cache-size") == []

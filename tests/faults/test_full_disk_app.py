"""A full disk under the running app: rating an answer fails with a notice, the app keeps running
with the answer still on screen, and rating it again once there is room saves it."""

from __future__ import annotations

import pytest
from inferview.tests.support.tui import app_factory_fixture, screen_text  # noqa: F401
from inferview.tui.screens.practice import PracticeScreen

from tests.faults.conftest import quick_check


async def test_rating_on_a_full_disk_says_so_and_keeps_the_answer(app_factory, small_disk) -> None:
    if small_disk.mode != "tmpfs":
        pytest.skip("needs a small tmpfs (mounting as root): a file-size limit would stop the "
                    "test process itself")
    store_path = small_disk.path / "progress.sqlite3"
    app = app_factory(store_path=store_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("p")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PracticeScreen)
        app.services.get_store()  # opened (and its day's backup made) while there is room
        await pilot.press(*"it")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "Rate yourself" in screen_text(app)
        small_disk.fill()
        await pilot.press("3")
        await pilot.pause()
        assert app.is_running and app.screen is screen
        assert screen.feedback is not None and screen.session.answered == 0
        notices = " ".join(str(n.message) for n in app._notifications)
        assert "full" in notices and "rate it again" in notices, notices
        small_disk.free()
        await pilot.press("3")
        await pilot.pause()
        assert screen.session.answered == 1
    assert quick_check(store_path) == "ok"
    [attempt] = app.services.get_store().question_attempts()
    assert attempt["rating"] == 3

"""Home: topics and counts, keys to every screen, content errors and the store's notice."""

from __future__ import annotations

from pathlib import Path

import fsrs
from inferview.tests.support.tui import (  # noqa: F401
    FIXED_NOW,
    app_factory_fixture,
    make_library,
    screen_text,
    settle,
)
from inferview.tui.screens.home import HomeScreen

from inferview.content.loader import ContentError


async def test_home_lists_topics_and_todays_numbers(app_factory) -> None:
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        text = screen_text(app)
        assert "The KV cache" in text and "Flash attention" in text
        assert "0 reviews due" in text
        assert "4 new questions" in text
        assert "0/1 challenges passed" in text
        assert "nothing yet" in text


async def test_home_keys_open_every_screen_and_escape_comes_back(app_factory) -> None:
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        for key, name in (("c", "ChallengesScreen"), ("k", "CalculatorScreen"), ("s", "StatsScreen"),
                          ("question_mark", "HelpScreen"), ("p", "PracticeScreen")):
            await pilot.press(key)
            await pilot.pause()
            assert type(app.screen).__name__ == name, key
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen), key


async def test_enter_on_a_topic_practises_that_topic(app_factory) -> None:
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("down", "enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "PracticeScreen"
        assert app.screen.topic == "flash-attention"


async def test_mastery_and_due_come_from_the_cards(app_factory) -> None:
    app = app_factory()
    store = app.services.get_store()
    scheduler = fsrs.Scheduler()
    card, _ = scheduler.review_card(fsrs.Card(), fsrs.Rating.Good, review_datetime=FIXED_NOW)
    store.put_card("kv-why", "kv-cache", card.to_json(), card.due)
    store.put_card("kv-choice", "kv-cache", fsrs.Card(due=FIXED_NOW).to_json(), FIXED_NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "1 review due" in text
        kv_line = next(line for line in text.splitlines() if "The KV cache" in line)
        # kv-why was just reviewed (recall ~100 %); kv-choice and the drill never: a third
        assert "33%" in kv_line, kv_line


async def test_home_reports_skipped_content_and_a_repaired_store(app_factory, tmp_path: Path) -> None:
    library = make_library(tmp_path / "broken")
    library.errors.append(ContentError(Path("questions/bad.yaml"), 7, "questions[2].answer", "field required"))
    store_path = tmp_path / "corrupt.sqlite3"
    store_path.write_bytes(b"this is not a database" * 100)
    app = app_factory(library=library, store_path=store_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "1 content problem" in text
        assert "Store:" in text
        await pilot.press("e")
        await pilot.pause()
        assert type(app.screen).__name__ == "ErrorsScreen"
        assert "questions/bad.yaml:7: questions[2].answer: field required" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)


async def test_home_takes_keys_before_the_library_is_loaded(app_factory, tmp_path: Path, monkeypatch) -> None:
    import threading

    import inferview.content.loader as loader

    library = make_library(tmp_path / "slow")
    release = threading.Event()

    def slow_load(*args, **kwargs):
        release.wait(10)
        return library

    monkeypatch.setattr(loader, "load_library", slow_load)
    app = app_factory(library=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        assert "Loading questions" in screen_text(app)
        await pilot.press("question_mark")  # the UI answers while the library loads
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "The KV cache" in screen_text(app) and "4 new questions" in screen_text(app)


async def test_recent_shows_titles_not_raw_ids(app_factory) -> None:
    from datetime import timedelta

    from inferview.tests.support.tui import PASSED

    app = app_factory()
    store = app.services.get_store()
    store.record_question_attempt("kv-why", "kv-cache", "open", "they are cached", {}, True,
                                  at=FIXED_NOW - timedelta(minutes=9))
    store.record_submission("demo-sum", PASSED, "def add(a, b): return a + b\n",
                            at=FIXED_NOW - timedelta(minutes=3))
    # a drill is shown with the numbers it was asked with; a long id is cut, not wrapped
    store.record_question_attempt("a-drill-with-a-long-identifier", "kv-cache", "numeric", "40 GiB",
                                  {"prompt": "Estimate the KV cache for **Llama-3-70B**"}, False,
                                  at=FIXED_NOW - timedelta(minutes=12))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        lines = screen_text(app).splitlines()
        start = next(i for i, line in enumerate(lines) if "Recent" in line)
        block = "\n".join(lines[start:start + 7])
        # newest first, each a human title with its id (dim) on the line under it
        assert "✓ Add two numbers" in block and "demo-sum · 3m" in block
        assert "✓ Why isn't generatin" in block and "kv-why · 9m" in block
        assert block.index("Add two numbers") < block.index("Why isn't")
        assert "✗ Estimate the KV ca" in block and "a-drill-with-… · 12m │" in block


async def test_a_wider_terminal_gives_recent_titles_more_room(app_factory) -> None:
    app = app_factory()
    app.services.get_store().record_question_attempt("kv-why", "kv-cache", "open", "x", {}, True, at=FIXED_NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "Why isn't generating the 50" not in screen_text(app)
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        await pilot.pause()
        assert "✓ Why isn't generating the 50" in screen_text(app)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.pause()
        assert "✓ Why isn't generatin…" in screen_text(app)


async def test_a_terminal_below_80x24_says_it_is_too_small_and_comes_back(app_factory):
    from inferview.tui.screens.too_small import TooSmallScreen

    app = app_factory()
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, TooSmallScreen)
        assert "too small: 60×20" in screen_text(app) and "at least 80×24" in screen_text(app)
        await pilot.resize_terminal(70, 30)
        await settle(pilot)
        assert isinstance(app.screen, TooSmallScreen) and "70×30" in screen_text(app)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert isinstance(app.screen, HomeScreen)


async def test_toasts_do_not_stack_and_sit_at_the_top(app_factory):
    app = app_factory()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        for n in range(3):
            app.notify(f"message number {n}")
        await settle(pilot)
        await pilot.pause(0.3)
        toasts = list(app.screen.query("Toast"))
        assert len(toasts) == 1 and "message number 2" in str(toasts[0].render())
        assert toasts[0].region.y < app.size.height // 2  # the status lines stay visible

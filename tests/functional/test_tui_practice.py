"""Practice: answer, see the grading, correct it, rate it; every attempt and review is stored."""

from __future__ import annotations

import fsrs
from inferview.tests.support.tui import FIXED_NOW, app_factory_fixture, screen_text  # noqa: F401
from inferview.tui.screens.practice import PracticeScreen

GOOD_OPEN = "The KV cache stores keys and values of past tokens, so only the new token is computed."


async def _type(pilot, text: str) -> None:
    await pilot.press(*["space" if c == " " else c for c in text])


async def _start(pilot, key: str = "p") -> PracticeScreen:
    await pilot.pause()
    await pilot.press(key)
    await pilot.pause()
    assert isinstance(pilot.app.screen, PracticeScreen)
    return pilot.app.screen


async def test_answer_and_rate_an_open_question_stores_the_attempt_and_the_card(app_factory) -> None:
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _start(pilot)
        assert "500th token" in screen_text(app)
        await _type(pilot, "it stores keys and values so only the new token runs")
        await pilot.press("ctrl+s")
        await pilot.pause()
        text = screen_text(app)
        assert "✓ Right" in text and "✓ hit" in text
        assert "Model answer." in text
        assert "Rate yourself" in text
        await pilot.press("3")
        await pilot.pause()
        assert screen.session.answered == 1
        assert "What does the KV cache grow linearly with?" in screen_text(app)  # the next card
    store = app.services.get_store()
    [attempt] = store.question_attempts()
    assert attempt["question_id"] == "kv-why" and attempt["rating"] == 3 and attempt["correct"] is True
    assert attempt["result"]["hits"] and attempt["created_at"].startswith("2026-03-02")
    card = fsrs.Card.from_json(store.get_card("kv-why"))
    assert card.due > FIXED_NOW
    assert store.due_question_ids(FIXED_NOW) == []


async def test_the_user_can_correct_a_key_point_before_rating(app_factory) -> None:
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await _start(pilot)
        await _type(pilot, "it stores keys and values")  # one of two key points
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "~ Partly" in screen_text(app)
        await pilot.press("down", "space")  # "only the new token": the grader missed it, say hit
        await pilot.pause()
        text = screen_text(app)
        assert "✓ Right" in text and "corrected by you" in text
        await pilot.press("4")
        await pilot.pause()
    [attempt] = app.services.get_store().question_attempts()
    assert attempt["correct"] is True and attempt["rating"] == 4
    assert attempt["result"]["corrected_by_user"] is True
    assert len(attempt["result"]["hits"]) == 2 and attempt["result"]["misses"] == []


async def test_choice_and_numeric_questions(app_factory) -> None:
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _start(pilot)
        await pilot.press("ctrl+n")  # skip the open question
        await pilot.pause()
        assert "grow linearly" in screen_text(app)
        await pilot.press("space", "ctrl+s")  # the first option, "Sequence length", is right
        await pilot.pause()
        assert "✓ Right" in screen_text(app)
        await pilot.press("3")
        await pilot.pause()
        assert "Llama-3-70B" in screen_text(app) and "131,072 tokens" in screen_text(app)
        await _type(pilot, "40 GiB")
        await pilot.press("enter")
        await pilot.pause()
        text = screen_text(app)
        assert "✓ Right" in text and "Expected: 40 GiB" in text
        await pilot.press("2")
        await pilot.pause()
        assert screen.session.answered == 2
    attempts = app.services.get_store().question_attempts()
    assert [(a["question_id"], a["correct"], a["rating"]) for a in attempts] == [
        ("kv-size-drill", True, 2), ("kv-choice", True, 3)]
    assert attempts[0]["result"]["expected"] == 40 * 2**30


async def test_follow_ups_come_next_and_leaving_keeps_an_unrated_attempt(app_factory) -> None:
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await _start(pilot)
        await _type(pilot, "no idea")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "Follow-up an interviewer would ask (f): Is flash attention exact?" in screen_text(app)
        await pilot.press("f", "1")
        await pilot.pause()
        assert "Is flash attention exact?" in screen_text(app)
        await pilot.press("space", "ctrl+s")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, PracticeScreen)
    store = app.services.get_store()
    attempts = store.question_attempts()
    assert [(a["question_id"], a["rating"]) for a in attempts] == [("fa-exact", None), ("kv-why", 1)]
    assert store.get_card("fa-exact") is None  # unrated: not scheduled
    assert store.get_card("kv-why") is not None


async def test_due_reviews_come_before_new_questions(app_factory) -> None:
    app = app_factory()
    app.services.get_store().put_card("fa-exact", "flash-attention", fsrs.Card(due=FIXED_NOW).to_json(), FIXED_NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await _start(pilot)
        text = screen_text(app)
        assert "review · Flash attention" in text and "Is flash attention exact?" in text


async def test_a_numeric_answer_without_a_number_is_not_graded(app_factory) -> None:
    """A typo ("banana", "1,2 GB") asks again instead of recording a miss and showing the answer."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _start(pilot)
        await pilot.press("ctrl+n", "ctrl+n")  # skip the open and the choice questions
        await pilot.pause()
        assert "131,072 tokens" in screen_text(app)
        assert "submits." in screen_text(app)  # the whole hint shows at 80 columns
        for typo in ("banana", "1,2 GB"):
            await _type(pilot, typo)
            await pilot.press("enter")
            await pilot.pause()
            assert screen.feedback is None and "Expected:" not in screen_text(app)
            assert any("Write a number with its unit" in n.message for n in app._notifications)
            screen.query_one("#answer-numeric").value = ""
        await _type(pilot, "40 apples")  # a number with a wrong unit is an answer: graded
        await pilot.press("enter")
        await pilot.pause()
        assert screen.feedback is not None and "✗ Not yet" in screen_text(app)
    assert [a["answer"] for a in app.services.get_store().question_attempts()] in ([], ["40 apples"])


async def test_escape_never_drops_a_written_answer_silently(app_factory) -> None:
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _start(pilot)
        await _type(pilot, "half an answer")
        await pilot.press("escape")
        await pilot.pause()
        assert "Leave and discard it?" in screen_text(app)
        await pilot.press("escape")  # escape on the question keeps writing
        await pilot.pause()
        assert app.screen is screen and screen.query_one("#answer-open").text == "half an answer"
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("right", "enter")  # "Discard and leave"
        await pilot.pause()
        assert not isinstance(app.screen, PracticeScreen)
        await _start(pilot)
        await pilot.press("escape")  # nothing written: leaves at once
        await pilot.pause()
        assert not isinstance(app.screen, PracticeScreen)
    assert app.services.get_store().question_attempts() == []


async def test_choice_options_show_code_without_backticks_and_are_never_cut_off(app_factory, tmp_path) -> None:
    """Banks write formulas as code spans, and some options are longer than an 80-column line."""
    from inferview.tests.support.tui import make_library

    library = make_library(tmp_path / "lib")
    q = library.questions["kv-choice"]
    long = "`2 × layers × q_heads × head_dim × seq_len × batch × bytes`, whatever the attention variant"
    options = [q.options[1].model_copy(update={"text": long}), q.options[0]]  # the long one first
    library.questions["kv-choice"] = q.model_copy(update={"options": options})
    app = app_factory(library=library)
    async with app.run_test(size=(80, 24)) as pilot:
        await _start(pilot)
        await pilot.press("ctrl+n")  # skip the open question
        await pilot.pause()
        text = screen_text(app)
        assert "`" not in text
        assert "2 × layers × q_heads" in text and "attention variant" in text
        lines = text.splitlines()
        boxes = [line for line in lines if "▐" in line]
        assert len(boxes) == 2, boxes  # one box per option, on its first line only
        assert "Sequence length" in boxes[0] + boxes[1] and "2 × layers" in boxes[0] + boxes[1]
        assert "▐" not in next(line for line in lines if "attention variant" in line)
        await pilot.press("space", "ctrl+s")  # the long (wrong) one: the feedback lists the options
        await pilot.pause()
        text = screen_text(app)
        assert "✗ Not yet" in text and "✗ 2 × layers × q_heads" in text and "`" not in text


async def test_page_down_scrolls_the_feedback_whatever_is_focused(app_factory) -> None:
    """At 80x24 the model answer is below the fold: PageDown must reach it at once, even with
    the key-point list focused (it would take the key for its highlight)."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _start(pilot)
        await _type(pilot, "it stores keys and values")
        await pilot.press("ctrl+s")
        await pilot.pause()
        # a long model answer, as most real ones are at 80x24
        screen.query_one("#model-answer").update("**Model answer.** " + "A long explanation. " * 120)
        await pilot.pause()
        scroll = screen.query_one("#feedback")
        assert scroll.scroll_y == 0 and scroll.max_scroll_y > 0
        before = app.focused
        await pilot.press("pagedown")
        await pilot.pause()
        assert scroll.scroll_y > 0 and app.focused is before
        await pilot.press("pageup")
        await pilot.pause()
        assert scroll.scroll_y == 0

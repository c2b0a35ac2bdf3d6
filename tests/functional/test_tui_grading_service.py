"""The challenge screen against the real grading service (a subprocess with torch): a wrong
``kv-cache-size`` solution shows its failing check and the minimal counterexample, and the UI
process still never imports torch. One test, because the service takes seconds to start."""

from __future__ import annotations

import sys

import pytest
from inferview.tests.support.tui import screen_text, settle
from inferview.tui.app import InitialChallenge, create_app

from inferview.content.loader import load_library

pytestmark = pytest.mark.slow


async def test_wrong_solution_graded_by_the_service_shows_check_and_counterexample(tmp_path) -> None:
    library = load_library(include_user=False)
    challenge = library.challenges["kv-cache-size"]
    wrong = challenge.folder / "solutions" / "wrong" / "forgets_k_and_v.py"
    mine = tmp_path / "solution.py"
    mine.write_text(wrong.read_text())
    torch_before = "torch" in sys.modules
    app = create_app(library=library, store_path=tmp_path / "p.sqlite3",
                     initial=InitialChallenge("kv-cache-size", mine))
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+r")
        for _ in range(600):  # at most a minute
            if not app.screen.grading:
                break
            await pilot.pause(0.1)
        await settle(pilot)
        result = app.screen.last_result
        assert result is not None and result.verdict == "failed", result
        failing = [c for c in result.checks if c.status == "failed"]
        assert any(c.name.startswith("keys and values for every layer") for c in failing)
        text = screen_text(app)
        assert "FAILED" in text and "smallest failing input:" in text
    assert app.services.get_store().challenge_status()["kv-cache-size"]["status"] == "failed"
    if not torch_before:
        assert "torch" not in sys.modules

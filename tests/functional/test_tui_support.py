"""The fake grading client the app tests use grades by the file's source."""

from __future__ import annotations

from pathlib import Path

from inferview.tests.support.tui import CORRECT, WRONG, FakeGradingClient


def test_fake_client_grades_by_source(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(CORRECT)
    bad.write_text(WRONG)
    client = FakeGradingClient()
    assert client.grade("demo-sum", good)["verdict"] == "passed"
    assert client.grade("demo-sum", bad)["verdict"] == "failed"

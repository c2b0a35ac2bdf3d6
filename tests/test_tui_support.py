"""Shared pieces of the TUI tests: a tiny challenge and question bank, a fake grading client,
a fixed clock and a plain-text dump of the screen. (The only test here checks the fake itself.)"""

from __future__ import annotations

import io
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console

FIXED_NOW = datetime(2026, 3, 2, 9, 30, tzinfo=timezone.utc)

CHALLENGE_YAML = """\
id: demo-sum
title: Add two numbers
topic: kv-cache
difficulty: easy
time_budget_min: 5
entry_points:
  - {name: add, kind: function, signature: "(a, b)"}
hints:
  - text: Use the plus operator.
  - text: "`return a + b`"
  - text: Really, `a + b`.
"""

STARTER = 'def add(a, b):\n    raise NotImplementedError\n'
CORRECT = 'def add(a, b):\n    return a + b\n'
WRONG = 'def add(a, b):\n    return a - b\n'

PASSED = {
    "schema": 1, "challenge": "demo-sum", "verdict": "passed", "backend": "cpu", "seed": 7,
    "duration_s": 0.4,
    "checks": [{"name": "adds", "status": "passed", "message": "", "counterexample": None, "hint": None}],
}
FAILED = {
    "schema": 1, "challenge": "demo-sum", "verdict": "failed", "backend": "cpu", "seed": 7,
    "duration_s": 0.5,
    "checks": [{"name": "adds", "status": "failed", "message": "add(0, 1) returned -1, expected 1",
                "counterexample": "a=0, b=1 (seed 7)", "hint": "Use the plus operator."}],
}


def make_challenge(root: Path) -> Path:
    """Write the ``demo-sum`` challenge folder under ``root`` and return the folder."""
    folder = root / "demo-sum"
    (folder / "solutions" / "correct").mkdir(parents=True)
    (folder / "challenge.yaml").write_text(CHALLENGE_YAML)
    (folder / "statement.md").write_text("# Add two numbers\n\nWrite `add(a, b)`.\n")
    (folder / "starter.py").write_text(STARTER)
    (folder / "checks.py").write_text("")
    (folder / "solutions" / "correct" / "plus.py").write_text(CORRECT)
    return folder


class FakeGradingClient:
    """Grades ``demo-sum`` by reading the file: ``a + b`` passes, anything else fails. ``delay``
    makes grading slow (to test the spinner and cancel); every call is recorded."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.prepared: list[str] = []
        self.graded: list[tuple[str, str]] = []
        self.cancelled = threading.Event()
        self.closed = False

    def prepare(self, challenge_id: str) -> None:
        self.prepared.append(challenge_id)

    def grade(self, challenge_id: str, path: Path, **kwargs: Any) -> dict[str, Any]:
        source = Path(path).read_text()
        self.graded.append((challenge_id, source))
        end = time.monotonic() + self.delay
        while time.monotonic() < end:
            if self.cancelled.is_set():
                raise RuntimeError("cancelled")
            time.sleep(0.01)
        return dict(PASSED if "a + b" in source else FAILED)

    def cancel(self) -> None:
        self.cancelled.set()

    def close(self) -> None:
        self.closed = True


def screen_text(app: Any) -> str:
    """The app's current screen as plain text (what a user would read)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


def test_fake_client_grades_by_source(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(CORRECT)
    bad.write_text(WRONG)
    client = FakeGradingClient()
    assert client.grade("demo-sum", good)["verdict"] == "passed"
    assert client.grade("demo-sum", bad)["verdict"] == "failed"

"""Shared pieces of the TUI tests: a tiny challenge and question bank, a fake grading client,
a fixed clock and a plain-text dump of the screen. (The only test here checks the fake itself.)"""

from __future__ import annotations

import io
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
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
questions: [kv-why]
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


BANK_YAML = """\
bank: tui-test
title: TUI test bank
topics:
  - {id: kv-cache, title: The KV cache, group: Recompute less, summary: Keys and values kept.}
  - {id: flash-attention, title: Flash attention, group: Move less memory, summary: "Exact, in blocks."}
questions:
  - id: kv-why
    kind: open
    topic: kv-cache
    difficulty: easy
    source: "seed: Inference interview guide — The KV Cache"
    prompt: Why isn't generating the 500th token 500 times more expensive than the first?
    answer: The KV cache stores every token's keys and values, so each step only computes the new token.
    follow_ups: [fa-exact]
    key_points:
      - point: keys and values of earlier tokens are cached
        match: ["(cache|store|keep) (kv|keys and values)", "(kv|keys and values) (cache|store|keep)"]
      - point: only the new token needs a forward pass
        match: ["(only|just|1) new token", "(compute|forward pass) (new|1) token"]
        probe: fa-exact
    misconceptions:
      - claim: the cache stores the queries
        match: ["(cache|store) (query|queries)"]
        correction: Queries are used once; only keys and values are reused.
  - id: kv-choice
    kind: choice
    topic: kv-cache
    shuffle: false
    source: "seed: Inference interview guide — The KV Cache"
    prompt: What does the KV cache grow linearly with?
    answer: Sequence length (and batch size).
    options:
      - {text: Sequence length, correct: true, why: One entry per token.}
      - {text: Vocabulary size, why: The vocabulary does not enter the cache.}
  - id: kv-size-drill
    kind: numeric
    topic: kv-cache
    difficulty: medium
    source: "seed: Inference interview guide — The KV Cache"
    prompt: How big is the KV cache of {model} for one sequence of {seq_len} tokens in {dtype}?
    answer: "{value}: layers x 2 x KV heads x head dim x bytes x tokens."
    quantity: kv_cache_bytes
    unit: bytes
    params: {model: [llama-3-70b], seq_len: [131072], dtype: [bf16], batch: [1]}
  - id: fa-exact
    kind: choice
    topic: flash-attention
    shuffle: false
    source: "seed: Inference interview guide — Flash Attention"
    prompt: Is flash attention exact?
    answer: Yes, it computes exact attention in blocks.
    options:
      - {text: "Yes", correct: true, why: Same result up to floating-point rounding.}
      - {text: "No, it approximates", why: That is the classic misconception.}
"""


def make_library(root: Path) -> Any:
    """A small fixed library (two topics, three questions, the ``demo-sum`` challenge), so screens
    and snapshots do not change when the built-in content grows."""
    from inferview.content.loader import Library, LoadedBank, load_bank_file, load_challenge_folder

    root.mkdir(parents=True, exist_ok=True)
    bank_path = root / "tui-test.yaml"
    bank_path.write_text(BANK_YAML)
    bank, errors = load_bank_file(bank_path)
    assert bank is not None and not errors, errors
    challenge, errors = load_challenge_folder(make_challenge(root / "challenges"), builtin=True)
    assert challenge is not None and not errors, errors
    return Library(
        topics={t.id: t for t in bank.topics},
        banks=[LoadedBank(bank, bank_path, False)],
        questions={q.id: q for q in bank.questions},
        question_bank={q.id: bank.bank for q in bank.questions},
        challenges={challenge.id: challenge},
        errors=[],
    )


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

    def grade(self, challenge_id: str, path: Path, on_progress: Any = None, **kwargs: Any) -> dict[str, Any]:
        source = Path(path).read_text()
        self.graded.append((challenge_id, source))
        if on_progress is not None:
            on_progress(0, 1, "adds")
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


@pytest.fixture(name="app_factory")
def app_factory_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Build apps on the fixed library, an isolated store, a fake grader and a fixed clock. HOME is
    the test folder so paths show as ``~/inferview-home/...`` in every run."""
    from inferview.tui.app import create_app

    monkeypatch.setenv("HOME", str(tmp_path))
    library = make_library(tmp_path / "content")

    def make(**kwargs: Any) -> Any:
        kwargs.setdefault("library", library)
        kwargs.setdefault("store_path", tmp_path / "progress.sqlite3")
        kwargs.setdefault("clock", lambda: FIXED_NOW)
        kwargs.setdefault("grading_client", FakeGradingClient())
        return create_app(**kwargs)

    return make


async def settle(pilot: Any, rounds: int = 3) -> None:
    """Let workers finish and their messages be handled."""
    for _ in range(rounds):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def footer_text(pilot: Any, rounds: int = 50) -> str:
    """The screen's last line once it has been drawn (a loaded machine may need several frames)."""
    line = ""
    for _ in range(rounds):
        line = screen_text(pilot.app).splitlines()[-1]
        if line.strip():
            return line
        await pilot.pause(0.05)
    return line


def screen_text(app: Any) -> str:
    """The app's current screen as plain text (what a user would read)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()

"""The torch-free grading client and its service: results, progress, cancel, usage errors."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from inferview.graders.client import GradingCancelled, GradingClient, GradingUsageError

HERE = Path(__file__).resolve().parents[1]  # tests/
DEMO = HERE / "fixtures" / "challenges" / "demo-scale"


@pytest.fixture(scope="module")
def client():
    c = GradingClient()
    yield c
    c.close()


def test_grade_reports_progress_and_returns_the_result(client: GradingClient) -> None:
    client.prepare(str(DEMO))
    seen: list[tuple[int, int, str]] = []
    result = client.grade(str(DEMO), DEMO / "solutions" / "correct" / "mul.py", seed=3,
                          on_progress=lambda d, t, n: seen.append((d, t, n)))
    assert result["schema"] == 1 and result["verdict"] == "passed" and result["seed"] == 3
    assert seen[0][0] == 0 and seen[-1][0] == seen[-1][1] == len(result["checks"])


def test_cancel_stops_a_hanging_grade_promptly(client: GradingClient) -> None:
    hang = HERE / "hostile" / "infinite_loop.py"
    started = threading.Event()
    timer = None

    def on_progress(done: int, total: int, name: str) -> None:
        started.set()

    def cancel_soon() -> None:
        started.wait(60)
        time.sleep(0.5)
        client.cancel()

    timer = threading.Thread(target=cancel_soon)
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(GradingCancelled):
        client.grade(str(DEMO), hang, seed=1, on_progress=on_progress)
    timer.join()
    # cancelled well before the demo's 15 s limit would have ended it
    assert time.monotonic() - t0 < 60
    result = client.grade(str(DEMO), DEMO / "solutions" / "wrong" / "adds.py", seed=3)
    assert result["verdict"] == "failed"


def test_usage_errors(client: GradingClient, tmp_path: Path) -> None:
    with pytest.raises(GradingUsageError, match="not a challenge folder"):
        client.grade(tmp_path / "no-such-challenge", tmp_path / "x.py")
    with pytest.raises(GradingUsageError, match="no such file"):
        client.grade(str(DEMO), tmp_path / "missing.py")


def test_the_solutions_output_comes_back_as_two_streams(client: GradingClient, tmp_path: Path) -> None:
    src = (DEMO / "solutions" / "correct" / "mul.py").read_text()
    f = tmp_path / "noisy.py"
    f.write_text("import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\n" + src)
    result = client.grade(str(DEMO), f, seed=3)
    assert result["verdict"] == "passed"
    out, err = client.last_streams
    assert "to stdout" in out and "to stderr" not in out
    assert "to stderr" in err

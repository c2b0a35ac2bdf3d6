"""A passing check can report a measurement (e.g. a kernel's TFLOP/s) as its message, and the
worker times every call of the submission itself, so transfers are not counted."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from inferview.graders.engine import grade

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "challenges" / "demo-scale"

CHECKS = '''
import torch
from inferview.graders.api import Ctx, check, expect


@check("scales and reports its time")
def timed(ctx: Ctx) -> str:
    x = torch.arange(6, dtype=torch.float32)
    got = ctx.sub.call("scale", x, 2.0)
    expect(torch.equal(got, x * 2.0), "wrong result")
    stats = ctx.sub.last_call_stats()
    expect(stats["elapsed_s"] >= 0.05, f"elapsed_s = {stats['elapsed_s']}")
    return f"took {stats['elapsed_s']:.2f} s inside the worker"
'''

SLOW = '''
import time


def scale(x, factor):
    time.sleep(0.06)
    return x * factor


class Accumulator:
    def __init__(self, size):
        self.size = size

    def add(self, x):
        return x
'''


def test_a_passing_check_reports_its_measurement(tmp_path):
    folder = tmp_path / "demo-scale"
    shutil.copytree(FIXTURE, folder)
    (folder / "checks.py").write_text(CHECKS)
    sub = tmp_path / "slow.py"
    sub.write_text(SLOW)
    result = grade(str(folder), sub, seed=1)
    assert result.verdict == "passed", result.to_json()
    (check,) = result.to_json()["checks"]
    assert check["status"] == "passed"
    assert re.fullmatch(r"took \d+\.\d\d s inside the worker", check["message"]), check["message"]

"""The soak (``benchmarks/soak.py``) in small: three gradings through the real grading service
(correct, wrong, and a hostile solution whose child outlives its worker) and fifty practice
answers, measured as the full soak measures them: nothing may be left growing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SOAK = Path(__file__).resolve().parents[2] / "benchmarks" / "soak.py"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the soak measures in /proc"),
    pytest.mark.skipif(not SOAK.is_file(), reason="needs a source checkout (benchmarks/soak.py)"),
]


def _soak_module():
    spec = importlib.util.spec_from_file_location("inferview_soak", SOAK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def test_a_short_soak_leaves_no_descriptor_process_or_folder_behind() -> None:
    soak = _soak_module()
    report = soak.soak(gradings=3, answers=50)
    assert [lbl for lbl in report.per_submission] == [
        "kv-cache-size/correct", "kv-cache-size/wrong", "hostile/child_setsid"]
    assert report.verdicts.get("passed", 0) >= 1 and sum(report.verdicts.values()) == 3
    start, end = report.start, report.end
    assert start.processes >= 1  # the service at least: the count sees it
    assert (end.fds_self, end.fds_service) <= (start.fds_self, start.fds_service), report
    assert end.processes <= start.processes, report
    assert end.folders <= start.folders, report
    assert report.answer_median_ms > 0
    assert "goals" in soak.table(report)

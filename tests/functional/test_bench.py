"""``inferview bench`` at tiny sizes: the JSON contract, the table, and the peak lookup."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from inferview.reference.bench import PEAK_BF16_TFLOPS, BenchSizes, peak_tflops


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, INFERVIEW_BENCH_QUICK="1", COLUMNS="100")
    return subprocess.run([sys.executable, "-m", "inferview", "bench", *args], capture_output=True,
                          text=True, env=env, timeout=240)


@pytest.fixture(scope="module")
def bench_json() -> dict:
    """One real run of ``python -m inferview bench --json`` (the measuring takes the time)."""
    out = _run("--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_json_has_every_section(bench_json):
    r = bench_json
    assert r["device"] in ("cpu", "cuda")
    (row,) = r["attention"]
    assert row["triton_ms"] > 0 and row["sdpa_ms"] > 0 and row["triton_tflops"] > 0
    assert [d["context"] for d in r["decode"]] == [64, 256, 1024]
    assert all(d["cached_step_ms"] > 0 and d["uncached_step_ms"] > 0 for d in r["decode"])
    if r["device"] == "cpu":
        assert r["peak_tflops"] is None
        assert any("GPU figures" in n for n in r["notes"])
    spec = r["speculative"]
    if spec is not None:
        assert {"alpha", "gamma", "tokens_per_step"} <= set(spec[0])
        for s in spec:  # measured tokens per step agree with Eq. 1 of Leviathan et al.
            assert abs(s["tokens_per_step"] - s["tokens_per_step_theory"]) < 0.35


def test_table_output(bench_json, monkeypatch):
    """The table prints every section of a report (the one measured above, not a second run)."""
    from click.testing import CliRunner
    from inferview.reference import bench

    from inferview.commands.bench import command

    monkeypatch.setattr(bench, "run_bench", lambda device=None, quick=False: bench.BenchReport(**bench_json))
    out = CliRunner().invoke(command, [], env={"COLUMNS": "100"})
    assert out.exit_code == 0, out.output
    for title in ("Attention forward", "One decode step", "Device:"):
        assert title in out.output
    if bench_json["speculative"]:
        assert "Speculative decoding" in out.output


def test_peak_table_matches_most_specific_name():
    assert peak_tflops("NVIDIA H200")[0] == 989.4
    assert peak_tflops("NVIDIA H100 PCIe")[0] == 756.5
    assert peak_tflops("NVIDIA H100 80GB HBM3")[0] == 989.4
    assert peak_tflops("NVIDIA L40S")[0] == 362.1  # not the L4 entry
    assert peak_tflops("NVIDIA L4")[0] == 121.0
    assert peak_tflops("NVIDIA A100-SXM4-80GB")[0] == 312.0
    assert peak_tflops("Tesla T4")[0] is None
    assert all(source for _, _, source in PEAK_BF16_TFLOPS)


def test_sizes_are_small_on_cpu():
    cpu, gpu = BenchSizes.for_device(False), BenchSizes.for_device(True)
    assert max(s[2] for s in cpu.attention) <= 256 < max(s[2] for s in gpu.attention)
    assert max(cpu.decode_contexts) <= 512


def test_command_module_does_not_import_torch():
    code = "import sys, inferview.commands.bench; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_growth_note_states_measured_ratios_and_says_when_overhead_hides_them():
    from inferview.reference.bench import growth_note

    flat = growth_note({"context": 16, "uncached_step_ms": 0.6, "cached_step_ms": 0.5},
                       {"context": 64, "uncached_step_ms": 0.7, "cached_step_ms": 0.5})
    assert "grew x1.2" in flat and "x0.0" not in flat and "fixed per-call costs dominate" in flat
    steep = growth_note({"context": 64, "uncached_step_ms": 1.0, "cached_step_ms": 0.5},
                        {"context": 1024, "uncached_step_ms": 40.0, "cached_step_ms": 1.0})
    assert "grew x40" in steep and "cached step x2.0" in steep and "quadratic versus linear" in steep

"""grade-batch --ray against a real Ray head started here (2 CPUs): every verdict the same as
``inferview grade``'s, also when a Ray worker is killed while it grades (Ray retries the task),
and "not graded" — never a verdict — when the retries run out."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from inferview.tests.cluster import raycluster
from inferview.tests.cluster.cohort import CHALLENGE, COHORT, SEED, make_cohort, outline

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "challenges" / "demo-scale"

pytest.importorskip("ray", reason="ray is not installed: pip install 'inferview[cluster]'")


@pytest.fixture(scope="module")
def head():
    if not raycluster.ray_cli().is_file():
        pytest.skip(f"no ray command beside {sys.executable}")
    with raycluster.local_head() as running:
        yield running


def _batch(address: str, root: Path, marker: str, *args: str) -> tuple[int, dict, list[int]]:
    """Run grade-batch --ray, SIGKILL the first Ray worker seen grading; (exit, JSON, killed)."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "inferview", "grade-batch", CHALLENGE, str(root), "--ray", address,
         "--json", "--seed", str(SEED), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    killed: list[int] = []

    def killer() -> None:
        while proc.poll() is None and not killed:
            for pid in raycluster.grading_workers(marker):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.02)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    try:
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        t.join()
    assert out, err
    return proc.returncode, json.loads(out), killed


def test_a_ray_batch_matches_grade_with_a_worker_killed_mid_batch(head, tmp_path: Path,
                                                                   grade_results) -> None:
    address, marker = head
    cohort = {name: COHORT[name] for name in ("alice", "bob")}  # a pass and a fail: 2 CPUs
    code, data, killed = _batch(address, make_cohort(tmp_path / "cohort", cohort), marker)
    assert len(killed) == 1  # one Ray worker died while grading, and its task ran again
    assert code == 0
    assert data["runner"] == f"ray:{address}"
    rows = {r["candidate"]: r for r in data["rows"]}
    assert {n: outline(rows[n]["result"]) for n in rows} == {n: grade_results[n] for n in cohort}
    for row in rows.values():
        assert (row["host"], row["device"], row["graded"]) == (socket.gethostname(), "cpu", True)


def test_a_task_that_runs_out_of_retries_is_not_graded(head, tmp_path: Path) -> None:
    address, marker = head
    root = make_cohort(tmp_path / "cohort", {"alice": COHORT["alice"]})
    code, data, killed = _batch(address, root, marker, "--retries", "0")
    assert len(killed) == 1 and code == 1
    [row] = data["rows"]
    assert (row["candidate"], row["graded"], row["verdict"], row["result"]) == (
        "alice", False, None, None)
    assert row["reason"] == "its Ray worker died (after 0 retries)"


def test_a_gpu_the_cluster_lacks_is_a_usage_error(head, tmp_path: Path) -> None:
    address, _ = head
    (tmp_path / "cohort").mkdir()
    (tmp_path / "cohort" / "alice.py").write_bytes((DEMO / "solutions/correct/mul.py").read_bytes())
    proc = subprocess.run(
        [sys.executable, "-m", "inferview", "grade-batch", str(DEMO), str(tmp_path / "cohort"),
         "--ray", address, "--device", "cuda"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.strip().splitlines()[-1] == "inferview: --device cuda: no CUDA GPU is available"

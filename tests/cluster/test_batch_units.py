"""grade-batch without grading: finding submissions, the report's rows and orders, the local
pool's size, where a challenge runs, and the command's usage errors."""

from __future__ import annotations

import csv
import io
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from inferview.batch.discover import DiscoveryError, Submission, discover
from inferview.batch.local import plan_slots
from inferview.batch.table import CSV_COLUMNS, BatchReport, BatchRow, sort_rows
from inferview.batch.task import ChallengeRef, TaskOutcome, choose_device
from inferview.cli import main as cli_main
from inferview.grading import GradingUsageError


@pytest.fixture
def cohort(tmp_path: Path) -> Path:
    """An empty cohort folder (``tmp_path`` also holds the test's data folder)."""
    (tmp_path / "cohort").mkdir()
    return tmp_path / "cohort"


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        cli_main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


# -- discovery ---------------------------------------------------------------------------------

def test_both_layouts_are_found_sorted_and_noise_is_ignored(cohort: Path) -> None:
    (cohort / "Bob.py").write_text("b = 1\n")
    (cohort / "alice").mkdir()
    (cohort / "alice" / "solution.py").write_text("a = 1\n")
    (cohort / "alice" / "notes.txt").write_text("not a submission")
    (cohort / "README.md").write_text("cohort of 2025")
    (cohort / ".hidden.py").write_text("")
    (cohort / "__pycache__").mkdir()
    subs = discover(cohort)
    assert [(s.candidate, s.path.name, s.source, s.problem) for s in subs] == [
        ("alice", "solution.py", b"a = 1\n", None), ("Bob", "Bob.py", b"b = 1\n", None)]
    assert subs[0].filename == "solution.py"


@pytest.mark.parametrize("make, message", [
    (lambda p: None, "no submissions in"),
    (lambda p: (p / "notes.txt").write_text("x"), "no submissions in"),
])
def test_a_folder_without_submissions_is_a_usage_error(cohort: Path, make, message) -> None:
    make(cohort)
    with pytest.raises(DiscoveryError, match=message):
        discover(cohort)
    with pytest.raises(DiscoveryError, match="no such folder"):
        discover(cohort / "missing")
    (cohort / "f.py").write_text("")
    with pytest.raises(DiscoveryError, match="not a folder"):
        discover(cohort / "f.py")


def test_a_candidate_folder_needs_exactly_one_py_file(cohort: Path) -> None:
    (cohort / "empty").mkdir()
    (cohort / "two").mkdir()
    for name in ("a.py", "b.py"):
        (cohort / "two" / name).write_text("")
    (cohort / "ok.py").write_text("")
    problems = {s.candidate: s.problem for s in discover(cohort)}
    assert problems == {"empty": "no .py file in empty/",
                        "ok": None,
                        "two": "2 .py files in two/ (a.py, b.py): keep exactly one"}


def test_the_same_candidate_twice_and_an_unreadable_file_are_not_graded(cohort: Path) -> None:
    (cohort / "dan.py").write_text("")
    (cohort / "dan").mkdir()
    (cohort / "dan" / "s.py").write_text("")
    (cohort / "eve.py").mkdir()  # a folder named like a file: a candidate "eve.py" with no file
    locked = cohort / "fay.py"
    locked.write_text("secret = 1\n")
    locked.chmod(0)
    try:
        subs = {s.candidate: s for s in discover(cohort)}
    finally:
        locked.chmod(0o644)
    assert subs["dan"].problem == "two submissions for dan: dan/ and dan.py"
    assert subs["eve.py"].problem == "no .py file in eve.py/"
    if os.geteuid() != 0:  # root reads any file
        assert subs["fay"].problem == "cannot read fay.py: Permission denied"
        assert subs["fay"].source == b""


# -- the report --------------------------------------------------------------------------------

def _row(name: str, verdict: str | None, passed: int = 0, total: int = 0,
         t: float = 1.0) -> BatchRow:
    sub = Submission(name, Path(f"{name}.py"), b"")
    if verdict is None:
        return BatchRow.not_graded(sub, "its Ray worker died (after 2 retries)")
    checks = [{"status": "passed" if i < passed else "failed"} for i in range(total)]
    result = {"verdict": verdict, "duration_s": t, "seed": 5, "checks": checks}
    return BatchRow.from_outcome(sub, TaskOutcome(result, "node-1", "cpu"))


ROWS = [_row("dora", "failed", 3, 8, 2.0), _row("Al", "passed", 8, 8, 4.0),
        _row("cy", None), _row("bea", "timeout", 1, 8, 60.0), _row("ed", "passed", 8, 8, 1.5)]


@pytest.mark.parametrize("key, order", [
    ("candidate", ["Al", "bea", "cy", "dora", "ed"]),
    ("verdict", ["Al", "ed", "dora", "bea", "cy"]),
    ("time", ["ed", "dora", "Al", "bea", "cy"]),
    ("checks", ["Al", "ed", "dora", "bea", "cy"]),
])
def test_rows_sort_with_not_graded_last(key: str, order: list[str]) -> None:
    assert [r.candidate for r in sort_rows(ROWS, key)] == order


def test_a_row_not_graded_has_no_verdict_anywhere() -> None:
    report = BatchReport("kv-cache-size", "local", ROWS)
    assert not report.all_graded
    assert report.counts() == {"failed": 1, "passed": 2, "not graded": 1, "timeout": 1}
    rows = {r["candidate"]: r for r in report.to_json()["rows"]}
    assert rows["cy"]["graded"] is False and rows["cy"]["verdict"] is None
    assert rows["cy"]["result"] is None and "died" in rows["cy"]["reason"]
    assert rows["Al"]["verdict"] == "passed" and rows["Al"]["checks_passed"] == 8
    table = list(csv.DictReader(io.StringIO(report.to_csv("verdict"))))
    assert tuple(table[0]) == CSV_COLUMNS
    assert [r["verdict"] for r in table] == ["passed", "passed", "failed", "timeout", "not graded"]
    assert table[-1]["checks_passed"] == "" and table[-1]["seed"] == ""
    assert table[2] | {"file": ""} == {"candidate": "dora", "file": "", "verdict": "failed",
                                       "checks_passed": "3", "checks_total": "8",
                                       "duration_s": "2.000", "host": "node-1", "device": "cpu",
                                       "seed": "5", "reason": ""}


# -- where gradings run ------------------------------------------------------------------------

def test_a_cuda_challenge_gets_one_slot_per_gpu_pinned_to_it(monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,3")
    slots = plan_slots(2048, "cuda", 10)
    assert [(s.label, s.env) for s in slots] == [("cuda:0", {"CUDA_VISIBLE_DEVICES": "0"}),
                                                 ("cuda:3", {"CUDA_VISIBLE_DEVICES": "3"})]
    assert len(plan_slots(2048, "cuda", 1)) == 1
    assert len(plan_slots(2048, "cuda", 10, jobs=5)) == 2  # never two gradings on one GPU


def test_a_cpu_pool_is_capped_by_cores_submissions_and_jobs() -> None:
    cores = len(os.sched_getaffinity(0))
    assert 1 <= len(plan_slots(1024, "cpu", 100)) <= cores
    assert len(plan_slots(1024, "cpu", 1)) == 1
    assert len(plan_slots(1024, "cpu", 100, jobs=1)) == 1
    assert len(plan_slots(10**9, "cpu", 100)) == 1  # no memory for two: still one


@pytest.mark.parametrize("spec_device, asked, gpus, where", [
    ("any", "auto", 0, "cpu"), ("any", "auto", 2, "cuda"), ("any", "cpu", 2, "cpu"),
    ("cpu", "auto", 2, "cpu"), ("cuda", "auto", 1, "cuda"), ("any", "cuda", 1, "cuda"),
    ("cuda", "auto", 0, "needs a CUDA GPU"), ("any", "cuda", 0, "no CUDA GPU"),
    ("cpu", "cuda", 4, "CPU only"),
])
def test_where_a_challenge_runs(spec_device, asked, gpus, where) -> None:
    spec = SimpleNamespace(id="x", device=spec_device)
    if where in ("cpu", "cuda"):
        assert choose_device(spec, asked, gpus) == where
    else:
        with pytest.raises(GradingUsageError, match=where):
            choose_device(spec, asked, gpus)


def test_a_user_challenge_is_shipped_without_its_solutions(tmp_path: Path) -> None:
    demo = Path(__file__).resolve().parents[1] / "fixtures" / "challenges" / "demo-scale"
    ref = ChallengeRef.shipped(demo)
    names = {rel for rel, _ in ref.files}
    assert {"challenge.yaml", "checks.py", "starter.py"} <= names
    assert not any(n.startswith("solutions/") for n in names)
    folder = Path(ref.unpack(tmp_path))
    assert (folder / "checks.py").read_bytes() == (demo / "checks.py").read_bytes()
    assert ChallengeRef("kv-cache-size").unpack(tmp_path) == "kv-cache-size"


# -- usage errors: one line, exit 2 ------------------------------------------------------------

def test_usage_errors_are_one_line_and_exit_2(capsys, cohort: Path) -> None:
    code, out, err = run_cli(capsys, "grade-batch", "kv-cache-size", str(cohort))
    assert (code, out) == (2, "") and err.count("\n") == 1 and "no submissions in" in err
    code, _, err = run_cli(capsys, "grade-batch", "no-such-challenge", str(cohort))
    assert code == 2 and err.startswith("inferview: ") and "Traceback" not in err
    (cohort / "a.py").write_text("")
    code, _, err = run_cli(capsys, "grade-batch", "kv-cache-size", str(cohort), "--json",
                           "--csv", "-")
    assert code == 2 and "--csv" in err


def test_ray_missing_says_how_to_install_it(capsys, cohort: Path, monkeypatch) -> None:
    (cohort / "a.py").write_text("")
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    code, out, err = run_cli(capsys, "grade-batch", "kv-cache-size", str(cohort), "--ray", "auto")
    assert (code, out) == (2, "")
    assert err == "inferview: grade-batch --ray needs Ray: pip install 'inferview[cluster]'\n"


def test_an_unreachable_cluster_is_one_line_at_once(capsys, cohort: Path) -> None:
    pytest.importorskip("ray", reason="ray is not installed (pip install 'inferview[cluster]')")
    (cohort / "a.py").write_text("")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, out, err = run_cli(capsys, "grade-batch", "kv-cache-size", str(cohort),
                             "--ray", f"127.0.0.1:{port}")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith(f"inferview: cannot reach the Ray cluster at 127.0.0.1:{port}: ")
    code, _, err = run_cli(capsys, "grade-batch", "kv-cache-size", str(cohort), "--ray", "nohost")
    assert code == 2 and "expected auto or HOST:PORT" in err


def test_the_command_and_the_batch_core_import_neither_torch_nor_ray() -> None:
    code = ("import sys, inferview.commands.grade_batch, inferview.batch.local, "
            "inferview.batch.cluster, inferview.graders.pool\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'ray')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

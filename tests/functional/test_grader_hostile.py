"""Hostile and broken submissions (CHALLENGES.md's list) get the right verdict, a clear message,
within the time limit, and leave no process behind. Golden files pin the exact results of the
deterministic scenarios; regenerate them with

    INFERVIEW_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/test_grader_hostile.py -q
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from inferview.graders.engine import GradeResult, grade

HERE = Path(__file__).resolve().parents[1]  # tests/
DEMO = HERE / "fixtures" / "challenges" / "demo-scale"
HOSTILE = HERE / "hostile"
GOLDEN = HERE / "golden"
SEED = 20240
LIMIT_S = 15  # the demo challenge's time_limit_s
HANG_LIMIT_S = 4  # the time limit of the demo's copy that the hanging submissions run against
HANGS = ("infinite_loop", "native_hang")
BOOT_SLACK_S = 60  # worker start-up (a torch import) on a loaded CI machine

# file stem -> (verdict, text that must appear in a non-passed check's message, golden?)
CASES: dict[str, tuple[str, str, bool]] = {
    "syntax_error": ("error", "syntax error at line 5", True),
    "missing_module": ("error", "No module named 'flash_attn_not_installed_anywhere'", True),
    "misspelled": ("error", "scale not defined; did you mean Scale?", True),
    "wrong_signature": ("error", "wrong signature: scale(x, alpha); expected scale(x, factor)", True),
    "wrong_shape": ("failed", "expected shape", True),
    "wrong_dtype": ("failed", "expected dtype torch.float32, got torch.float64", True),
    "wrong_device": ("failed", "expected device cpu, got meta", True),
    "nan_output": ("failed", "NaN", True),
    "inf_output": ("failed", "NaN", True),
    "mutates": ("failed", "mutated its input argument 1", True),
    "infinite_loop": ("timeout", "time limit", False),
    "native_hang": ("timeout", "time limit", False),
    "memory_bomb": ("crashed", "resident memory", False),
    "segfault": ("crashed", "SIGSEGV", False),
    "print_flood": ("passed", "", False),
    "exit_at_import": ("error", "sys.exit", True),
    "os_exit_at_import": ("crashed", "exited with status 0", False),
    "exit_in_call": ("error", "SystemExit", True),
    "os_exit_in_call": ("crashed", "exited with status 0", False),
    "child_same_group": ("passed", "", False),
    "child_setsid": ("passed", "", False),
    "imports_grader": ("forbidden", "imports inferview.reference", True),
    "imports_grader_dynamic": ("forbidden", "imports inferview", False),
    "monkeypatch": ("failed", "elements differ", True),
    "caching": ("failed", "elements differ", True),
    "returns_input": ("failed", "elements differ", True),
    "returns_zeros": ("failed", "elements differ", True),
    "uses_matmul": ("forbidden", "uses the @ operator", True),
    "uses_matmul_alias": ("forbidden", "uses torch.matmul (as mm)", True),
    "uses_matmul_getattr": ("forbidden", "looks up 'matmul' with getattr", True),
    "uses_matmul_runtime": ("forbidden", "uses torch.matmul", False),
}

_RESULTS: dict[str, tuple[GradeResult, float]] = {}


@pytest.fixture(scope="module", autouse=True)
def spawned_workers():
    """This module proves the isolation of spawned workers (what ``inferview grade`` starts)."""
    from inferview.graders.pool import POOL

    fork, POOL.fork = POOL.fork, False
    POOL.shutdown()  # no warm worker forked before this module
    yield
    POOL.fork = fork


_HANG_DIR = tempfile.TemporaryDirectory(prefix="demo-hang-")  # removed when the module goes


def _short_limit_demo() -> Path:
    """The demo challenge with a shorter time limit: a hang is a hang after 4 s as after 15."""
    folder = Path(_HANG_DIR.name) / "demo-scale"
    if folder.is_dir():
        return folder
    shutil.copytree(DEMO, folder)
    spec = folder / "challenge.yaml"
    spec.write_text(spec.read_text().replace(f"time_limit_s: {LIMIT_S}\n", f"time_limit_s: {HANG_LIMIT_S}\n"))
    assert f"time_limit_s: {HANG_LIMIT_S}\n" in spec.read_text()
    return folder


def run_case(name: str, path: Path | None = None) -> tuple[GradeResult, float]:
    if name not in _RESULTS:
        t0 = time.monotonic()
        challenge = _short_limit_demo() if name in HANGS else DEMO
        result = grade(challenge, path or HOSTILE / f"{name}.py", device="cpu", seed=SEED)
        _RESULTS[name] = (result, time.monotonic() - t0)
    return _RESULTS[name]


def masked(result: GradeResult) -> dict:
    data = result.to_json()
    data["duration_s"] = 0
    return data


def _sleepers() -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if cmd in ("sleep 300", "sleep 301", "sleep 302"):
            found.append(f"{pid}: {cmd}")
    return found


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_submission_gets_its_verdict(name: str) -> None:
    verdict, text, _ = CASES[name]
    result, elapsed = run_case(name)
    messages = "\n".join(c.message for c in result.checks)
    assert result.verdict == verdict, f"{name}: {result.verdict}\n{messages}"
    if text:
        bad = [c for c in result.checks if c.status != "passed"]
        assert bad, name
        assert text in messages, messages
        assert all(c.message for c in bad if c.status in ("failed", "error"))
    # a hostile submission never holds the run much past its limit (plus start-up and one restart)
    assert elapsed < 2 * LIMIT_S + BOOT_SLACK_S


def test_hostile_files_say_what_they_do() -> None:
    files = sorted(p.stem for p in HOSTILE.glob("*.py"))
    assert sorted(CASES) == files
    for p in HOSTILE.glob("*.py"):
        assert p.read_text().startswith('"""'), f"{p.name} needs a docstring naming its trick"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("name", ["child_same_group", "child_setsid"])
def test_children_do_not_survive(name: str) -> None:
    run_case(name)
    deadline = time.monotonic() + 5
    while _sleepers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sleepers() == []


def test_timeout_is_enforced_promptly() -> None:
    result, _ = run_case("native_hang")
    # the limit counts from the worker being ready; the kill lands within a second of it
    assert HANG_LIMIT_S <= result.duration_s < HANG_LIMIT_S + BOOT_SLACK_S
    timed = [c for c in result.checks if "time limit" in c.message]
    assert timed and timed[0].status == "error"
    assert all(c.status == "skipped" for c in result.checks[result.checks.index(timed[0]) + 1:])


def test_crash_names_the_call_and_the_input() -> None:
    result, _ = run_case("segfault")
    crashed = next(c for c in result.checks if "SIGSEGV" in c.message)
    assert "scale(Tensor(shape=" in crashed.message
    assert crashed.counterexample and "input: shape=" in crashed.counterexample


def test_print_flood_is_truncated_with_a_note() -> None:
    result, _ = run_case("print_flood")
    assert len(result.stdout) < 100_000
    assert "omitted" in result.stdout or "dropped" in result.stdout


def test_caching_is_caught_by_the_two_call_check() -> None:
    result, _ = run_case("caching")
    failing = {c.name for c in result.checks if c.status == "failed"}
    assert "scale depends on its input, not on earlier calls" in failing


def test_reading_package_files_is_forbidden(tmp_path: Path) -> None:
    target = DEMO / "solutions" / "correct" / "mul.py"
    source = (HOSTILE / "reads_files.py.tmpl").read_text().replace("{path}", str(target))
    sub = tmp_path / "reads_files.py"
    sub.write_text(source)
    result = grade(DEMO, sub, device="cpu", seed=SEED)
    assert result.verdict == "forbidden"
    assert "reads" in result.checks[0].message and "mul.py" in result.checks[0].message


def test_monkeypatching_cannot_turn_a_wrong_answer_into_a_pass() -> None:
    result, _ = run_case("monkeypatch")
    assert result.verdict == "failed"
    assert result.checks[0].status == "failed"


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c[2]))
def test_golden_results(name: str) -> None:
    result, _ = run_case(name)
    assert result.verdict == CASES[name][0], "never record a golden file with the wrong verdict"
    path = GOLDEN / f"{name}.json"
    data = masked(result)
    if os.environ.get("INFERVIEW_REGEN_GOLDEN") == "1":
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    assert path.exists(), f"missing {path.name}; regenerate with INFERVIEW_REGEN_GOLDEN=1"
    want = json.loads(path.read_text())
    assert data == want, (
        f"{name}: the result drifted from tests/golden/{name}.json. If the change is intended, "
        "regenerate with INFERVIEW_REGEN_GOLDEN=1 .venv/bin/python -m pytest "
        "tests/test_grader_hostile.py -q"
    )


def test_worker_holds_no_inferview_modules(tmp_path: Path) -> None:
    """The worker never imports inferview: a submission that looks finds nothing to patch."""
    sub = tmp_path / "looks_around.py"
    sub.write_text(
        (HOSTILE / "returns_input.py").read_text()
        .replace('"""Returns its input unchanged."""', '"""Answers right only when alone."""')
        .replace("    return x\n",
                 "    import sys\n"
                 "    leaked = [m for m in sys.modules if m.split('.')[0] in "
                 "('inferview', 'graders', 'reference', 'challenges')]\n"
                 "    return x * factor if not leaked else x\n", 1))
    result = grade(DEMO, sub, device="cpu", seed=SEED)
    assert result.verdict == "passed", [c.message for c in result.checks]

"""``inferview grade``, ``start`` and ``watch`` from the command line: exit codes, JSON, replay."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inferview.cli import main as cli_main

HERE = Path(__file__).resolve().parents[1]  # tests/
DEMO = HERE / "fixtures" / "challenges" / "demo-scale"


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = 0
    try:
        cli_main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_grade_json_passed_exit_0(capsys) -> None:
    code, out, _ = run_cli(capsys, "grade", str(DEMO), str(DEMO / "solutions/correct/mul.py"),
                           "--json", "--seed", "5")
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "passed"
    from inferview.store import Store

    store = Store.open()
    try:
        saved = store.submissions("demo-scale")
    finally:
        store.close()
    assert len(saved) == 1  # the result is recorded in the progress store
    assert set(data) == {"schema", "challenge", "verdict", "backend", "seed", "duration_s", "checks"}
    assert data["backend"] == "cpu" and data["seed"] == 5 and data["challenge"] == "demo-scale"
    for c in data["checks"]:
        assert set(c) == {"name", "status", "message", "counterexample", "hint"}


def test_grade_failed_exit_1_and_seed_replays_exactly(capsys) -> None:
    wrong = str(DEMO / "solutions/wrong/adds.py")
    code, out, _ = run_cli(capsys, "grade", str(DEMO), wrong, "--json", "--seed", "77",
                           "--no-record")
    code2, out2, _ = run_cli(capsys, "grade", str(DEMO), wrong, "--json", "--seed", "77",
                             "--no-record")
    a, b = json.loads(out), json.loads(out2)
    assert code == code2 == 1 and a["verdict"] == "failed"
    a.pop("duration_s")
    b.pop("duration_s")
    assert a == b
    assert "replay: --seed 77" in a["checks"][0]["counterexample"]


def test_grade_human_output_has_the_same_content(capsys) -> None:
    code, out, _ = run_cli(capsys, "grade", str(DEMO), str(DEMO / "solutions/wrong/adds.py"),
                           "--seed", "77", "--no-record")
    assert code == 1
    for text in ("FAILED", "scale multiplies every element", "smallest failing input",
                 "hint:", "seed 77", "backend cpu", "--seed 77"):
        assert text in out, out


def test_grade_usage_errors_exit_2(capsys, tmp_path: Path) -> None:
    code, out, err = run_cli(capsys, "grade", "no-such-challenge", str(tmp_path / "x.py"))
    assert code == 2 and "unknown challenge" in err and out == ""
    code, out, err = run_cli(capsys, "grade", str(DEMO), str(tmp_path / "missing.py"))
    assert code == 2 and "no such file" in err and len(err.strip().splitlines()) == 1


def test_start_copies_the_starter_and_never_overwrites(capsys, tmp_path: Path) -> None:
    code, out, _ = run_cli(capsys, "start", str(DEMO), "--dir", str(tmp_path))
    target = tmp_path / "demo-scale" / "solution.py"
    assert code == 0 and out.strip() == str(target)
    assert target.read_text() == (DEMO / "starter.py").read_text()
    target.write_text("# mine\n")
    code, out, err = run_cli(capsys, "start", str(DEMO), "--dir", str(tmp_path))
    assert code == 0 and "already exists" in err and target.read_text() == "# mine\n"


def test_start_defaults_to_the_workspace(capsys, inferview_home: Path) -> None:
    code, out, _ = run_cli(capsys, "start", str(DEMO))
    assert code == 0
    assert Path(out.strip()) == inferview_home / "workspace" / "demo-scale" / "solution.py"


def test_start_unknown_challenge_exit_2(capsys) -> None:
    code, _, err = run_cli(capsys, "start", "no-such-challenge")
    assert code == 2 and "unknown challenge" in err


def test_watch_missing_file_exit_2(capsys, tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "watch", str(DEMO), str(tmp_path / "nope.py"))
    assert code == 2 and "no such file" in err


def test_watch_grades_then_exits_cleanly_on_interrupt(tmp_path: Path) -> None:
    sol = tmp_path / "solution.py"
    sol.write_text((DEMO / "starter.py").read_text())
    log = tmp_path / "watch.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "inferview", "watch", str(DEMO), str(sol), "--seed", "1",
             "--debounce-ms", "50"],
            stdout=out, stderr=subprocess.STDOUT, text=True)

    def wait_for(text: str) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and text not in log.read_text():
            time.sleep(0.2)

    try:
        wait_for("watching")
        assert "unmodified starter" in log.read_text()  # nothing graded before the first save
        sol.write_text((DEMO / "solutions/correct/mul.py").read_text())
        wait_for("PASSED")
        wait_for("watching")
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    seen = log.read_text()
    assert "PASSED" in seen and "watching" in seen, seen
    assert "Traceback" not in seen


def _has_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


@pytest.mark.cuda
@pytest.mark.skipif(not _has_cuda(), reason="needs a CUDA GPU")
def test_grade_on_cuda_names_the_backend(capsys) -> None:
    code, out, _ = run_cli(capsys, "grade", str(DEMO), str(DEMO / "solutions/correct/mul.py"),
                           "--json", "--seed", "5", "--no-record", "--device", "cuda")
    data = json.loads(out)
    assert code == 0 and data["backend"] == "cuda" and data["verdict"] == "passed"


@pytest.mark.skipif(_has_cuda(), reason="checks the message shown without a GPU")
def test_grade_device_cuda_without_gpu_is_a_usage_error(capsys) -> None:
    code, out, err = run_cli(capsys, "grade", str(DEMO), str(DEMO / "solutions/correct/mul.py"),
                             "--device", "cuda")
    assert code == 2 and "no CUDA GPU" in err and out == ""


def test_grade_the_unmodified_starter_says_so_without_grading(capsys, tmp_path: Path) -> None:
    copy = tmp_path / "solution.py"
    copy.write_bytes((DEMO / "starter.py").read_bytes().replace(b"\n", b"\r\n"))
    t0 = time.monotonic()
    code, out, err = run_cli(capsys, "grade", str(DEMO), str(copy))
    assert code == 1 and out == ""
    assert "unmodified starter of demo-scale" in err and len(err.strip().splitlines()) == 1
    assert time.monotonic() - t0 < 5  # answered before any grading


def test_grade_accepts_a_byte_order_mark_and_names_a_non_utf8_byte(capsys, tmp_path: Path) -> None:
    source = (DEMO / "solutions/correct/mul.py").read_bytes()
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + source)
    code, out, _ = run_cli(capsys, "grade", str(DEMO), str(bom), "--json", "--seed", "1",
                           "--no-record")
    assert code == 0 and json.loads(out)["verdict"] == "passed"
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# ok\n# caf\xe9\n" + source)
    code, out, _ = run_cli(capsys, "grade", str(DEMO), str(latin), "--json", "--no-record")
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "error"
    assert "not UTF-8 text (byte 0xe9 on line 2)" in data["checks"][0]["message"]
    nul = tmp_path / "nul.py"
    nul.write_bytes(source + b"\n\x00\n")
    code, out, _ = run_cli(capsys, "grade", str(DEMO), str(nul), "--json", "--no-record")
    message = json.loads(out)["checks"][0]["message"]
    line = source.count(b"\n") + 2
    assert code == 1 and message == f"nul.py is not a text file (a NUL byte on line {line})"


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs mkfifo")
def test_grade_a_fifo_is_named_as_not_a_file_without_blocking(capsys, tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    code, out, err = run_cli(capsys, "grade", str(DEMO), str(fifo))
    assert code == 2 and out == "" and err.strip() == f"inferview: not a regular file: {fifo}"


def test_start_answers_without_importing_torch(tmp_path: Path) -> None:
    code = ("import sys\nfrom inferview.cli import main\ntry:\n"
            f"    main(['start', {str(DEMO)!r}, '--dir', {str(tmp_path)!r}])\n"
            "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
            "assert 'torch' not in sys.modules, 'start imported torch'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "demo-scale" / "solution.py").is_file()


def test_grade_usage_errors_answer_without_importing_torch(tmp_path: Path) -> None:
    code = ("import sys\nfrom inferview.cli import main\ncodes = []\n"
            f"for args in (['grade', 'kv-cach', 'x.py'], ['grade', {str(DEMO)!r}, {str(tmp_path)!r} + '/none.py']):\n"
            "    try:\n        main(args)\n    except SystemExit as exc:\n        codes.append(exc.code)\n"
            "assert codes == [2, 2], codes\nassert 'torch' not in sys.modules, 'imported torch'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "did you mean 'kv-cache'?" in proc.stderr and "no such file" in proc.stderr


def test_the_shrink_cap_also_covers_checks_that_run_their_own_hypothesis_test(capsys, tmp_path: Path) -> None:
    """A rule-based state machine inside a plain check shrinks under the engine's cap too."""
    import shutil

    folder = tmp_path / "demo-scale"
    shutil.copytree(DEMO, folder)
    with open(folder / "checks.py", "a", encoding="utf-8") as f:
        f.write(
            "\n\n@check('shrinking is capped inside a plain check')\n"
            "def shrink_cap(ctx: Ctx) -> str:\n"
            "    from hypothesis.internal.conjecture import engine\n"
            "    return f'cap {engine.MAX_SHRINKING_SECONDS:g} s'\n")
    code, out, _ = run_cli(capsys, "grade", str(folder), str(DEMO / "solutions/correct/mul.py"),
                           "--json", "--seed", "3", "--no-record")
    data = json.loads(out)
    assert code == 0, data
    (message,) = [c["message"] for c in data["checks"] if c["name"] == "shrinking is capped inside a plain check"]
    assert 1.0 <= float(message.split()[1]) <= 8.0, message


def test_fail_fast_stops_at_the_first_failing_check(capsys) -> None:
    wrong = str(DEMO / "solutions/wrong/adds.py")
    code, out, _ = run_cli(capsys, "grade", str(DEMO), wrong, "--json", "--seed", "77",
                           "--no-record", "-x")
    full_code, full_out, _ = run_cli(capsys, "grade", str(DEMO), wrong, "--json", "--seed", "77",
                                     "--no-record")
    fast, full = json.loads(out), json.loads(full_out)
    assert code == full_code == 1 and fast["verdict"] == full["verdict"] == "failed"
    statuses = [c["status"] for c in fast["checks"]]
    first = statuses.index("failed")
    assert fast["checks"][first] == full["checks"][first]  # the same check, input and hint
    assert all(s == "skipped" for s in statuses[first + 1:]) and statuses[first + 1:]
    assert all("--fail-fast" in c["message"] for c in fast["checks"][first + 1:])
    assert [c["status"] for c in full["checks"][first + 1:]] != statuses[first + 1:]

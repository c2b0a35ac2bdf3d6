"""The meta-test: every challenge's correct solutions pass and every targeted wrong solution
gets the verdict its ``solutions/expected.yaml`` names, graded exactly the way ``inferview grade``
grades (the CLI in-process, ``--json``, a fixed seed per file). Also: each challenge has at least
two correct and five wrong solutions, and its starter gets ``error`` with its own
NotImplementedError message rather than a crash.
"""

from __future__ import annotations

import ast
import json
import zlib
from pathlib import Path

import pytest
import yaml

from inferview.cli import main as cli_main
from inferview.paths import builtin_challenges_dir

ROOT = builtin_challenges_dir()
CHALLENGES = sorted(p.parent for p in ROOT.glob("*/challenge.yaml"))


def _seed(path: Path) -> int:
    return zlib.crc32(str(path.relative_to(ROOT)).encode()) % 1_000_000


def _expected(folder: Path) -> dict:
    path = folder / "solutions" / "expected.yaml"
    if not path.is_file():
        return {}
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def _cases(kind: str) -> list:
    out = []
    for ch in CHALLENGES:
        for f in sorted((ch / "solutions" / kind).glob("*.py")):
            out.append(pytest.param(ch, f, id=f"{ch.name}/{kind}/{f.stem}"))
    return out


@pytest.fixture(scope="module", autouse=True)
def _next_worker_starts_while_this_one_grades():
    """Whenever a grading takes a worker, start the next one at once, as the app's grading
    service keeps one warm: its torch import then runs on another core while this grading runs,
    instead of before the next. It also runs every verdict below through pre-started workers, and
    (once the fork server has booted) through forked ones."""
    from inferview.graders.pool import POOL

    fork = POOL.fork
    POOL.refill = POOL.fork = True
    try:
        yield
    finally:
        POOL.refill, POOL.fork = False, fork
        POOL.shutdown()


def grade_like_cli(capsys: pytest.CaptureFixture, challenge: Path, file: Path,
                   *extra: str) -> tuple[int, dict]:
    """Run ``inferview grade ID FILE --json --seed N`` in-process; returns (exit code, result)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        cli_main(["grade", challenge.name, str(file), "--json", "--seed", str(_seed(file)),
                  "--no-record", "--device", "auto", *extra])
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1, f"--json must print exactly one line on stdout, got:\n{out}"
    return int(exc.value.code or 0), json.loads(lines[0])


def _grade_only(challenge: Path, file: Path, check: str):
    """The engine on ``file`` with only the check named ``check`` run (the meta-test's seed)."""
    from inferview.graders import engine

    names = {info.name for info, _ in engine.load_checks(engine.as_challenge(challenge))}
    assert check in names, f"expected.yaml names a check {check!r} that {challenge.name} lacks"
    return engine.grade(challenge, file, device="auto", seed=_seed(file), only={check})


def _summary(result: dict) -> str:
    rows = [f"verdict {result['verdict']} (seed {result['seed']})"]
    for c in result["checks"]:
        rows.append(f"  [{c['status']}] {c['name']}: {c['message'][:600]}")
        if c.get("counterexample"):
            rows.append(f"      counterexample: {c['counterexample'][:400]}")
    return "\n".join(rows)


@pytest.mark.parametrize("challenge, file", _cases("correct"))
def test_correct_solution_passes(capsys, challenge: Path, file: Path) -> None:
    code, result = grade_like_cli(capsys, challenge, file)
    assert result["verdict"] == "passed", _summary(result)
    assert code == 0
    for c in result["checks"]:
        if c["status"] == "skipped":
            assert "CUDA" in c["message"], f"{c['name']} skipped for another reason: {c['message']}"


@pytest.mark.parametrize("challenge, file", _cases("wrong"))
def test_wrong_solution_gets_its_verdict(capsys, challenge: Path, file: Path) -> None:
    spec = _expected(challenge).get(file.name) or {}
    want = spec.get("verdict", "failed")
    # First with --fail-fast, as fast as a run gets: when it stops at the check expected to catch
    # the mistake, with the expected verdict, that is proof enough.
    code, result = grade_like_cli(capsys, challenge, file, "--fail-fast")
    first = next((c for c in result["checks"] if c["status"] in ("failed", "error")), None)
    if (result["verdict"] == want and code == 1 and first is not None
            and spec.get("check") in (None, first["name"])):
        return
    if result["verdict"] == want == "failed" and code == 1 and spec.get("check"):
        # An earlier check caught it first (a right verdict): the expected check must catch it
        # too, run alone with the same seed.
        alone = _grade_only(challenge, file, spec["check"])
        [named] = [c for c in alone.checks if c.name == spec["check"]]
        assert named.status in ("failed", "error"), (
            f"expected the check {spec['check']!r} to catch it, alone: {named.status} "
            f"{named.message[:600]}\nthe first failing check was {first and first['name']!r}")
        return
    code, result = grade_like_cli(capsys, challenge, file)
    assert result["verdict"] == want, _summary(result)
    assert code == 1
    bad = [c for c in result["checks"] if c["status"] in ("failed", "error")]
    # the first failing check is the root cause: only it gives a hint, later ones say they may follow
    assert all(c["hint"] is None for c in bad[1:]), _summary(result)
    assert all("may follow from the first failing check" in c["message"] for c in bad[1:]
               if c["message"]), _summary(result)
    if spec.get("check"):
        failing = {c["name"] for c in result["checks"] if c["status"] in ("failed", "error")}
        assert spec["check"] in failing, (
            f"expected the check {spec['check']!r} to catch it\n" + _summary(result))


@pytest.mark.parametrize("challenge", [pytest.param(c, id=c.name) for c in CHALLENGES])
def test_challenge_has_enough_solutions(challenge: Path) -> None:
    correct = list((challenge / "solutions" / "correct").glob("*.py"))
    wrong = list((challenge / "solutions" / "wrong").glob("*.py"))
    assert len(correct) >= 2, f"{challenge.name}: needs at least 2 correct solutions"
    assert len(wrong) >= 5, f"{challenge.name}: needs at least 5 wrong solutions"
    listed = set(_expected(challenge))
    unknown = listed - {p.name for p in wrong}
    assert not unknown, f"{challenge.name}: expected.yaml names missing files {sorted(unknown)}"
    for p in wrong:
        doc = ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))
        assert doc, f"{p}: a wrong solution needs a docstring naming its one mistake"


def _starter_messages(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
                and getattr(node.exc.func, "id", "") == "NotImplementedError" and node.exc.args
                and isinstance(node.exc.args[0], ast.Constant)):
            found.append(str(node.exc.args[0].value))
    return found


@pytest.mark.parametrize("challenge", [pytest.param(c, id=c.name) for c in CHALLENGES])
def test_starter_gets_error_with_its_message(capsys, challenge: Path) -> None:
    import yaml as _yaml

    starter = challenge / (_yaml.safe_load((challenge / "challenge.yaml").read_text()).get(
        "starter") or "starter.py")
    code, result = grade_like_cli(capsys, challenge, starter)
    assert result["verdict"] == "error", _summary(result)
    assert code == 1
    text = "\n".join(c["message"] for c in result["checks"])
    assert "NotImplementedError" in text, _summary(result)
    first = next(c for c in result["checks"] if c["status"] == "error")
    # a starter is not a bug: "not implemented yet", no random input, no unrelated hint
    assert first["message"].startswith("not implemented yet"), _summary(result)
    assert first["counterexample"] is None and first["hint"] is None, _summary(result)
    messages = _starter_messages(starter)
    if messages:
        assert any(m in text for m in messages), _summary(result)

"""The authoring guide's example is a real challenge: ``docs/authoring-challenges.md`` shows
``tests/fixtures/challenges/guide-example/checks.py`` verbatim, and that challenge grades its correct
solutions ``passed`` and its wrong ones with the verdict and check ``solutions/expected.yaml``
names, through ``inferview grade`` exactly as a user runs it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from inferview.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "authoring-challenges.md"
EXAMPLE = ROOT / "tests" / "fixtures" / "challenges" / "guide-example"
MARKER = "<!-- guide-example: tests/fixtures/challenges/guide-example/checks.py -->"


def _guide_block() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    assert text.count(MARKER) == 1, f"the guide needs exactly one {MARKER!r} line"
    after = text.split(MARKER, 1)[1]
    found = re.match(r"\s*```python\n(.*?)```", after, flags=re.S)
    assert found, f"a ```python block must follow {MARKER!r} in {GUIDE.name}"
    return found.group(1)


def test_guide_shows_the_example_checks_file() -> None:
    assert _guide_block() == (EXAMPLE / "checks.py").read_text(encoding="utf-8"), (
        "docs/authoring-challenges.md and tests/fixtures/challenges/guide-example/checks.py differ: "
        "copy the file into the guide's code block (or the block into the file)")


def _grade(capsys: pytest.CaptureFixture, file: Path) -> dict:
    capsys.readouterr()
    with pytest.raises(SystemExit):
        cli_main(["grade", str(EXAMPLE), str(file), "--json", "--seed", "1", "--no-record"])
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("file", sorted((EXAMPLE / "solutions" / "correct").glob("*.py")),
                         ids=lambda p: p.stem)
def test_example_correct_solution_passes(capsys, file: Path) -> None:
    result = _grade(capsys, file)
    assert result["verdict"] == "passed", result


EXPECTED = yaml.safe_load((EXAMPLE / "solutions" / "expected.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("file", sorted((EXAMPLE / "solutions" / "wrong").glob("*.py")),
                         ids=lambda p: p.stem)
def test_example_wrong_solution_fails_its_check(capsys, file: Path) -> None:
    want = EXPECTED[file.name]
    result = _grade(capsys, file)
    assert result["verdict"] == want["verdict"], result
    failing = {c["name"] for c in result["checks"] if c["status"] in ("failed", "error")}
    assert want["check"] in failing, result

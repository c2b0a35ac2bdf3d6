"""`inferview lint` and the checked-in JSON Schemas."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from inferview.cli import cli
from inferview.content.lint import SCHEMA_DIR, lint, render_schemas
from inferview.paths import builtin_questions_dir

QUESTIONS_DIR = builtin_questions_dir()


def _run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_shipped_content_lints_clean():
    """Schema, cross-references, catalogues and Python files of all shipped content; each open
    question's rubric and each numeric template are linted per question by test_question_banks
    (the same ``self_check`` and ``template_problems``), so that work runs once, spread over the
    workers."""
    report = lint(rubrics=False)
    assert report.ok, "\n".join(str(e) for e in report.errors)
    assert report.questions >= 360 and report.challenges >= 12


def test_lint_command_prints_ok_for_a_clean_bank():
    result = _run("lint", str(QUESTIONS_DIR / "topics.yaml"))
    assert result.exit_code == 0, result.output
    assert result.output.startswith("ok:")


def test_lint_reports_file_line_field_and_fails(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("bank: bad-bank\ntitle: Bad\nquestions:\n  - id: q-one\n    kind: open\n"
                   "    topic: kv-cache\n    prompt: Why do we cache?\n    answer: To avoid recomputation.\n"
                   "    source: notes\n    key_points: []\n    follow_ups: [does-not-exist]\n")
    result = _run("lint", str(bad))
    assert result.exit_code == 1
    assert f"{bad}:10: questions[0] (q-one).key_points" in result.output


def test_lint_follow_up_that_does_not_exist(tmp_path):
    bank = tmp_path / "b.yaml"
    bank.write_text("bank: bb\ntitle: B\nquestions:\n  - id: q-one\n    kind: choice\n    topic: kv-cache\n"
                    "    prompt: Pick the right one\n    answer: The first one.\n    source: notes\n"
                    "    follow_ups: [does-not-exist]\n    options:\n      - {text: a, correct: true}\n      - {text: b}\n")
    result = _run("lint", str(bank))
    assert result.exit_code == 1
    assert "no question with id 'does-not-exist'" in result.output


def test_lint_missing_path_is_an_error(tmp_path):
    result = _run("lint", str(tmp_path / "nope"))
    assert result.exit_code == 2 and "no such file or folder" in result.output  # a usage error


def test_lint_syntax_error_exits_nonzero_in_a_real_process(tmp_path):
    bad = tmp_path / "syntax.yaml"
    bad.write_text("bank: x\ntitle: [unclosed\n")
    proc = subprocess.run([sys.executable, "-m", "inferview", "lint", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "YAML syntax error" in proc.stderr and "Traceback" not in proc.stderr


def test_json_schemas_are_up_to_date():
    """Fails when the models change without regenerating the schemas."""
    for name, text in render_schemas().items():
        path = SCHEMA_DIR / name
        assert path.exists() and path.read_text(encoding="utf-8") == text, (
            f"{path.name} is out of date with inferview/content/models.py; regenerate it with "
            "'inferview lint --write-schema' and commit the result."
        )
        json.loads(text)


def test_lint_checks_what_the_schema_cannot_see(tmp_path):
    """An open question whose model answer misses its own key point or states its own
    misconception, and a numeric template over an unknown quantity, are errors with a line."""
    bank = tmp_path / "semantic.yaml"
    bank.write_text(
        "bank: semantic\ntitle: Semantic\nquestions:\n"
        "  - id: sem-one\n    kind: open\n    topic: kv-cache\n    prompt: Why cache keys and values?\n"
        "    answer: Flash attention approximates attention. We store things.\n    source: notes\n"
        "    key_points:\n      - point: avoids recomputation\n        phrases: [recompute]\n"
        "    misconceptions:\n      - claim: flash attention is approximate\n"
        "        phrases: [flash attention approximates]\n        correction: it is exact\n"
        "  - id: sem-two\n    kind: numeric\n    topic: kv-cache\n    prompt: How big is the cache of {model}?\n"
        "    answer: '{value}'\n    source: notes\n    quantity: no_such_quantity\n    unit: bytes\n")
    result = _run("lint", str(bank))
    assert result.exit_code == 1
    assert f"{bank}:4: question sem-one.key_points: 'avoids recomputation' is not detected" in result.output
    assert "question sem-one.misconceptions: the model answer states" in result.output
    assert f"{bank}:17: question sem-two.quantity: unknown 'no_such_quantity'" in result.output

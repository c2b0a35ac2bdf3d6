"""Validate content: every bank and challenge, or one file or folder.

Used by ``inferview lint`` and by the content tests. Errors name file, line and field. Beyond the
schema, lint checks what spans files: topics exist, follow-ups and linked questions exist, a
challenge's Python files compile.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from inferview.content.loader import (
    ContentError,
    Library,
    cross_reference_errors,
    load_bank_file,
    load_challenge_folder,
    load_library,
)
from inferview.content.models import Bank, ChallengeSpec

SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
SCHEMAS = {"bank.schema.json": Bank, "challenge.schema.json": ChallengeSpec}


@dataclass
class LintReport:
    """What lint found."""

    errors: list[ContentError] = field(default_factory=list)
    banks: int = 0
    questions: int = 0
    challenges: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors


def _python_errors(folder: Path) -> list[ContentError]:
    errors = []
    for path in sorted(folder.rglob("*.py")):
        if "wrong" in path.parts or "hostile" in path.parts:
            continue  # wrong solutions may be broken on purpose
        try:
            compile(path.read_text(encoding="utf-8"), str(path), "exec")
        except SyntaxError as exc:
            errors.append(ContentError(path, exc.lineno, None, f"Python syntax error: {exc.msg}"))
    return errors


def _question_line(path: Path, qid: str) -> int | None:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for n, line in enumerate(lines, 1):
        if line.strip().lstrip("- ").strip() in (f"id: {qid}", f"id: '{qid}'", f'id: "{qid}"'):
            return n
    return None


def _rubric_context(lib: Library, bank: Bank | None = None, path: Path | None = None):
    """The grading context of ``lib``, with ``bank`` (read from ``path``) as it is on disk now."""
    from inferview.practice.openq import RubricContext

    ctx = RubricContext.from_library(lib)
    if bank is None:
        return ctx
    ctx.catalogues = {t: list(v) for t, v in ctx.catalogues.items()}
    if not any(b.path == path for b in lib.banks):
        for topic, errs in bank.errors.items():
            ctx.catalogues.setdefault(topic, []).extend(errs)
    ctx.synonyms[bank.bank] = bank.synonyms
    ctx.question_bank.update({q.id: bank.bank for q in bank.questions})
    return ctx


def _bank_rubric_errors(path: Path, bank: Bank, ctx) -> list[ContentError]:
    """Problems of a bank's own thesaurus groups and error catalogue (reported once, not per question)."""
    from inferview.practice import lexicon
    from inferview.practice.patterns import PatternError, compile_pattern

    errors = []
    lex = lexicon.shared().extended(bank.synonyms)
    base = set(lexicon.shared().problems)
    for problem in lex.problems:
        if problem not in base:
            errors.append(ContentError(path, None, "synonyms", problem))
    for topic, errs in bank.errors.items():
        for i, err in enumerate(errs):
            for j, source in enumerate(err.match):
                try:
                    compile_pattern(source, lex)
                except PatternError as exc:
                    errors.append(ContentError(path, None, f"errors.{topic}[{i}].match[{j}]", str(exc)))
    return errors


def _question_errors(path: Path, questions: list, ctx=None) -> list[ContentError]:
    """What the schema cannot see: an open question whose rubric does not work (patterns that do
    not compile, a model answer that misses its key points or makes an error, examples that do not
    grade as labelled); a numeric template that does not render."""
    from inferview.content.models import NumericQuestion, OpenQuestion
    from inferview.practice.drills import template_problems
    from inferview.practice.openq import self_check

    errors = []
    for q in questions:
        if isinstance(q, OpenQuestion):
            problems = [p for p in self_check(q, ctx) if not p.startswith("topic errors")]
        elif isinstance(q, NumericQuestion):
            problems = template_problems(q)
        else:
            continue
        for problem in problems:
            field_name, _, message = problem.partition(": ")
            errors.append(ContentError(path, _question_line(path, q.id), f"question {q.id}.{field_name}",
                                       message or problem))
    return errors


def _lint_challenge(folder: Path, lib: Library, report: LintReport) -> None:
    ch, errors = load_challenge_folder(folder)
    report.errors += errors
    if ch is None:
        return
    report.challenges += 1
    report.errors += _python_errors(folder)
    for qid in ch.spec.questions:
        if qid not in lib.questions:
            report.errors.append(ContentError(folder / "challenge.yaml", None, "questions",
                                              f"no question with id {qid!r}"))
    if ch.spec.topic not in lib.topics:
        report.errors.append(ContentError(folder / "challenge.yaml", None, "topic",
                                          f"unknown topic {ch.spec.topic!r}"))


def _lint_bank(path: Path, lib: Library, report: LintReport) -> None:
    bank, errors = load_bank_file(path)
    report.errors += errors
    if bank is None:
        return
    report.banks += 1
    report.questions += len(bank.questions)
    ctx = _rubric_context(lib, bank, path)
    report.errors += _bank_rubric_errors(path, bank, ctx)
    report.errors += _question_errors(path, bank.questions, ctx)
    topics = set(lib.topics) | {t.id for t in bank.topics}
    ids = set(lib.questions) | {q.id for q in bank.questions}
    for q in bank.questions:
        if q.topic not in topics:
            report.errors.append(ContentError(path, None, f"question {q.id}.topic", f"unknown topic {q.topic!r}"))
        for f in q.follow_ups:
            if f not in ids:
                report.errors.append(ContentError(path, None, f"question {q.id}.follow_ups",
                                                  f"no question with id {f!r}"))


def lint(target: Path | None = None, *, rubrics: bool = True) -> LintReport:
    """Lint all content (built-in and the user's), or one bank file, challenge or folder.
    ``rubrics=False`` leaves out grading each open question's model answer and examples and
    rendering each numeric template (the slow part, which the content tests do per question)."""
    report = LintReport()
    lib = load_library()
    if target is None:
        report.errors += lib.errors + cross_reference_errors(lib)
        report.banks = len(lib.banks)
        report.questions = len(lib.questions)
        report.challenges = len(lib.challenges)
        for ch in lib.challenges.values():
            report.errors += _python_errors(ch.folder)
        ctx = _rubric_context(lib)
        for b in lib.banks:
            report.errors += _bank_rubric_errors(b.path, b.bank, ctx)
            if rubrics:
                report.errors += _question_errors(b.path, b.bank.questions, ctx)
        return report
    target = target.expanduser()
    if not target.exists():
        report.errors.append(ContentError(target, None, None, "no such file or folder"))
    elif target.is_file() and target.name == "challenge.yaml":
        _lint_challenge(target.parent, lib, report)
    elif target.is_file():
        if target.suffix not in (".yaml", ".yml"):
            report.errors.append(ContentError(target, None, None, "not a YAML bank or challenge.yaml"))
        else:
            _lint_bank(target, lib, report)
    elif (target / "challenge.yaml").is_file():
        _lint_challenge(target, lib, report)
    else:
        for folder in sorted(p.parent for p in target.rglob("challenge.yaml")):
            _lint_challenge(folder, lib, report)
        for path in sorted(target.rglob("*.y*ml")):
            if path.name != "challenge.yaml" and "solutions" not in path.parts and path.suffix in (".yaml", ".yml"):
                if not any((parent / "challenge.yaml").is_file() for parent in path.parents):
                    _lint_bank(path, lib, report)
        if not (report.banks or report.challenges or report.errors):
            report.errors.append(ContentError(target, None, None, "no banks or challenges found here"))
    return report


def render_schemas() -> dict[str, str]:
    """The JSON Schemas generated from the models, as the text checked in under ``schema/``."""
    return {name: json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n"
            for name, model in SCHEMAS.items()}


def write_schemas() -> list[Path]:
    """Regenerate the checked-in JSON Schemas."""
    SCHEMA_DIR.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render_schemas().items():
        path = SCHEMA_DIR / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written

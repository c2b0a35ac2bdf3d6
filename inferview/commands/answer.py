"""``inferview answer``: grade free-text answers headless, for bank authors and scripts.

    inferview answer QUESTION_ID [--file F] [--json]     # the answer from F, or from stdin
    inferview answer --batch F.jsonl [--json]            # {"id": ..., "text": ...} per line

Exit 0 when every answer was graded (whatever its verdict), 2 for a usage error: an unknown id, a
question that is not open, no answer text, an unreadable batch line. The JSON object is described in
``docs/answer-result.md``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from inferview.text import plural


def _open_question(lib: Any, qid: str) -> Any:
    import difflib

    q = lib.questions.get(qid)
    if q is None:
        close = difflib.get_close_matches(qid, sorted(lib.questions), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise click.UsageError(f"unknown question {qid!r}{hint}")
    if q.kind != "open":
        raise click.UsageError(f"{qid!r} is a {q.kind} question; inferview answer grades open questions")
    return q


def _judge() -> Any:
    from inferview.practice.judge import JudgeConfig
    from inferview.settings import SettingsError

    try:
        return JudgeConfig.from_settings()
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None


def _grade(ctx: Any, q: Any, text: str, judge: Any) -> Any:
    from inferview.practice.judge import grade_with_judge

    rubric = ctx.rubric(q)
    return grade_with_judge(rubric, text, judge)


def _render(qid: str, g: Any) -> str:
    lines = [f"{qid}: {g.verdict.upper()}  score {round(100 * g.score)}%  "
             f"({len(g.hits)} of {len(g.points)} key points, {plural(len(g.errors), 'error')}; "
             f"graded by the {g.grader})"]
    if g.note:
        lines.append(f"  note: {g.note}")
    for p in g.points:
        mark = "✓" if p.hit else "✗"
        main = " (main point)" if p.point.main else ""
        lines.append(f"  {mark} {p.point.point}{main}")
        if p.hit and p.matched:
            lines.append(f"      matched: \"{p.matched}\"")
    for e in g.errors:
        lines.append(f"  ! {e.claim}")
        lines.append(f"      matched: \"{e.matched}\"")
        lines.append(f"      correction: {e.correction}")
    return "\n".join(lines)


def _batch_lines(path: Path) -> list[tuple[int, str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.UsageError(f"cannot read {path}: {exc}") from None
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


@click.command("answer")
@click.argument("question_id", required=False)
@click.option("--file", "file", type=click.Path(path_type=Path, dir_okay=False),
              help="Read the answer from this file (default: standard input).")
@click.option("--batch", type=click.Path(path_type=Path, dir_okay=False),
              help='Grade a JSON-lines file of {"id": ..., "text": ...}, one result per line.')
@click.option("--json", "as_json", is_flag=True, help="Print each result as one JSON object.")
@click.option("--no-judge", is_flag=True, help="Use the rubric grader even when a judge is configured.")
def command(question_id: str | None, file: Path | None, batch: Path | None, as_json: bool,
            no_judge: bool) -> None:
    """Grade a free-text answer to an open question: the verdict, the score, each key point hit or
    missed with the words that matched, each error flagged with its correction.

    The answer is read from --file or from standard input; --batch grades a JSON-lines file."""
    from inferview.content.loader import load_library
    from inferview.practice.openq import RubricContext

    if batch is not None and (question_id or file):
        raise click.UsageError("--batch takes no QUESTION_ID or --file")
    if batch is None and not question_id:
        raise click.UsageError("give a QUESTION_ID (or --batch F.jsonl)")
    lib = load_library()
    ctx = RubricContext.from_library(lib)
    judge = None if no_judge else _judge()

    if batch is None:
        q = _open_question(lib, question_id)
        if file is not None:
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise click.UsageError(f"cannot read {file}: {exc}") from None
        else:
            text = sys.stdin.read()
        if not text.strip():
            raise click.UsageError("no answer text (give --file, or write the answer on standard input)")
        g = _grade(ctx, q, text, judge)
        click.echo(json.dumps(g.to_json(q.id), ensure_ascii=False) if as_json else _render(q.id, g))
        return

    bad = 0
    for n, line in _batch_lines(batch):
        try:
            record = json.loads(line)
            qid, text = record["id"], record["text"]
            if not isinstance(qid, str) or not isinstance(text, str):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            click.echo(f"{batch}:{n}: not a JSON object with string fields 'id' and 'text'", err=True)
            bad += 1
            continue
        try:
            q = _open_question(lib, qid)
        except click.UsageError as exc:
            click.echo(f"{batch}:{n}: {exc.format_message()}", err=True)
            bad += 1
            continue
        g = _grade(ctx, q, text, judge)
        if as_json:
            click.echo(json.dumps(g.to_json(q.id), ensure_ascii=False))
        else:
            click.echo(f"{q.id}\t{g.verdict}\t{g.score:.2f}\t{len(g.hits)}/{len(g.points)} key points"
                       f"\t{plural(len(g.errors), 'error')}\t{g.grader}")
    if bad:
        click.echo(f"{plural(bad, 'line')} could not be graded", err=True)
        sys.exit(2)

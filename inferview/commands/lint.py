"""``inferview lint [PATH]``: validate content; non-zero exit on any error."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from inferview.text import plural


@click.command("lint")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--write-schema", is_flag=True, hidden=True, help="Regenerate the JSON Schemas for banks and challenge.yaml.")
def command(path: Path | None, write_schema: bool) -> None:
    """Validate every question bank and challenge (built-in and your own), or one file or folder.

    Errors name file, line and field. Exit status 1 when there is any error."""
    from inferview.content.lint import lint, write_schemas

    if write_schema:
        for p in write_schemas():
            click.echo(f"wrote {p}")
        return
    if path is not None and not path.expanduser().exists():
        raise click.UsageError(f"no such file or folder: {path}")
    report = lint(path)
    for err in report.errors:
        click.echo(str(err), err=True)
    summary = (f"{plural(report.banks, 'bank')}, {plural(report.questions, 'question')}, "
               f"{plural(report.challenges, 'challenge')}")
    if report.ok:
        click.echo(f"ok: {summary}")
        return
    click.echo(f"{plural(len(report.errors), 'error')} in {summary}", err=True)
    sys.exit(1)

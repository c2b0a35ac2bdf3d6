"""``inferview grade ID FILE``: grade a solution file headless.

Exit 0 when passed, 1 when not, 2 for a usage error (unknown challenge, missing file, no CUDA).
``--json`` prints exactly the schema-1 object of CHALLENGES.md on stdout and nothing else.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from inferview.text import plural


def render(result: dict[str, Any], *, file: str = "", output: str = "", err: bool = False,
           challenge_arg: str = "") -> None:
    """Print a result in colour with the same content as the JSON object."""
    from rich.console import Console
    from rich.markup import escape

    from inferview.grading import CHECK_MARK, VERDICT_STYLE

    console = Console(stderr=err, highlight=False, soft_wrap=True)
    verdict = result["verdict"]
    console.print(
        f"[bold]{escape(result['challenge'])}[/bold]  "
        f"[{VERDICT_STYLE.get(verdict, 'bold')}]{verdict.upper()}[/]  "
        f"[dim]backend {result['backend']} · seed {result['seed']} · "
        f"{result['duration_s']:.1f} s[/dim]"
    )
    for c in result["checks"]:
        mark, style = CHECK_MARK.get(c["status"], ("?", "bold"))
        console.print(f" [{style}]{mark}[/] {escape(c['name'])} [dim]({c['status']})[/dim]")
        if c.get("message"):
            for line in c["message"].splitlines():
                console.print(f"     {escape(line)}")
        if c.get("counterexample"):
            console.print("     [bold]smallest failing input:[/bold]")
            for line in c["counterexample"].splitlines():
                console.print(f"       [cyan]{escape(line)}[/cyan]")
        if c.get("hint"):
            console.print(f"     [yellow]hint:[/yellow] {escape(c['hint'])}")
    if output.strip():
        console.print("[dim]solution output:[/dim]")
        for line in output.rstrip().splitlines()[-40:]:
            console.print(f"[dim]  | {escape(line)}[/dim]")
    if file:
        console.print(
            f"[dim]replay this run: inferview grade {escape(challenge_arg or result['challenge'])} "
            f"{escape(file)} --seed {result['seed']}[/dim]")


@click.command(name="grade")
@click.argument("challenge_id")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True, help="Where to run the solution.")
@click.option("--seed", type=int, default=None, help="Replay a run (default: a random seed, printed).")
@click.option("--no-record", is_flag=True, help="Do not save the result in the progress store.")
@click.option("-x", "--fail-fast", is_flag=True,
              help="Stop at the first failing check (the rest are reported as not run).")
def command(challenge_id: str, file: Path, as_json: bool, device: str, seed: int | None,
            no_record: bool, fail_fast: bool) -> None:
    """Grade FILE against challenge CHALLENGE_ID (an id or a challenge folder).

    Exit status 0 when every check passed, 1 when not, 2 for a usage error (unknown challenge,
    missing file, no CUDA for --device cuda)."""
    from inferview.content.loader import UnknownChallenge, find_challenge
    from inferview.grading import GradingUsageError

    # Usage errors first, with the torch-free loader: they answer at once.
    try:
        found = find_challenge(challenge_id)
    except UnknownChallenge as exc:
        click.echo(f"inferview: {exc}", err=True)
        sys.exit(2)
    if not file.is_file():
        click.echo(f"inferview: {'not a regular file' if file.exists() else 'no such file'}: {file}",
                   err=True)
        sys.exit(2)
    if not as_json and _is_unmodified_starter(found.folder / found.spec.starter, file):
        click.echo(f"inferview: {file} is still the unmodified starter of {found.spec.id}: "
                   "write your solution in it, then grade it again", err=True)
        sys.exit(1)
    from inferview.submit import LocalBackend, submit

    try:
        outcome = submit(found, file, LocalBackend(), device=device, seed=seed,
                         open_store=None if no_record else open_store, fail_fast=fail_fast)
    except GradingUsageError as exc:
        click.echo(f"inferview: {exc}", err=True)
        sys.exit(2)
    data = outcome.result.to_json()
    report_outcome(outcome, quiet=as_json, no_record=no_record)
    if as_json:
        sys.stdout.write(json.dumps(data) + "\n")
        sys.stdout.flush()
    else:
        render(data, file=str(file), output=outcome.result.output(), challenge_arg=challenge_id)
        if outcome.scheduled:
            click.echo(f"{plural(len(outcome.scheduled), 'linked question')} queued for practice: "
                       + ", ".join(outcome.scheduled))
    sys.exit(0 if outcome.result.passed else 1)


def open_store() -> Any:
    """The progress store, with its notice (a repaired file...) shown on stderr."""
    from inferview.store import Store

    store = Store.open()
    if store.notice:
        click.echo(store.notice, err=True)
    return store


def report_outcome(outcome: Any, *, quiet: bool = False, no_record: bool = False) -> None:
    """Say on stderr why a result was not saved (grading itself succeeded)."""
    if outcome.record_error and not no_record:
        click.echo(f"inferview: result not saved: {outcome.record_error}", err=True)


def _is_unmodified_starter(starter: Path, file: Path) -> bool:
    """True when FILE has the same source as the challenge's starter (line endings aside)."""
    try:
        a = starter.read_bytes().replace(b"\r\n", b"\n").strip()
        b = file.read_bytes().replace(b"\r\n", b"\n").strip()
    except OSError:
        return False
    return a == b

"""``inferview grade ID FILE``: grade a solution file headless.

Exit 0 when passed, 1 when not, 2 for a usage error (unknown challenge, missing file, no CUDA) or
when a remote host could not grade it (``--remote``: nothing is graded or recorded then).
``--json`` prints exactly the schema-1 object of CHALLENGES.md on stdout and nothing else.
FILE ``-`` reads the source from stdin (``--stdin-name`` names it); ``--events`` is the remote
side of ``--remote`` (``inferview.remote.serve``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from inferview.remote.config import remote_options
from inferview.remote.serve import STDIN
from inferview.text import plural


def render(result: dict[str, Any], *, file: str = "", output: str = "", err: bool = False,
           challenge_arg: str = "") -> None:
    """Print a result in colour with the same content as the JSON object."""
    from rich.console import Console
    from rich.markup import escape

    from inferview.grading import CHECK_MARK, VERDICT_STYLE

    console = Console(stderr=err, highlight=False, soft_wrap=True)
    verdict = result["verdict"]
    where = (f" on {result['host']} ({result.get('device') or result['backend']})"
             if result.get("host") else "")
    console.print(
        f"[bold]{escape(result['challenge'])}[/bold]  "
        f"[{VERDICT_STYLE.get(verdict, 'bold')}]{verdict.upper()}[/]  "
        f"[dim]backend {result['backend']}{escape(where)} · seed {result['seed']} · "
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
        remote = f" --remote {result['host']}" if result.get("host") else ""
        console.print(
            f"[dim]replay this run: inferview grade {escape(challenge_arg or result['challenge'])} "
            f"{escape(file)} --seed {result['seed']}{escape(remote)}[/dim]")


@click.command(name="grade")
@click.argument("challenge_id")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True, help="Where to run the solution.")
@click.option("--seed", type=int, default=None, help="Replay a run (default: a random seed, printed).")
@click.option("--no-record", is_flag=True, help="Do not save the result in the progress store.")
@click.option("-x", "--fail-fast", is_flag=True,
              help="Stop at the first failing check (the rest are reported as not run).")
@click.option("--stdin-name", default="solution.py", show_default=True, metavar="NAME",
              help="With FILE '-' (the source on stdin): the file name it is graded as.")
@click.option("--events", is_flag=True, hidden=True,
              help="Remote grading: progress, output and device as event lines on stderr; stop "
                   "when the caller goes away.")
@remote_options
def command(challenge_id: str, file: Path, as_json: bool, device: str, seed: int | None,
            no_record: bool, fail_fast: bool, stdin_name: str, events: bool, remote: str | None,
            remote_command: str | None) -> None:
    """Grade FILE against challenge CHALLENGE_ID (an id or a challenge folder); FILE '-' reads
    the source from stdin.

    Exit status 0 when every check passed, 1 when not, 2 for a usage error (unknown challenge,
    missing file, no CUDA for --device cuda) or when the --remote host could not grade it."""
    from inferview.content.loader import UnknownChallenge, find_challenge

    # Usage errors first, with the torch-free loader: they answer at once.
    try:
        found = find_challenge(challenge_id)
    except UnknownChallenge as exc:
        click.echo(f"inferview: {exc}", err=True)
        sys.exit(2)
    backend = backend_for(remote, remote_command)
    options = dict(challenge_arg=challenge_id, as_json=as_json, device=device, seed=seed,
                   no_record=no_record, fail_fast=fail_fast, events=events)
    if str(file) != STDIN:
        sys.exit(_grade(found, file, backend, shown=str(file), **options))
    from inferview.remote.serve import check_stdin_name, stdin_submission

    try:
        check_stdin_name(stdin_name)
    except ValueError as exc:
        click.echo(f"inferview: {exc}", err=True)
        sys.exit(2)
    with stdin_submission(stdin_name) as path:
        code = _grade(found, path, backend, shown=STDIN, **options)
    sys.exit(code)


def backend_for(remote: str | None, remote_command: str | None) -> Any:
    """The backend that ``--remote``/``--remote-command`` and the settings choose: an
    ``SSHBackend``, or the local engine. A bad setting ends with one line and status 2."""
    from inferview.remote.config import resolve_or_exit
    from inferview.submit import LocalBackend

    config = resolve_or_exit(remote, remote_command)
    if config is None:
        return LocalBackend()
    from inferview.remote.backend import SSHBackend

    return SSHBackend(config)


def _grade(found: Any, file: Path, backend: Any, *, challenge_arg: str, shown: str,
           as_json: bool, device: str, seed: int | None, no_record: bool, fail_fast: bool,
           events: bool) -> int:
    """Grade ``file`` and print the result; returns the exit status."""
    from inferview.grading import GradingUsageError
    from inferview.submit import GradingCancelled, GradingUnavailable, submit

    if not file.is_file():
        click.echo(f"inferview: {'not a regular file' if file.exists() else 'no such file'}: {file}",
                   err=True)
        return 2
    if not as_json and _is_unmodified_starter(found.folder / found.spec.starter, file):
        click.echo(f"inferview: {shown} is still the unmodified starter of {found.spec.id}: "
                   "write your solution in it, then grade it again", err=True)
        return 1
    progress = cancel = sender = None
    if events:
        from inferview.remote.serve import Events, watch_caller

        sender = Events()
        progress, cancel = sender.progress, watch_caller().is_set
    try:
        outcome = submit(found, file, backend, device=device, seed=seed, progress=progress,
                         cancel=cancel, open_store=None if no_record else open_store,
                         fail_fast=fail_fast)
    except (GradingUsageError, GradingUnavailable) as exc:
        click.echo(f"inferview: {exc}", err=True)
        return 2
    except GradingCancelled:
        click.echo("inferview: cancelled", err=True)
        return 130
    data = outcome.result.to_json()
    report_outcome(outcome, quiet=as_json, no_record=no_record)
    if sender is not None:
        from inferview.machine import device_name

        sender.emit("output", stdout=outcome.result.stdout, stderr=outcome.result.stderr)
        sender.emit("where", device=device_name(outcome.result.backend))
    if as_json:
        sys.stdout.write(json.dumps(data) + "\n")
        sys.stdout.flush()
    else:
        render(data, file=shown, output=outcome.result.output(), challenge_arg=challenge_arg)
        if outcome.scheduled:
            click.echo(f"{plural(len(outcome.scheduled), 'linked question')} queued for practice: "
                       + ", ".join(outcome.scheduled))
    return 0 if outcome.result.passed else 1


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

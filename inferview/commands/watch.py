"""``inferview watch ID [FILE]``: re-grade a solution every time it is saved (rustlings' watch)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from inferview.remote.config import remote_options


@click.command(name="watch")
@click.argument("challenge_id")
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True)
@click.option("--seed", type=int, default=None, help="Use this seed for every run.")
@click.option("--debounce-ms", type=click.IntRange(min=0), default=300, show_default=True,
              help="Wait this long after a save before grading.")
@remote_options
def command(challenge_id: str, file: Path | None, device: str, seed: int | None,
            debounce_ms: int, remote: str | None, remote_command: str | None) -> None:
    """Grade FILE (default: the workspace's <id>/solution.py) now and after every save.

    Ctrl+C stops. With --remote HOST each save is graded on HOST; a run that HOST could not grade
    says why in one line, and the next save tries again.
    """
    from inferview.commands.grade import (
        _is_unmodified_starter,
        backend_for,
        open_store,
        render,
        report_outcome,
    )
    from inferview.content.loader import UnknownChallenge, find_challenge
    from inferview.grading import GradingUsageError
    from inferview.paths import workspace_dir
    from inferview.submit import GradingUnavailable, submit
    from inferview.text import plural

    try:
        ch = find_challenge(challenge_id)
    except UnknownChallenge as exc:
        click.echo(f"inferview: {exc}", err=True)
        sys.exit(2)
    path = file if file is not None else workspace_dir() / ch.id / "solution.py"
    if not path.is_file():
        click.echo(f"inferview: no such file: {path} (create it with: inferview start "
                   f"{challenge_id})", err=True)
        sys.exit(2)
    path = path.resolve()
    backend = backend_for(remote, remote_command)

    def run_once() -> None:
        click.clear()
        if _is_unmodified_starter(ch.folder / ch.spec.starter, path):
            click.echo(f"{path} is still the unmodified starter: write your solution, save, and it "
                       "is graded.")
            click.echo(f"\nwatching {path.name} for changes (Ctrl+C to stop)")
            return
        click.echo(f"grading {path}{f' on {backend.host}' if hasattr(backend, 'host') else ''} ...")
        try:
            outcome = submit(ch, path, backend, device=device, seed=seed, open_store=open_store)
        except (GradingUsageError, GradingUnavailable) as exc:
            click.echo(f"inferview: {exc}", err=True)
            click.echo(f"\nwatching {path.name} for changes (Ctrl+C to stop)")
            return
        click.clear()
        render(outcome.result.to_json(), file=str(path), output=outcome.result.output(),
               challenge_arg=challenge_id)
        report_outcome(outcome)
        if outcome.scheduled:
            click.echo(f"{plural(len(outcome.scheduled), 'linked question')} queued for practice: "
                       + ", ".join(outcome.scheduled))
        click.echo(f"\nwatching {path.name} for changes (Ctrl+C to stop)")

    from watchfiles import watch

    try:
        run_once()
        last = path.stat().st_mtime_ns
        gone = False
        for changes in watch(path.parent, debounce=debounce_ms, step=50, raise_interrupt=True,
                             watch_filter=lambda _c, p: Path(p).resolve() == path):
            if not changes:
                continue
            if not path.exists():
                if not gone:
                    click.echo(f"\n{path} was deleted or moved; waiting for it to come back "
                               "(Ctrl+C to stop)")
                gone = True
                continue
            gone = False
            mtime = path.stat().st_mtime_ns
            if mtime == last:
                continue
            last = mtime
            time.sleep(0.05)
            run_once()
    except KeyboardInterrupt:
        click.echo("\nstopped watching")

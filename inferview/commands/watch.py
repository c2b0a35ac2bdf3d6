"""``inferview watch ID [FILE]``: re-grade a solution every time it is saved (rustlings' watch)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click


@click.command(name="watch")
@click.argument("challenge_id")
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True)
@click.option("--seed", type=int, default=None, help="Use this seed for every run.")
@click.option("--debounce-ms", type=click.IntRange(min=0), default=300, show_default=True,
              help="Wait this long after a save before grading.")
def command(challenge_id: str, file: Path | None, device: str, seed: int | None,
            debounce_ms: int) -> None:
    """Grade FILE (default: the workspace's <id>/solution.py) now and after every save.

    Ctrl+C stops.
    """
    from inferview.commands.grade import _is_unmodified_starter, _record, render
    from inferview.graders.engine import GradingUsageError, grade, load_challenge
    from inferview.paths import workspace_dir

    try:
        ch = load_challenge(challenge_id)
    except GradingUsageError as exc:
        click.echo(f"inferview: {exc}", err=True)
        sys.exit(2)
    path = file if file is not None else workspace_dir() / ch.id / "solution.py"
    if not path.is_file():
        click.echo(f"inferview: no such file: {path} (create it with: inferview start "
                   f"{challenge_id})", err=True)
        sys.exit(2)
    path = path.resolve()

    def run_once() -> None:
        click.clear()
        if _is_unmodified_starter(ch.folder / ch.spec.starter, path):
            click.echo(f"{path} is still the unmodified starter: write your solution, save, and it "
                       "is graded.")
            click.echo(f"\nwatching {path.name} for changes (Ctrl+C to stop)")
            return
        click.echo(f"grading {path} ...")
        try:
            result = grade(ch.folder, path, device=device, seed=seed)
        except GradingUsageError as exc:
            click.echo(f"inferview: {exc}", err=True)
            return
        data = result.to_json()
        _record(data, path)
        click.clear()
        render(data, file=str(path), output=result.stdout + result.stderr,
               challenge_arg=challenge_id)
        click.echo(f"\nwatching {path.name} for changes (Ctrl+C to stop)")

    from watchfiles import watch

    try:
        run_once()
        last = path.stat().st_mtime_ns
        for changes in watch(path.parent, debounce=debounce_ms, step=50, raise_interrupt=True,
                             watch_filter=lambda _c, p: Path(p).resolve() == path):
            if not changes or not path.exists():
                continue
            mtime = path.stat().st_mtime_ns
            if mtime == last:
                continue
            last = mtime
            time.sleep(0.05)
            run_once()
    except KeyboardInterrupt:
        click.echo("\nstopped watching")

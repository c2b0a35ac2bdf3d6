"""``inferview start ID``: copy a challenge's starter into the workspace and print its path."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click


@click.command(name="start")
@click.argument("challenge_id")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder to put <id>/solution.py in (default: the workspace).")
def command(challenge_id: str, directory: Path | None) -> None:
    """Copy the starter of CHALLENGE_ID (an id or a challenge folder) to <dir>/<id>/solution.py.

    An existing solution file is never overwritten.
    """
    from inferview.content.loader import find_challenge  # torch-free: start answers at once
    from inferview.paths import workspace_dir

    try:
        ch = find_challenge(challenge_id)
    except KeyError as exc:
        click.echo(f"inferview: {exc.args[0] if exc.args else exc}", err=True)
        sys.exit(2)
    starter = ch.folder / ch.spec.starter
    if not starter.is_file():
        click.echo(f"inferview: challenge {ch.spec.id} has no starter file {ch.spec.starter}",
                   err=True)
        sys.exit(2)
    base = directory if directory is not None else workspace_dir()
    target = base / ch.spec.id / "solution.py"
    if target.exists():
        click.echo(f"{target} already exists; leaving it as it is.", err=True)
        click.echo(str(target))
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(starter, target)
    except OSError as exc:
        click.echo(f"inferview: cannot write {target}: {exc.strerror or exc}", err=True)
        sys.exit(1)
    click.echo(str(target))
    click.echo(f"Grade it with: inferview grade {challenge_id} {target}", err=True)

"""``inferview challenge ID [--file PATH]``: open the TUI on one challenge.

Without ``--file`` the editor works on the workspace's ``<id>/solution.py`` (made from the starter
the first time); with it, on PATH itself, so the TUI and your own editor share one file.
"""

from __future__ import annotations

from pathlib import Path

import click

from inferview.remote.config import remote_options


@click.command(name="challenge")
@click.argument("challenge_id", metavar="ID")
@click.option("--file", "file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Edit and grade this file instead of the workspace's solution.py.")
@remote_options
def command(challenge_id: str, file: Path | None, remote: str | None,
            remote_command: str | None) -> None:
    """Open the TUI on one challenge (--remote HOST: ctrl+r grades on HOST over ssh)."""
    from inferview.content.loader import find_challenge, load_library
    from inferview.grading import GradingUsageError
    from inferview.remote.config import resolve
    from inferview.settings import SettingsError

    try:
        where = resolve(remote, remote_command)
    except (SettingsError, GradingUsageError) as exc:
        raise click.UsageError(str(exc)) from None

    library = load_library()
    try:
        find_challenge(challenge_id, library)
    except KeyError as exc:
        raise click.UsageError(str(exc).strip("'\"")) from None
    if file is not None:
        file = file.expanduser().resolve()
        if not file.is_file():
            raise click.UsageError(f"no such file: {file}")
    from inferview.tui.app import InitialChallenge, run_app

    run_app(InitialChallenge(challenge_id, file), library=library, remote=where)

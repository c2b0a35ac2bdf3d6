"""``inferview challenge ID [--file PATH]``: open the TUI on one challenge.

Without ``--file`` the editor works on the workspace's ``<id>/solution.py`` (made from the starter
the first time); with it, on PATH itself, so the TUI and your own editor share one file.
"""

from __future__ import annotations

from pathlib import Path

import click


@click.command(name="challenge")
@click.argument("challenge_id", metavar="ID")
@click.option("--file", "file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Edit and grade this file instead of the workspace's solution.py.")
def command(challenge_id: str, file: Path | None) -> None:
    """Open the TUI on one challenge."""
    from inferview.content.loader import find_challenge, load_library

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

    run_app(InitialChallenge(challenge_id, file), library=library)

"""``inferview mock [--minutes N] [--focus TOPIC] [--resume ID]``: a timed mock interview in the app."""

from __future__ import annotations

import click


@click.command("mock")
@click.option("--minutes", type=click.FloatRange(min=1, max=240), default=None,
              help="Length in minutes, from 1 to 240 (the app offers 15, 30, 45 or 60).")
@click.option("--focus", default=None, help="A topic to dwell on, e.g. flash-attention.")
@click.option("--resume", "resume", type=int, default=None, help="Resume a paused session by id.")
@click.option("--seed", type=int, default=None, help="Plan the same interview again.")
def command(minutes: float | None, focus: str | None, resume: int | None, seed: int | None) -> None:
    """Start a mock interview: questions in an interviewer's story order, one coding challenge, a
    countdown, and a scored report at the end. Without --minutes the app asks for a length (the
    last one chosen is offered first; --focus is then preselected)."""
    from inferview.content.loader import load_library

    if resume is not None:
        from inferview.commands import open_store

        with open_store(backup=False) as store:
            row = store.get_mock(resume)
        if row is None:
            raise click.ClickException(f"no mock interview with id {resume}")
        if row["status"] not in ("running", "paused"):
            raise click.ClickException(f"mock interview {resume} is {row['status']}; see its report "
                                       f"with 'inferview report {resume}'")
    lib = None
    if focus is not None:
        lib = load_library()
        if focus not in lib.topics:
            raise click.UsageError(f"unknown topic {focus!r} (known: {', '.join(sorted(lib.topics))})")
    from inferview.tui.app import run_app

    run_app(mock={"minutes": minutes, "focus": focus, "mock_id": resume, "seed": seed}, library=lib)

"""``inferview report SESSION [--md] [--json]``: a mock interview's report, again or exported."""

from __future__ import annotations

import json
import sys

import click


@click.command("report")
@click.argument("session", required=False)
@click.option("--md", "as_md", is_flag=True,
              help="Print the report's Markdown source (for export); without it, the report is laid out to read.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def command(session: str | None, as_md: bool, as_json: bool) -> None:
    """Show the report of mock interview SESSION (an id from 'inferview stats'; default: the latest)."""
    from inferview.commands import open_store
    from inferview.content.loader import load_library
    from inferview.mock.store import load_report

    with open_store() as store:
        finished = [m for m in store.list_mocks()
                    if m["status"] == "finished" and "report" in m["state"]]
        if session is None:
            if not finished:
                raise click.ClickException("no finished mock interview yet; start one with 'inferview mock'")
            mock_id = finished[0]["id"]
        else:
            try:
                mock_id = int(session)
            except ValueError:
                raise click.UsageError(f"SESSION must be a number, not {session!r}") from None
        if store.get_mock(mock_id) is None:
            # an id that names no session is a wrong argument (exit 2), like a malformed one
            raise click.UsageError(f"no mock interview with id {mock_id} (see 'inferview stats')")
        try:
            report = load_report(store, mock_id)
        except KeyError as exc:
            raise click.ClickException(str(exc.args[0])) from None
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
        return
    text = report.to_markdown(load_library())
    if as_md:
        click.echo(text, nl=False)
        return
    # rendered for reading: headings, tables and lists laid out (plain text when piped)
    from rich.console import Console
    from rich.markdown import Markdown

    width = None if sys.stdout.isatty() else 100
    Console(width=width, highlight=False).print(Markdown(text))

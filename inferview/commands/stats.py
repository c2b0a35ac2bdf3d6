"""``inferview stats [--json]``: progress from the store."""

from __future__ import annotations

import json

import click

from inferview.text import plural


@click.command("stats")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def command(as_json: bool) -> None:
    """Reviews and accuracy per topic, challenge results, streak and mock interviews."""
    from inferview.commands import open_store

    with open_store() as store:
        summary = store.summary()
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"Streak: {plural(summary['streak_days'], 'day')} · reviews due now: {summary['reviews_due']}")
    t = Table(title="Questions by topic", title_justify="left")
    for col in ("topic", "attempts", "correct", "accuracy"):
        t.add_column(col)
    for topic, s in summary["topics"].items():
        acc = f"{100 * s['accuracy']:.0f}%" if s["accuracy"] is not None else "-"
        t.add_row(topic, str(s["attempts"]), str(s["correct"]), acc)
    console.print(t if summary["topics"] else "No questions answered yet.")
    c = Table(title="Challenges", title_justify="left")
    for col in ("challenge", "status", "attempts", "best", "backend"):
        c.add_column(col)
    for cid, s in sorted(summary["challenges"].items()):
        best = f"{s['best_duration_s']:.1f}s" if s["best_duration_s"] is not None else "-"
        c.add_row(cid, s["status"], str(s["attempts"]), best, s["backend"] or "-")
    console.print(c if summary["challenges"] else "No challenges attempted yet.")
    if summary["mock_sessions"]:
        m = Table(title="Mock interviews", title_justify="left")
        for col in ("id", "status", "started", "score"):
            m.add_column(col)
        for s in summary["mock_sessions"]:
            score = f"{100 * s['score']:.0f}%" if isinstance(s["score"], (int, float)) else "-"
            m.add_row(str(s["id"]), s["status"], s["created_at"][:16].replace("T", " "), score)
        console.print(m)

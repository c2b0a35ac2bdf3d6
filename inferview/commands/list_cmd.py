"""``inferview list [--topic T] [--json]``: challenges and question banks."""

from __future__ import annotations

import json
from collections import Counter

import click

from inferview.text import plural


@click.command("list")
@click.option("--topic", "topic", default=None, help="Only this topic (e.g. kv-cache).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def command(topic: str | None, as_json: bool) -> None:
    """List challenges (with your status) and question banks."""
    from inferview.commands import open_store
    from inferview.content.loader import load_library

    lib = load_library()
    if topic and topic not in lib.topics:
        raise click.UsageError(f"unknown topic {topic!r} (known: {', '.join(sorted(lib.topics))})")
    with open_store(backup=False) as store:
        status = store.challenge_status()
    challenges = [
        {
            "id": ch.id, "title": ch.spec.title, "topic": ch.spec.topic,
            "difficulty": ch.spec.difficulty, "time_budget_min": ch.spec.time_budget_min,
            "builtin": ch.builtin, "status": status.get(ch.id, {}).get("status", "new"),
            "best_duration_s": status.get(ch.id, {}).get("best_duration_s"),
            "backend": status.get(ch.id, {}).get("backend"),
        }
        for ch in lib.challenges_in_order()
        if topic is None or ch.spec.topic == topic
    ]
    banks = []
    for b in lib.banks:
        qs = [q for q in b.bank.questions if topic is None or q.topic == topic]
        if not qs:
            continue
        kinds = Counter(q.kind for q in qs)
        banks.append({"id": b.bank.bank, "title": b.bank.title, "questions": len(qs),
                      "kinds": dict(kinds), "topics": sorted({q.topic for q in qs}),
                      "builtin": b.builtin, "path": str(b.path)})
    if as_json:
        click.echo(json.dumps({"challenges": challenges, "banks": banks,
                               "skipped": [str(e) for e in lib.errors]}, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    t = Table(title="Challenges", title_justify="left")
    # Ids are what the other commands take: never cut or wrap them; the title wraps instead.
    t.add_column("id", no_wrap=True, min_width=max((len(c["id"]) for c in challenges), default=2))
    t.add_column("title", ratio=1)
    for col in ("level", "status", "best"):
        t.add_column(col, no_wrap=True)
    for c in challenges:  # the topic is in --json and in the --topic filter; the title says it
        best = f"{c['best_duration_s']:.1f}s {c['backend']}" if c["best_duration_s"] is not None else ""
        t.add_row(c["id"], c["title"], c["difficulty"], c["status"], best)
    console.print(t)
    b = Table(title="Question banks", title_justify="left")
    b.add_column("bank", no_wrap=True, min_width=max((len(x["id"]) for x in banks), default=4))
    b.add_column("title", ratio=1)
    for col in ("questions", "kinds"):
        b.add_column(col)
    for bank in banks:
        b.add_row(bank["id"], bank["title"], str(bank["questions"]),
                  ", ".join(f"{k} {n}" for k, n in sorted(bank["kinds"].items())))
    console.print(b)
    if lib.errors:
        console.print(f"[yellow]{plural(len(lib.errors), 'content problem')} skipped; run 'inferview lint' for details.[/]")

"""``inferview grade-batch ID DIR``: grade a cohort's submissions, locally or on a Ray cluster.

Every submission is graded exactly as ``inferview grade --no-record`` grades it (the same engine,
each solution in its own isolated worker process); nothing goes into the progress store, since a
batch grades other people's work. A progress bar runs on stderr; the table (or ``--json``) goes
to stdout, ``--csv OUT`` to a file.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from inferview.batch.table import SORT_KEYS
from inferview.text import plural

if TYPE_CHECKING:
    from rich.console import Console

    from inferview.batch.discover import Submission
    from inferview.batch.table import BatchRow
    from inferview.content.loader import LoadedChallenge


@click.command(name="grade-batch")
@click.argument("challenge_id")
@click.argument("folder", metavar="DIR", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True,
              help="Print the report as one JSON object (each row with its full result).")
@click.option("--csv", "csv_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="OUT", help="Also write the table as CSV to OUT ('-': stdout, no table).")
@click.option("--sort", type=click.Choice(SORT_KEYS), default="candidate", show_default=True,
              help="Row order: name; best verdict; fastest; most checks passed.")
@click.option("--ray", "ray_address", default=None, metavar="auto|ADDRESS",
              help="Grade as tasks on an existing Ray cluster (auto: the one this machine is in); "
                   "never starts one.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Local gradings at once (default: one per core, as memory allows; one per GPU "
                   "for CUDA challenges). --jobs 1 gives times comparable to `grade`'s.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True, help="Where to run the solutions.")
@click.option("--seed", type=int, default=None,
              help="One seed for every submission (default: a random seed each, in the report).")
@click.option("--retries", type=click.IntRange(min=0), default=2, show_default=True,
              help="Times a submission is retried when its worker or node is lost.")
@click.option("-x", "--fail-fast", is_flag=True, help="Stop each grading at its first failing check.")
def command(challenge_id: str, folder: Path, as_json: bool, csv_out: Path | None, sort: str,
            ray_address: str | None, jobs: int | None, device: str, seed: int | None,
            retries: int, fail_fast: bool) -> None:
    """Grade every submission in DIR against challenge CHALLENGE_ID: a .py file per candidate
    (DIR/alice.py), or a folder per candidate holding one .py file (DIR/alice/solution.py).

    Each is graded as `inferview grade` grades it, and nothing is saved in your progress (these are
    other people's solutions). `inferview grade ID FILE --seed SEED` replays any row. With --ray
    every node needs inferview installed (`pip install 'inferview[cluster]'`).

    Exit status 0 when every submission was graded (whatever its verdict), 1 when some could not
    be (the row says why), 2 for a usage error."""
    from rich.console import Console

    from inferview.batch.discover import DiscoveryError, discover
    from inferview.content.loader import UnknownChallenge, find_challenge
    from inferview.grading import GradingUsageError

    def usage(message: str) -> None:
        click.echo(f"inferview: {message}", err=True)
        sys.exit(2)

    if jobs is not None and ray_address is not None:
        usage("--jobs is for local batches: on Ray, the cluster's CPUs and GPUs decide")
    if as_json and csv_out is not None and str(csv_out) == "-":
        usage("--json and --csv - both write to stdout: give --csv a file")
    try:
        found = find_challenge(challenge_id)
    except UnknownChallenge as exc:
        usage(str(exc))
    try:
        submissions = discover(folder)
    except DiscoveryError as exc:
        usage(str(exc))
    err = Console(stderr=True, highlight=False)
    try:
        if ray_address is not None:
            rows, runner = _on_cluster(found, submissions, ray_address, err, device=device,
                                       seed=seed, fail_fast=fail_fast, retries=retries)
        else:
            rows, runner = _on_this_machine(found, submissions, err, device=device, seed=seed,
                                            fail_fast=fail_fast, retries=retries, jobs=jobs)
    except GradingUsageError as exc:
        usage(str(exc))
    from inferview.batch.table import BatchReport

    report = BatchReport(found.id, runner, rows)
    if csv_out is not None:
        text = report.to_csv(sort)
        if str(csv_out) == "-":
            sys.stdout.write(text)
        else:
            csv_out.write_text(text, encoding="utf-8")
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(sort)) + "\n")
    elif csv_out is None or str(csv_out) != "-":
        report.render(Console(highlight=False, soft_wrap=False), sort)
    sys.stdout.flush()
    sys.exit(0 if report.all_graded else 1)


class _Bar:
    """The progress bar on stderr: one step per submission finished."""

    def __init__(self, console: Console, total: int, label: str) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(),
                                 TextColumn("{task.fields[last]}"), console=console,
                                 transient=True)
        self.task = self.progress.add_task(label, total=total, last="")

    def __enter__(self) -> _Bar:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def done(self, row: BatchRow) -> None:
        self.progress.update(self.task, advance=1, last=f"{row.candidate}: {row.status}")


def _on_this_machine(found: LoadedChallenge, submissions: list[Submission], err: Console, *,
                     device: str, seed: int | None, fail_fast: bool, retries: int,
                     jobs: int | None) -> tuple[list[BatchRow], str]:
    from inferview.batch.local import plan_slots, run_local
    from inferview.batch.task import ChallengeRef
    from inferview.graders.pool import guess_backend

    backend = guess_backend(found.spec, device)
    slots = plan_slots(found.spec.memory_limit_mb, backend, len(submissions), jobs)
    at_once = (plural(len(slots), "GPU") if backend == "cuda"
               else plural(len(slots), "process", "processes"))
    label = f"grading, {at_once} at once"
    with _Bar(err, len(submissions), label) as bar:
        rows = run_local(ChallengeRef(str(found.folder)), submissions, slots, device=device,
                         seed=seed, fail_fast=fail_fast, retries=retries, on_done=bar.done)
    return rows, "local"


def _on_cluster(found: LoadedChallenge, submissions: list[Submission], address: str,
                err: Console, *, device: str, seed: int | None, fail_fast: bool,
                retries: int) -> tuple[list[BatchRow], str]:
    from inferview.batch.cluster import ClusterError, connect, run_cluster
    from inferview.batch.task import ChallengeRef

    # Ray prints the cluster's notices ("(raylet) A worker died...") on stdout: they go to stderr,
    # so that stdout holds the report alone
    with contextlib.redirect_stdout(sys.stderr):
        try:
            ray = connect(address)
        except ClusterError as exc:
            click.echo(f"inferview: {exc}", err=True)
            sys.exit(2)
        try:
            ref = ChallengeRef(found.id) if found.builtin else ChallengeRef.shipped(found.folder)
            with _Bar(err, len(submissions), f"grading on Ray ({address})") as bar:
                rows = run_cluster(ray, ref, found.spec, submissions, device=device, seed=seed,
                                   fail_fast=fail_fast, retries=retries, on_done=bar.done)
        finally:
            ray.shutdown()
    return rows, f"ray:{address}"

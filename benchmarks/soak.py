"""A long soak: gradings in a row through the app's grading service, then practice answers through
the app's own practice code, measuring what a long session must not accumulate.

    python benchmarks/soak.py [--gradings 500] [--answers 2000] [--json OUT]

Gradings cycle through a correct solution, a wrong one, a hostile one (segfault, ``os._exit``, a
child that outlives its worker, a print flood, a memory bomb...) and another challenge, all cheap
on a CPU, through one ``GradingClient`` (one service, a warm worker per grading), as ``ctrl+r``
does. Answers go through ``PracticeSession`` (grade the answer, rate it: attempt and card in one
transaction) against a store of its own, a day passing per session so reviews come due.

At the start (after one warm-up grading) and at the end it measures: open file descriptors of this
process and of the service, processes started for the soak (everything carrying its private
``TMPDIR``: the service, its workers, anything that escaped them), ``inferview-*`` folders in that
temporary folder, and resident memory (this process and the service). It prints them with the
grading time's median and p99 (overall, per submission, and first half against second half) and
writes them as JSON with ``--json``. Goals: no growth in descriptors, processes or folders; memory
growth under 10 %; p99 under twice the median.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "tests" / "fixtures" / "challenges" / "demo-scale"
HOSTILE = ROOT / "tests" / "hostile"
HOSTILE_NAMES = ("child_setsid", "segfault", "os_exit_in_call", "print_flood", "mutates",
                 "nan_output", "exit_at_import", "syntax_error", "memory_bomb")
_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass
class Snapshot:
    """What the soak must not accumulate, at one moment."""

    fds_self: int
    fds_service: int
    processes: int
    folders: int
    rss_self_mb: float
    rss_service_mb: float


@dataclass
class Report:
    gradings: int
    answers: int
    start: Snapshot
    end: Snapshot
    grading_median_s: float
    grading_p99_s: float
    first_half_median_s: float
    second_half_median_s: float
    per_submission: dict[str, dict[str, float]] = field(default_factory=dict)
    answer_median_ms: float = 0.0
    answer_p99_ms: float = 0.0
    verdicts: dict[str, int] = field(default_factory=dict)

    @property
    def memory_growth(self) -> float:
        before = self.start.rss_self_mb + self.start.rss_service_mb
        after = self.end.rss_self_mb + self.end.rss_service_mb
        return after / before - 1 if before else 0.0

    def problems(self) -> list[str]:
        """The goals this run missed, in words (empty when it met them all)."""
        out = []
        for name in ("fds_self", "fds_service", "processes", "folders"):
            a, b = getattr(self.start, name), getattr(self.end, name)
            if b > a:
                out.append(f"{name} grew from {a} to {b}")
        if self.memory_growth >= 0.10:
            out.append(f"memory grew by {100 * self.memory_growth:.1f} %")
        slow = [k for k, v in self.per_submission.items() if v["p99_s"] >= 2 * v["median_s"]]
        if slow:
            out.append(f"p99 at or over twice the median for {', '.join(slow)}")
        return out

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "memory_growth": self.memory_growth, "problems": self.problems()}


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0-1) by the nearest-rank method."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(-(-q * len(ordered) // 1)) - 1))]


# -- measuring --------------------------------------------------------------------------------

def _fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE / 2**20
    except (OSError, IndexError, ValueError):
        return 0.0


def soak_processes(tmp: Path) -> list[int]:
    """Live processes started for this soak: those whose environment names its ``TMPDIR`` (the
    service inherits it; workers, and what escapes them, have a folder inside it)."""
    needle = f"TMPDIR={tmp}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            if stat[stat.rfind(b")") + 2:].split()[0] == b"Z":
                continue
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read():
                    found.append(int(name))
        except OSError:
            continue
    return found


def snapshot(tmp: Path, service: int) -> Snapshot:
    return Snapshot(_fds(os.getpid()), _fds(service), len(soak_processes(tmp)),
                    len(list(tmp.glob("inferview-*"))), round(_rss_mb(os.getpid()), 1),
                    round(_rss_mb(service), 1))


def settled(tmp: Path, service: int, timeout: float = 20.0) -> Snapshot:
    """A snapshot once the service is idle: its next warm worker booted, the counts steady for
    half a second."""
    deadline = time.monotonic() + timeout
    last = snapshot(tmp, service)
    steady_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = snapshot(tmp, service)
        same = (now.processes, now.folders, now.fds_service) == (last.processes, last.folders,
                                                                  last.fds_service)
        if not same:
            steady_since = time.monotonic()
        elif time.monotonic() - steady_since >= 0.5:
            return now
        last = now
    return last


# -- the work ---------------------------------------------------------------------------------

def submissions(library: Any) -> list[tuple[str, Path, Path]]:
    """The grading cycle: (label, challenge folder, file), correct, wrong, hostile, mixed."""
    kv = library.challenges["kv-cache-size"].folder
    correct = [("kv-cache-size/correct", kv, kv / "solutions/correct/closed_form_search.py"),
               ("demo-scale/correct", DEMO, DEMO / "solutions/correct/mul.py")]
    wrong = [("kv-cache-size/wrong", kv, kv / "solutions/wrong/forgets_k_and_v.py"),
             ("demo-scale/wrong", DEMO, DEMO / "solutions/wrong/adds.py")]
    hostile = [(f"hostile/{n}", DEMO, HOSTILE / f"{n}.py") for n in HOSTILE_NAMES]
    mixed = [("kv-cache-size/per_layer_loop", kv, kv / "solutions/correct/per_layer_loop.py"),
             ("demo-scale/mul_method", DEMO, DEMO / "solutions/correct/mul_method.py")]
    cycle = []
    for i in range(len(hostile)):
        cycle += [correct[i % 2], wrong[i % 2], hostile[i], mixed[i % 2]]
    return cycle


def run_gradings(client: Any, cycle: list[tuple[str, Path, Path]], n: int,
                 times: list[tuple[str, float]], verdicts: dict[str, int]) -> None:
    for i in range(n):
        label, folder, file = cycle[i % len(cycle)]
        t0 = time.perf_counter()
        result = client.grade(folder, file, device="cpu", seed=i)
        times.append((label, time.perf_counter() - t0))
        verdicts[result["verdict"]] = verdicts.get(result["verdict"], 0) + 1


def run_answers(library: Any, store_path: Path, n: int) -> list[float]:
    """``n`` practice answers through ``PracticeSession``: the model answer, a vague one and a
    wrong number in turn, rated as suggested; a new session (a day later) when the queue ends."""
    from inferview.tui.practice_session import PracticeSession

    from inferview.content.models import ChoiceQuestion
    from inferview.store import Store

    times = []
    day = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
    store = Store.open(store_path, backup=False)
    try:
        session = None
        while len(times) < n:
            if session is None or session.current() is None:
                day += timedelta(days=1)
                session = PracticeSession(library, store, None, now=lambda d=day: d)
                continue
            q = session.current().question
            k = len(times) % 3
            answer: Any = ([0] if isinstance(q, ChoiceQuestion)
                           else (q.answer, "It depends on the hardware.", "42 GiB")[k])
            t0 = time.perf_counter()
            feedback = session.grade(answer, duration_s=20.0)
            session.rate(feedback, feedback.suggested_rating)
            times.append(time.perf_counter() - t0)
    finally:
        store.close()
    return times


def soak(gradings: int, answers: int, log: Any = None) -> Report:
    """Run the soak in a private temporary folder (removed afterwards) and report."""
    from inferview.graders.client import GradingClient

    from inferview.content.loader import load_library

    tmp = Path(tempfile.mkdtemp(prefix="soak-"))
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(tmp)
    tempfile.tempdir = None
    library = load_library(include_user=False)
    cycle = submissions(library)
    client = GradingClient()
    try:
        times: list[tuple[str, float]] = []
        verdicts: dict[str, int] = {}
        run_gradings(client, cycle, 1, [], {})  # warm-up: the service imports torch
        run_answers(library, tmp / "warm-up.sqlite3", min(answers, 10))  # and the practice code
        service = client._proc.pid
        start = settled(tmp, service)
        done = 0
        while done < gradings:
            step = min(50, gradings - done)
            run_gradings(client, cycle, step, times, verdicts)
            done += step
            if log is not None:
                recent = statistics.median(t for _, t in times[-step:])
                print(f"  {done} gradings, median of the last {step}: {recent:.2f} s", file=log,
                      flush=True)
        answer_times = run_answers(library, tmp / "practice.sqlite3", answers) if answers else [0.0]
        end = settled(tmp, service)
    finally:
        client.close()
        if saved is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved
        tempfile.tempdir = None
        shutil.rmtree(tmp, ignore_errors=True)
    all_t = [t for _, t in times] or [0.0]
    half = len(all_t) // 2 or 1
    per: dict[str, dict[str, float]] = {}
    for label in dict.fromkeys(lbl for lbl, _ in times):
        ts = [t for lbl, t in times if lbl == label]
        per[label] = {"n": len(ts), "median_s": round(statistics.median(ts), 3),
                      "p99_s": round(percentile(ts, 0.99), 3)}
    return Report(gradings, answers, start, end, round(statistics.median(all_t), 3),
                  round(percentile(all_t, 0.99), 3), round(statistics.median(all_t[:half]), 3),
                  round(statistics.median(all_t[half:] or all_t), 3), per,
                  round(1000 * statistics.median(answer_times), 2),
                  round(1000 * percentile(answer_times, 0.99), 2), verdicts)


def table(report: Report) -> str:
    s, e = report.start, report.end
    rows = [("open descriptors (this process / service)", f"{s.fds_self} / {s.fds_service}",
             f"{e.fds_self} / {e.fds_service}"),
            ("processes of the soak (service, workers, strays)", str(s.processes), str(e.processes)),
            ("inferview-* temporary folders", str(s.folders), str(e.folders)),
            ("resident memory, MB (this process / service)", f"{s.rss_self_mb} / {s.rss_service_mb}",
             f"{e.rss_self_mb} / {e.rss_service_mb}")]
    out = [f"{'':52s} {'start':>16s} {'end':>16s}"]
    out += [f"{a:52s} {b:>16s} {c:>16s}" for a, b, c in rows]
    out.append(f"memory growth: {100 * report.memory_growth:+.1f} %")
    out.append(f"{report.gradings} gradings: median {report.grading_median_s:.2f} s, p99 "
               f"{report.grading_p99_s:.2f} s; first half {report.first_half_median_s:.2f} s, "
               f"second half {report.second_half_median_s:.2f} s; verdicts {report.verdicts}")
    for label, v in report.per_submission.items():
        out.append(f"  {label:36s} n={int(v['n']):4d}  median {v['median_s']:.2f} s  "
                   f"p99 {v['p99_s']:.2f} s")
    out.append(f"{report.answers} practice answers: median {report.answer_median_ms:.1f} ms, p99 "
               f"{report.answer_p99_ms:.1f} ms")
    problems = report.problems()
    out.append("goals met" if not problems else "goals missed: " + "; ".join(problems))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gradings", type=int, default=500)
    parser.add_argument("--answers", type=int, default=2000)
    parser.add_argument("--json", type=Path, default=None, metavar="OUT")
    args = parser.parse_args(argv)
    if not sys.platform.startswith("linux"):
        print("soak: needs Linux (/proc)", file=sys.stderr)
        return 2
    if args.gradings < 1 or args.answers < 0:
        print("soak: --gradings must be at least 1 and --answers not negative", file=sys.stderr)
        return 2
    report = soak(args.gradings, args.answers, log=sys.stderr)
    print(table(report))
    if args.json is not None:
        args.json.write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
    return 0 if not report.problems() else 1


if __name__ == "__main__":
    sys.exit(main())

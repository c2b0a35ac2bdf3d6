"""The batch's report: a typed row per candidate, sorting, CSV, JSON and the terminal table.

A row either carries the verdict the engine gave (with its checks, time, host, device and seed) or
says ``not graded`` and why: a submission that could not be graded is never given a verdict.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any

from inferview.batch.discover import Submission
from inferview.batch.task import TaskOutcome
from inferview.grading import VERDICT_ORDER, VERDICT_STYLE

SCHEMA = 1
"""The version of the batch JSON object."""
NOT_GRADED = "not graded"
SORT_KEYS = ("candidate", "verdict", "time", "checks")
"""``--sort`` choices: by name; best verdict first; fastest first; most checks passed first.
Not-graded rows come last in every order but ``candidate``."""
CSV_COLUMNS = ("candidate", "file", "verdict", "checks_passed", "checks_total", "duration_s",
               "host", "device", "seed", "reason")
_VERDICT_RANK = {v.value: i for i, v in enumerate(reversed(VERDICT_ORDER))}  # passed first


@dataclass
class BatchRow:
    """One candidate's line of the report."""

    candidate: str
    file: str
    """The submission's path as given on the command line's folder."""
    verdict: str | None = None
    """The engine's verdict, or None when not graded."""
    checks_passed: int = 0
    checks_total: int = 0
    duration_s: float | None = None
    host: str = ""
    device: str = ""
    seed: int | None = None
    reason: str | None = None
    """Why it was not graded, or None."""
    result: dict[str, Any] | None = field(default=None, repr=False)
    """The full schema-1 result object (``inferview grade --json``'s), or None."""

    @property
    def graded(self) -> bool:
        return self.verdict is not None

    @property
    def status(self) -> str:
        """The verdict, or ``not graded``."""
        return self.verdict if self.verdict is not None else NOT_GRADED

    @classmethod
    def from_outcome(cls, sub: Submission, outcome: TaskOutcome) -> BatchRow:
        if outcome.result is None:
            return cls.not_graded(sub, outcome.error or "no result", host=outcome.host)
        r = outcome.result
        checks = r.get("checks") or []
        return cls(sub.candidate, str(sub.path), str(r["verdict"]),
                   sum(1 for c in checks if c.get("status") == "passed"), len(checks),
                   float(r["duration_s"]), outcome.host, outcome.device, int(r["seed"]),
                   None, r)

    @classmethod
    def not_graded(cls, sub: Submission, reason: str, *, host: str = "") -> BatchRow:
        return cls(sub.candidate, str(sub.path), host=host, reason=reason)

    def to_json(self) -> dict[str, Any]:
        return {"candidate": self.candidate, "file": self.file, "graded": self.graded,
                "verdict": self.verdict, "checks_passed": self.checks_passed,
                "checks_total": self.checks_total,
                "duration_s": None if self.duration_s is None else round(self.duration_s, 3),
                "host": self.host, "device": self.device, "seed": self.seed,
                "reason": self.reason, "result": self.result}


def sort_rows(rows: list[BatchRow], key: str = "candidate") -> list[BatchRow]:
    """``rows`` in ``key``'s order (one of :data:`SORT_KEYS`), ties by candidate."""
    if key not in SORT_KEYS:
        raise ValueError(f"unknown sort key {key!r} (use {', '.join(SORT_KEYS)})")
    by_name = sorted(rows, key=lambda r: (r.candidate.casefold(), r.candidate))
    if key == "candidate":
        return by_name
    if key == "verdict":
        return sorted(by_name, key=lambda r: _VERDICT_RANK.get(r.status, len(_VERDICT_RANK)))
    if key == "time":
        return sorted(by_name, key=lambda r: (not r.graded, r.duration_s or 0.0))
    return sorted(by_name, key=lambda r: (not r.graded, -r.checks_passed, r.checks_total))


@dataclass
class BatchReport:
    """Every row of one batch."""

    challenge: str
    runner: str
    """``local`` or ``ray:ADDRESS``."""
    rows: list[BatchRow]

    @property
    def all_graded(self) -> bool:
        return all(r.graded for r in self.rows)

    def counts(self) -> dict[str, int]:
        """How many rows have each status (verdicts and ``not graded``), zero counts left out."""
        out: dict[str, int] = {}
        for r in self.rows:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    def to_json(self, sort: str = "candidate") -> dict[str, Any]:
        return {"schema": SCHEMA, "challenge": self.challenge, "runner": self.runner,
                "counts": self.counts(),
                "rows": [r.to_json() for r in sort_rows(self.rows, sort)]}

    def to_csv(self, sort: str = "candidate") -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(CSV_COLUMNS)
        for r in sort_rows(self.rows, sort):
            w.writerow([r.candidate, r.file, r.status, r.checks_passed if r.graded else "",
                        r.checks_total if r.graded else "",
                        "" if r.duration_s is None else f"{r.duration_s:.3f}", r.host, r.device,
                        "" if r.seed is None else r.seed, r.reason or ""])
        return buf.getvalue()

    def render(self, console: Any, sort: str = "candidate") -> None:
        """The table on a rich ``console``, then one summary line."""
        from rich.markup import escape
        from rich.table import Table

        table = Table(title=f"{self.challenge} · {len(self.rows)} submissions · {self.runner}",
                      title_justify="left")
        for name, justify in (("candidate", "left"), ("verdict", "left"), ("checks", "right"),
                              ("time", "right"), ("host", "left"), ("device", "left"),
                              ("seed", "right")):
            table.add_column(name, justify=justify)  # type: ignore[arg-type]
        for r in sort_rows(self.rows, sort):
            if r.graded:
                table.add_row(escape(r.candidate),
                              f"[{VERDICT_STYLE.get(r.status, 'bold')}]{r.status}[/]",
                              f"{r.checks_passed}/{r.checks_total}", f"{r.duration_s:.1f} s",
                              escape(r.host), escape(r.device), str(r.seed))
            else:
                table.add_row(escape(r.candidate),
                              f"[bold yellow]{NOT_GRADED}[/]: {escape(r.reason or '')}", "", "",
                              escape(r.host), "", "")
        console.print(table)
        console.print(", ".join(f"{n} {status}" for status, n in sorted(
            self.counts().items(), key=lambda kv: _VERDICT_RANK.get(kv[0], len(_VERDICT_RANK)))))

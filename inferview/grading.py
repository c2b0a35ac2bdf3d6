"""The result of grading a submission: typed, torch-free, and the same everywhere.

The engine produces a :class:`GradeResult`; the CLI prints it, the grading service sends it to the
app, the progress store records it and the results panel shows it. ``to_json()`` is the schema-1
object of ``docs/grading-result.md`` exactly, and ``from_json()`` reads it back (the golden files
in ``tests/golden/`` prove the round trip). Nothing here imports torch, so the app can use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

SCHEMA = 1
"""The version of the JSON object."""


class GradingUsageError(ValueError):
    """Bad input to grading: an unknown challenge, a missing file, a device that is not there.
    Exit status 2 in the CLI; ``str()`` is the message."""


class Verdict(str, Enum):
    """The run's verdict (``docs/grading-result.md``)."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    FORBIDDEN = "forbidden"

    def __str__(self) -> str:
        return self.value


class CheckStatus(str, Enum):
    """One check's status."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return self.value


VERDICT_STYLE: dict[str, str] = {
    "passed": "bold green", "failed": "bold red", "error": "bold red", "timeout": "bold yellow",
    "crashed": "bold magenta", "forbidden": "bold magenta",
}
"""How a verdict is shown (rich styles), in the CLI and in the app alike."""
CHECK_MARK: dict[str, tuple[str, str]] = {
    "passed": ("✓", "green"), "failed": ("✗", "red"), "error": ("!", "red"), "skipped": ("–", "dim"),
}
"""Each check status's mark and style."""
VERDICT_EXPLAINED: dict[str, str] = {
    "passed": "every check passed",
    "failed": "a check found a wrong result",
    "error": "the file could not be loaded, or it raised",
    "timeout": "the run took too long (an infinite loop?)",
    "crashed": "the worker process died (segfault or out of memory)",
    "forbidden": "the submission used an API this challenge forbids",
}
"""One phrase per verdict for the user."""

VERDICT_ORDER: tuple[Verdict, ...] = (Verdict.FORBIDDEN, Verdict.TIMEOUT, Verdict.CRASHED,
                                      Verdict.ERROR, Verdict.FAILED, Verdict.PASSED)
"""Most severe first: when several checks end a run differently, the first of these wins."""


@dataclass
class CheckResult:
    """One entry of the result's ``checks`` list."""

    name: str
    status: CheckStatus | str
    message: str = ""
    counterexample: str | None = None
    hint: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Data for the engine and its tests (never in the JSON)."""

    def __post_init__(self) -> None:
        self.status = CheckStatus(self.status)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status.value, "message": self.message,
                "counterexample": self.counterexample, "hint": self.hint}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckResult:
        return cls(str(data["name"]), CheckStatus(data["status"]), str(data.get("message") or ""),
                   data.get("counterexample"), data.get("hint"))


@dataclass
class GradeResult:
    """The outcome of one grading run."""

    challenge: str
    verdict: Verdict | str
    backend: str
    """``cpu`` or ``cuda``: where the solution ran."""
    seed: int
    duration_s: float
    checks: list[CheckResult] = field(default_factory=list)
    stdout: str = ""
    """What the solution printed on standard output (trimmed), never in the JSON."""
    stderr: str = ""
    """What it printed on standard error (trimmed), never in the JSON."""
    cancelled: bool = False
    host: str | None = None
    """Where it was graded when not on this machine: the ``--remote`` host as given (additive
    JSON field, absent for a local grading)."""
    device: str | None = None
    """With ``host``: the device the solution ran on there, a GPU's name or ``cpu``."""

    def __post_init__(self) -> None:
        self.verdict = Verdict(self.verdict)

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASSED

    def to_json(self) -> dict[str, Any]:
        """The schema-1 object."""
        return {
            "schema": SCHEMA,
            "challenge": self.challenge,
            "verdict": self.verdict.value,
            "backend": self.backend,
            "seed": self.seed,
            "duration_s": round(self.duration_s, 3),
            "checks": [c.to_json() for c in self.checks],
            **{k: v for k, v in (("host", self.host), ("device", self.device)) if v is not None},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], *, stdout: str = "", stderr: str = "") -> GradeResult:
        """Read a schema-1 object (``ValueError`` for another schema or a missing field)."""
        if data.get("schema") != SCHEMA:
            raise ValueError(f"not a schema-{SCHEMA} grading result (schema {data.get('schema')!r})")
        try:
            return cls(str(data["challenge"]), Verdict(data["verdict"]), str(data["backend"]),
                       int(data["seed"]), float(data["duration_s"]),
                       [CheckResult.from_json(c) for c in data["checks"]], stdout, stderr,
                       host=_optional_str(data.get("host")), device=_optional_str(data.get("device")))
        except KeyError as exc:
            raise ValueError(f"grading result without {exc.args[0]!r}") from None

    def counts(self) -> dict[str, int]:
        """How many checks have each status (``passed``, ``failed``, ``error``, ``skipped``)."""
        out = {s.value: 0 for s in CheckStatus}
        for c in self.checks:
            out[c.status.value] += 1
        return out

    def output(self, limit: int = 4000) -> str:
        """What the solution printed, stdout then stderr, each trimmed to its last ``limit``
        characters and labelled, or "" when it printed nothing."""
        parts = []
        for label, text in (("stdout", self.stdout), ("stderr", self.stderr)):
            text = text.rstrip()
            if text:
                if len(text) > limit:
                    text = "…" + text[-limit:]
                parts.append(f"[{label}]\n{text}")
        return "\n".join(parts)


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)

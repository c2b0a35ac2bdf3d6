"""A grading result, check by check: status, message, the minimal counterexample and its hint.

Takes the grading JSON object of CHALLENGES.md (``verdict``, ``backend``, ``seed``,
``duration_s``, ``checks``) through its ``result`` attribute; used by the challenge screen and the
mock interview's report.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

VERDICT_STYLE = {
    "passed": "bold green",
    "failed": "bold red",
    "error": "bold red",
    "timeout": "bold yellow",
    "crashed": "bold magenta",
    "forbidden": "bold magenta",
}
CHECK_MARK = {"passed": ("✓", "green"), "failed": ("✗", "red"), "error": ("!", "red"), "skipped": ("–", "dim")}

VERDICT_EXPLAINED = {
    "passed": "every check passed",
    "failed": "a check found a wrong result",
    "error": "the file could not be loaded, or it raised",
    "timeout": "the run took too long (an infinite loop?)",
    "crashed": "the worker process died (segfault or out of memory)",
    "forbidden": "the submission used an API this challenge forbids",
}


def verdict_text(result: dict[str, Any]) -> Text:
    """One line: verdict, backend, duration and seed."""
    verdict = str(result.get("verdict", "error"))
    text = Text(verdict.upper(), style=VERDICT_STYLE.get(verdict, "bold"))
    details = []
    if result.get("backend"):
        details.append(str(result["backend"]))
    if result.get("duration_s") is not None:
        details.append(f"{float(result['duration_s']):.1f} s")
    if result.get("seed") is not None:
        details.append(f"seed {result['seed']}")
    if details:
        text.append("  " + " · ".join(details), style="dim")
    return text


def check_renderable(check: dict[str, Any]) -> Group:
    """One check: a status line, then (when it did not pass) message, counterexample and hint."""
    status = str(check.get("status", "error"))
    mark, style = CHECK_MARK.get(status, ("?", "yellow"))
    parts: list[Any] = []
    head = Text(f"{mark} ", style=style)
    head.append(str(check.get("name", "")), style="bold" if status != "passed" else "")
    parts.append(head)
    if status != "passed":
        if check.get("message"):
            parts.append(Text(str(check["message"]), style="default"))
        if check.get("counterexample"):
            parts.append(Text("smallest failing input:", style="italic dim"))
            parts.append(Text(str(check["counterexample"]), style="cyan"))
        if check.get("hint"):
            hint = Text("hint: ", style="bold yellow")
            hint.append(str(check["hint"]), style="yellow")
            parts.append(hint)
    return Group(*parts)


class ResultsPanel(VerticalScroll):
    """Scrollable list of check results; set ``result`` to show a grading run."""

    DEFAULT_CSS = """
    ResultsPanel {
        height: 1fr;
        padding: 0 1;
    }
    ResultsPanel > .verdict {
        margin-bottom: 1;
    }
    ResultsPanel > .check {
        margin-bottom: 1;
    }
    ResultsPanel > .check.passed {
        margin-bottom: 0;
    }
    ResultsPanel > .empty {
        color: $text-muted;
    }
    """

    result: reactive[dict[str, Any] | None] = reactive(None, always_update=True, init=False)
    """The grading result to show (``None``: nothing graded yet)."""

    def compose(self) -> ComposeResult:
        yield Static("Not graded yet: ctrl+r runs the tests.", classes="empty")

    def watch_result(self, result: dict[str, Any] | None) -> None:
        self.remove_children()
        if result is None:
            self.mount(Static("Not graded yet: ctrl+r runs the tests.", classes="empty"))
            return
        verdict = str(result.get("verdict", "error"))
        head = verdict_text(result)
        explained = VERDICT_EXPLAINED.get(verdict)
        checks = list(result.get("checks") or [])
        passed = sum(1 for c in checks if c.get("status") == "passed")
        line2 = Text(f"{passed}/{len(checks)} checks passed", style="dim")
        if explained and verdict != "passed":
            line2 = Text(explained, style="dim")
            line2.append(f" · {passed}/{len(checks)} checks passed", style="dim")
        widgets = [Static(Group(head, line2), classes="verdict")]
        if result.get("message"):
            widgets.append(Static(Text(str(result["message"])), classes="check"))
        # failing checks first: they are what the user needs to read
        order = sorted(checks, key=lambda c: c.get("status") == "passed")
        widgets += [Static(check_renderable(c), classes="check passed" if c.get("status") == "passed" else "check")
                    for c in order]
        self.mount_all(widgets)
        self.scroll_home(animate=False)

"""A grading result, check by check: status, message, the minimal counterexample and its hint.

Takes an ``inferview.grading.GradeResult`` through its ``result`` attribute; used by the challenge
screen and the mock interview's report.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from inferview.grading import CHECK_MARK, VERDICT_EXPLAINED, VERDICT_STYLE, CheckResult, GradeResult

__all__ = ["ResultsPanel", "check_renderable", "summary", "verdict_text"]


def verdict_text(result: GradeResult) -> Text:
    """One line: verdict, backend, duration and seed."""
    verdict = result.verdict.value
    text = Text(verdict.upper(), style=VERDICT_STYLE.get(verdict, "bold"))
    details = [result.backend, f"{result.duration_s:.1f} s", f"seed {result.seed}"]
    text.append("  " + " · ".join(details), style="dim")
    return text


def summary(result: GradeResult) -> str:
    """"10 passed, 2 need a CUDA GPU", "3 passed, 1 failed, 2 not run"."""
    counts = result.counts()
    cuda = sum(1 for c in result.checks if c.status.value == "skipped" and "CUDA" in c.message)
    parts = [f"{counts['passed']} passed"]
    if counts["failed"]:
        parts.append(f"{counts['failed']} failed")
    if counts["error"]:
        parts.append(f"{counts['error']} with an error")
    if cuda:
        parts.append(f"{cuda} need{'s' if cuda == 1 else ''} a CUDA GPU")
    if counts["skipped"] - cuda:
        parts.append(f"{counts['skipped'] - cuda} not run")
    return ", ".join(parts)


def check_renderable(check: CheckResult, show_hint: bool = True) -> Group:
    """One check: a status line, then (when it did not pass) message, counterexample and hint."""
    status = check.status.value
    mark, style = CHECK_MARK.get(status, ("?", "yellow"))
    parts: list[Any] = []
    head = Text(f"{mark} ", style=style)
    head.append(check.name, style="bold" if status != "passed" else "")
    parts.append(head)
    if status != "passed":
        if check.message:
            parts.append(Text(check.message, style="default"))
        if check.counterexample:
            parts.append(Text("smallest failing input:", style="italic dim"))
            parts.append(Text(check.counterexample, style="cyan"))
        if check.hint and show_hint:
            hint = Text("hint: ", style="bold yellow")
            hint.append(check.hint, style="yellow")
            parts.append(hint)
    return Group(*parts)


class ResultsPanel(VerticalScroll):
    """Scrollable list of check results; set ``result`` to show a grading run."""

    DEFAULT_CSS = """
    ResultsPanel {
        height: 1fr;
        padding: 0 1;
        overflow-x: hidden;
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

    result: reactive[GradeResult | None] = reactive(None, always_update=True, init=False)
    """The grading result to show (``None``: nothing graded yet)."""
    show_hints: bool = True
    """Off in a mock interview: an interviewer gives no hints."""

    def compose(self) -> ComposeResult:
        yield Static("Not graded yet: ctrl+r runs the tests.", classes="empty")

    async def watch_result(self, result: GradeResult | None) -> None:
        # old checks removed and new ones mounted in one update, then scrolled to the top once they
        # are laid out: no frame with half a result, no jump when the heights arrive
        with self.app.batch_update():
            await self.remove_children()
            await self.mount_all(self._widgets(result))
        self.scroll_home(animate=False)
        self.call_after_refresh(self.scroll_home, animate=False)

    def _widgets(self, result: GradeResult | None) -> list[Static]:
        if result is None:
            return [Static("Not graded yet: ctrl+r runs the tests.", classes="empty")]
        verdict = result.verdict.value
        line2 = Text(summary(result), style="dim")
        explained = VERDICT_EXPLAINED.get(verdict)
        if explained and verdict != "passed":
            line2 = Text(f"{explained} · {summary(result)}", style="dim")
        widgets = [Static(Group(verdict_text(result), line2), classes="verdict")]
        # failing checks first: they are what the user needs to read
        order = sorted(result.checks, key=lambda c: c.status.value == "passed")
        widgets += [Static(check_renderable(c, self.show_hints),
                           classes="check passed" if c.status.value == "passed" else "check")
                    for c in order]
        output = result.output(limit=2000)
        if output:
            widgets.append(Static(Group(Text("What the solution printed:", style="italic dim"),
                                        Text(output, style="dim")), classes="check"))
        return widgets

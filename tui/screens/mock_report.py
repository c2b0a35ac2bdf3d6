"""The mock interview's scored report: per topic, per item, what was missed, what to review."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Markdown

from inferview import paths
from inferview.mock.report import Report


class MockReportScreen(Screen[None]):
    """The scored report: per topic, per item, what was missed, the challenge, what to review."""

    CSS_PATH = "../mock.tcss"
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("ctrl+s", "export", "Save .md"),
    ]

    def __init__(self, report: Report) -> None:
        super().__init__()
        self.report = report

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="report-scroll"):
            yield Markdown(id="report-md")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"Mock interview report · {100 * self.report.score:.0f}%"
        lib = self.app.services.get_library()
        self.query_one("#report-md", Markdown).update(self.report.to_markdown(lib))
        self.query_one("#report-scroll").focus()

    def action_export(self) -> None:
        folder = paths.data_dir() / "reports"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"mock-{self.report.session_id}.md"
        target.write_text(self.report.to_markdown(self.app.services.get_library()), encoding="utf-8")
        self.notify(f"Saved {target}")

    def action_back(self) -> None:
        self.app.pop_screen()

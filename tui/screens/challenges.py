"""The challenge list: status (new / failed / passed), how long its fastest passing grading took,
the backend it was graded on, and the highlighted challenge's id for the CLI."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

STATUS_STYLE = {"new": "dim", "failed": "bold red", "passed": "bold green"}


class ChallengesScreen(Screen[None]):
    """Every challenge, built-in and the user's own; enter opens one."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="challenge-table", cursor_type="row")
        yield Static(id="challenge-summary", classes="muted")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Challenges"
        table = self.query_one(DataTable)
        table.border_title = "Coding challenges — enter to open"
        # the other columns, paddings and borders take 46 cells; titles get the rest (at least 24)
        self.title_width = max(24, self.app.size.width - 46)
        table.add_column("Challenge", key="title", width=self.title_width)
        for label, key in (("Level", "level"), ("Status", "status"), ("Graded in", "best"),
                           ("On", "backend"), ("Tries", "tries")):
            table.add_column(label, key=key)
        self.refresh_data()
        table.focus()
        self._warm_grading()

    @work(thread=True, exclusive=True, exit_on_error=False, group="prepare")
    def _warm_grading(self) -> None:
        """Whoever opens the list is about to open a challenge: start the grading service now, so
        that its torch import runs while a challenge is picked and read (the first challenge's
        worker serves any CPU challenge)."""
        challenges = self.app.services.get_library().challenges_in_order()
        if challenges:
            self.app.services.warm_grading(challenges[0].folder)

    def on_screen_resume(self) -> None:
        self.refresh_data()

    def refresh_data(self) -> None:
        """Re-read statuses from the store."""
        library = self.app.services.get_library()
        status = self.app.services.get_store().challenge_status()
        table = self.query_one(DataTable)
        keep = table.cursor_row
        table.clear()
        for ch in library.challenges_in_order():
            cid = ch.id
            s = status.get(cid, {"status": "new", "best_duration_s": None, "backend": None, "attempts": 0})
            best = f"{s['best_duration_s']:.1f}s" if s.get("best_duration_s") is not None else "—"
            title = ch.spec.title if ch.builtin else f"{ch.spec.title} (yours)"
            if len(title) > self.title_width:
                title = title[: self.title_width - 1] + "…"
            table.add_row(
                Text(title),
                Text(ch.spec.difficulty),
                Text(s["status"], style=STATUS_STYLE.get(s["status"], "")),
                Text(best, justify="right"),
                Text(s.get("backend") or "—"),
                Text(str(s.get("attempts", 0)), justify="right"),
                key=cid,
            )
        if library.challenges:
            table.move_cursor(row=min(keep, len(library.challenges) - 1))
        passed = sum(1 for cid in library.challenges if status.get(cid, {}).get("status") == "passed")
        summary = f" {passed} of {len(library.challenges)} passed."
        if not library.challenges:
            summary = " No challenges found; run `inferview lint` to see why."
        self._summary = summary
        self._show_summary()

    def _show_summary(self) -> None:
        """The pass count, and the highlighted challenge's id as the CLI takes it."""
        table = self.query_one(DataTable)
        text = self._summary
        if table.row_count and 0 <= table.cursor_row < table.row_count:
            cid = table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value
            text += f"  id {cid} · inferview grade {cid} FILE"
        self.query_one("#challenge-summary", Static).update(text)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if getattr(self, "_summary", None) is not None:
            self._show_summary()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.app.open_challenge(str(event.row_key.value))

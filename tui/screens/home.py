"""Home: topics with mastery bars, reviews due, streak, recent attempts, and a key to every mode."""

from __future__ import annotations

import importlib.util

from inferview.tui.messages import LibraryLoaded
from inferview.tui.progress import TopicRow, ago, recent_items, topic_rows
from inferview.tui.widgets.bars import bar
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

MOCK_MODULE = "inferview.tui.screens.mock"


class HomeScreen(Screen[None]):
    """The first screen: where you stand, and where to go next."""

    BINDINGS = [
        Binding("n", "next", "Next", show=False),
        Binding("p", "practice", "Practice"),
        Binding("c", "challenges", "Challenges"),
        Binding("m", "mock", "Mock"),
        Binding("k", "calculator", "Calc"),
        Binding("s", "stats", "Stats"),
        Binding("e", "errors", "Errors"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="home-main"):
            with Vertical(id="topics-pane"):
                yield DataTable(id="topics", cursor_type="row", zebra_stripes=False)
            with Vertical(id="today-pane"):
                yield Static(id="today")
                yield Static(id="recent")
        yield Static(id="suggestion")
        yield Static(id="notices")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Home"
        table = self.query_one("#topics", DataTable)
        table.border_title = "Topics — enter to practise one"
        table.add_column("Topic", key="topic")
        table.add_column("Mastery", key="mastery")
        table.add_column("Due", key="due")
        self.query_one("#today-pane").border_title = "Today"
        store = self.app.services.get_store()
        if store.notice:
            self.notify(store.notice, title="Progress store repaired", severity="warning", timeout=20)
        table.focus()
        if self.app.services.library_ready:
            self.refresh_data()
        else:
            self.query_one("#today", Static).update(Text("Loading questions and challenges…", style="dim"))
            self.call_after_refresh(self._load_library)

    @work(thread=True, exclusive=True, exit_on_error=False, group="library")
    def _load_library(self) -> None:
        """Parse and validate every bank and challenge off the UI thread (YAML is slow to parse)."""
        try:
            self.app.services.get_library()
        except Exception as exc:  # noqa: BLE001 - shown on Home; the app stays usable
            self.post_message(LibraryLoaded(f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(LibraryLoaded())

    def on_library_loaded(self, message: LibraryLoaded) -> None:
        if message.error:
            self.query_one("#today", Static).update(Text(f"Could not load content: {message.error}", style="red"))
            return
        self.refresh_data()

    def on_screen_resume(self) -> None:
        if self.app.services.library_ready:
            self.refresh_data()

    def on_resize(self) -> None:
        # the Recent titles are cut to the pane's width: cut them again once the new layout is done
        if self.app.services.library_ready:
            self.call_after_refresh(self.refresh_data)

    def refresh_data(self) -> None:
        """Re-read the store and the library and redraw every panel."""
        services = self.app.services
        library = services.get_library()
        store = services.get_store()
        now = services.now()
        rows = topic_rows(library, store.cards(), store.due_question_ids(now), now)
        self._fill_topics(rows)
        due_total = len(store.due_question_ids(now))
        new_total = sum(r.questions - r.reviewed for r in rows)
        status = store.challenge_status()
        passed = sum(1 for s in status.values() if s["status"] == "passed")
        today = Text()
        today.append(f"{due_total}", style="bold yellow" if due_total else "bold")
        today.append(" review due\n" if due_total == 1 else " reviews due\n")
        today.append(f"{new_total}", style="bold")
        today.append(" new question\n" if new_total == 1 else " new questions\n")
        today.append(f"{store.streak(now.date())}", style="bold")
        today.append(" day streak\n")
        today.append(f"{passed}/{len(library.challenges)}", style="bold")
        today.append(" challenges passed")
        self.query_one("#today", Static).update(today)
        recent = Text("Recent\n", style="bold")
        items = recent_items(store.question_attempts(limit=5), store.submissions(limit=5), library)
        if not items:
            recent.append("nothing yet — press p", style="dim")
        width = max(12, self.query_one("#recent", Static).content_size.width or 22)
        for item in items:
            mark, style = {True: ("✓", "green"), False: ("✗", "red")}.get(item.correct, ("·", "dim"))
            recent.append(f"{mark} ", style=style)
            recent.append(_fit(item.title, width - 2) + "\n")
            when = ago(item.created_at, now, short=True)
            recent.append("  " + _fit(item.ref, width - 5 - len(when)) + " · " + when + "\n", style="dim")
        recent.rstrip()
        self.query_one("#recent", Static).update(recent)
        from inferview.progress import suggest_next

        self.suggestion = suggest_next(store, library, now)
        self.query_one("#suggestion", Static).update(Text.assemble(("Next: ", "bold"), self.suggestion.text,
                                                                   (" (n)", "dim")))
        notices = self.query_one("#notices", Static)
        lines = []
        if library.errors:
            n = len(library.errors)
            lines.append(f"[b]{n} content problem{'s' if n != 1 else ''}[/b] — some content was skipped; press e")
        if store.notice:
            lines.append(f"[b]Store:[/b] {store.notice}")
        notices.update("\n".join(lines))
        notices.display = bool(lines)
        self.refresh_bindings()

    def _fill_topics(self, rows: list[TopicRow]) -> None:
        table = self.query_one("#topics", DataTable)
        keep = table.cursor_row
        table.clear()
        for r in rows:
            mastery = bar(r.mastery, 8)
            mastery.append(f" {round(r.mastery * 100):>3}%")
            due = Text(str(r.due), style="bold yellow") if r.due else Text("·", style="dim")
            table.add_row(Text(r.title), mastery, due, key=r.topic)
        if rows:
            table.move_cursor(row=min(keep, len(rows) - 1))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "errors":
            services = self.app.services
            return services.library_ready and bool(services.get_library().errors)
        if action == "mock":
            return importlib.util.find_spec(MOCK_MODULE) is not None
        return True

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.app.start_practice(str(event.row_key.value))

    def action_next(self) -> None:
        """Do what the suggestion says: reviews, the failed challenge, or the weakest topic."""
        s = self.suggestion
        if s.action == "challenge" and s.target:
            self.app.open_challenge(s.target)
        elif s.action == "practice" and s.target:
            self.app.start_practice(s.target)
        else:
            self.app.start_practice(None)

    def action_practice(self) -> None:
        self.app.start_practice(None)

    def action_challenges(self) -> None:
        self.app.push_screen("challenges")

    def action_calculator(self) -> None:
        self.app.push_screen("calculator")

    def action_stats(self) -> None:
        self.app.push_screen("stats")

    def action_mock(self) -> None:
        module = importlib.import_module(MOCK_MODULE)
        self.app.push_screen(module.MockScreen())

    def action_errors(self) -> None:
        from inferview.tui.screens.dialogs import ErrorsScreen

        self.app.push_screen(ErrorsScreen([str(e) for e in self.app.services.get_library().errors]))


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells, with an ellipsis when it was longer."""
    return text if len(text) <= width else text[: max(0, width - 1)].rstrip() + "…"

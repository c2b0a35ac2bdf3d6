"""Stats: reviews and accuracy over time per topic, mastery per topic, and challenge history."""

from __future__ import annotations

from datetime import timedelta

from inferview.tui.progress import ago, daily_series, topic_accuracy, topic_rows
from inferview.tui.widgets.bars import bar
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Select, Static, TabbedContent, TabPane
from textual_plotext import PlotextPlot

DAYS = 14
ALL = "__all__"
TABS = ("topics", "activity", "history")


class StatsScreen(Screen[None]):
    """Progress over time."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("t", "next_tab", "Next tab"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(id="stats-tabs", initial="topics"):
            with TabPane("Topics", id="topics"):
                yield DataTable(id="stats-topics", cursor_type="row")
            with TabPane("Activity", id="activity"):
                with Vertical():
                    yield Select([], prompt="All topics", id="stats-topic", allow_blank=True)
                    yield PlotextPlot(id="plot-activity")
            with TabPane("Challenges", id="history"):
                yield Static("No challenge graded yet: open one from Challenges (c on Home) and press "
                             "ctrl+r.", id="history-empty")
                yield DataTable(id="stats-history", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Stats"
        topics = self.query_one("#stats-topics", DataTable)
        for label in ("Topic", "Tries", "Right", "Mastery", "Seen"):
            topics.add_column(label, key=label.lower())
        history = self.query_one("#stats-history", DataTable)
        for label in ("When", "Challenge", "Verdict", "Time", "On"):
            history.add_column(label, key=label.lower())
        library = self.app.services.get_library()
        select = self.query_one("#stats-topic", Select)
        select.set_options([(library.topic_title(t), t) for t in library.topics])
        self.refresh_data()
        topics.focus()

    def on_screen_resume(self) -> None:
        self.refresh_data()

    def refresh_data(self) -> None:
        """Re-read the store and redraw every tab."""
        services = self.app.services
        library, store, now = services.get_library(), services.get_store(), services.now()
        attempts = store.question_attempts(since=now - timedelta(days=365))
        acc = topic_accuracy(attempts)
        table = self.query_one("#stats-topics", DataTable)
        table.clear()
        for r in topic_rows(library, store.cards(), store.due_question_ids(now), now):
            tries, graded, right = acc.get(r.topic, (0, 0, 0))
            mastery = bar(r.mastery, 8)
            mastery.append(f" {round(r.mastery * 100):>3}%")
            table.add_row(
                Text(r.title),
                Text(str(tries), justify="right"),
                Text(f"{round(100 * right / graded)}%" if graded else "—", justify="right"),
                mastery,
                Text(f"{r.reviewed}/{r.questions}", justify="right"),
                key=r.topic,
            )
        history = self.query_one("#stats-history", DataTable)
        history.clear()
        submissions = store.submissions(limit=200)
        self.query_one("#history-empty", Static).display = not submissions
        for s in submissions:
            verdict = str(s["verdict"])
            history.add_row(
                Text(ago(s["created_at"], now), style="dim"),
                Text(library.challenges[s["challenge_id"]].spec.title
                     if s["challenge_id"] in library.challenges else s["challenge_id"]),
                Text(verdict, style="green" if verdict == "passed" else "red"),
                Text(f"{s['duration_s']:.1f}s" if s["duration_s"] is not None else "—", justify="right"),
                Text(s["backend"] or "—"),
            )
        self._plot()

    def _plot(self) -> None:
        services = self.app.services
        store, now = services.get_store(), services.now()
        value = self.query_one("#stats-topic", Select).value
        topic = value if isinstance(value, str) and value != ALL else None
        attempts = store.question_attempts(topic=topic, since=now - timedelta(days=DAYS + 1))
        labels, counts, accuracy = daily_series(attempts, DAYS, now.date())
        xs = list(range(1, DAYS + 1))
        ticks = xs[::3], labels[::3]

        plot = self.query_one("#plot-activity", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        if attempts:
            plt.title(f"Reviews per day (bars, left) and accuracy % (line, right), last {DAYS} days")
        else:
            plt.title(f"No reviews in the last {DAYS} days: press p on Home to practise")
        plt.bar(xs, counts, marker="hd", yside="left")
        top = max(counts + [1])
        plt.ylim(0, top, yside="left")
        step = max(1, -(-top // 5))
        plt.yticks(list(range(0, top + 1, step)), yside="left")
        pts = [(x, 100 * a) for x, a in zip(xs, accuracy, strict=True) if a is not None]
        if pts:
            plt.plot([p[0] for p in pts], [p[1] for p in pts], marker="braille", yside="right")
        plt.ylim(0, 100, yside="right")
        plt.yticks([0, 50, 100], yside="right")
        plt.xlim(0, DAYS + 1)
        plt.xticks(*ticks)
        plot.refresh()

    def on_select_changed(self, event: Select.Changed) -> None:
        self._plot()

    def action_next_tab(self) -> None:
        tabs = self.query_one("#stats-tabs", TabbedContent)
        tabs.active = TABS[(TABS.index(tabs.active) + 1) % len(TABS)] if tabs.active in TABS else TABS[0]
        pane = {"topics": "#stats-topics", "activity": "#stats-topic", "history": "#stats-history"}
        self.query_one(pane[tabs.active]).focus()

"""One coding challenge: statement, Python editor, grading in a worker, results, hints, solution.

The solution lives in a workspace file (``<workspace>/<id>/solution.py``, made from the starter the
first time), so an external editor works too: the screen polls the file's modification time and
reloads it, asking first when the editor holds unsaved edits. ``ctrl+r`` saves and grades in a
thread worker through the grading client (a separate service process: no torch here); the UI stays
live, shows a spinner and the elapsed time, and escape or ctrl+c cancels.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from inferview.tui.messages import GradingDone, GradingError, GradingProgress, SolutionChangedOnDisk
from inferview.tui.widgets.editor import PythonEditor
from inferview.tui.widgets.results import ResultsPanel, summary
from rich.text import Text
from textual import work
from textual.app import ComposeResult, SuspendNotSupported
from textual.await_complete import AwaitComplete
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Markdown, Static, TabbedContent, TabPane, TextArea
from textual.worker import get_current_worker

from inferview import paths
from inferview.grading import VERDICT_STYLE, GradeResult
from inferview.submit import Outcome

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
POLL_S = 1.0
LATE_CANCEL_S = 1.0
"""An escape this soon after grading ended was meant to cancel it: it does not also leave the screen."""
PANES = ("statement", "results", "hints")


def workspace_file(challenge_id: str, starter: str) -> Path:
    """The workspace solution file of a challenge, created from the starter if missing."""
    path = paths.workspace_dir() / challenge_id / "solution.py"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(starter, encoding="utf-8")
    return path


def _stamp(path: Path) -> tuple[int, int] | None:
    """What identifies a version of the file on disk: (mtime_ns, size); None when it is gone."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


class ChallengeScreen(Screen["Outcome | None"]):
    """Write, grade and fix one challenge. Leaving it returns (``dismiss``) the outcome of the
    last grading made on it, or None, to whoever opened it (the mock interview)."""

    BINDINGS = [
        # Not priority: these keys must queue behind the characters typed just before them in
        # the editor (which binds none of them). Cancelling must beat the editor's own escape and
        # ctrl+c (copy), so those two are priority while grading.
        Binding("ctrl+r", "grade", "Run"),
        Binding("escape", "cancel_grading", "Cancel", priority=True),
        Binding("ctrl+c", "cancel_grading", "Cancel", priority=True, show=False),
        Binding("ctrl+s", "save", "Save"),
        Binding("ctrl+g", "hint", "Hint"),
        Binding("ctrl+t", "switch_pane", "Tab"),  # statement / results / hints
        Binding("f2", "layout", "Layout", show=False),
        Binding("ctrl+o", "external_editor", "Editor"),
        Binding("ctrl+l", "solution", "Solution"),
        # one escape goes back; with unsaved edits it saves them first, and the footer says so
        Binding("escape", "back(0)", "Back"),
        Binding("escape", "back(1)", "Save+back"),
    ]

    def __init__(self, challenge_id: str, file: Path | None = None, mock_id: int | None = None,
                 time_left: Callable[[], float] | None = None) -> None:
        super().__init__()
        self.challenge_id = challenge_id
        self.mock_id = mock_id
        self.time_left = time_left
        """In a mock interview: seconds left on the interview's clock, shown in the title."""
        """Set inside a mock interview: hints and the reference solution are off, and submissions
        are recorded against the session."""
        self.file_override = file
        self.path: Path = Path()
        self.grading = False
        self._saved_text = ""
        self._disk_stamp: tuple[int, int] | None = None
        self._asking = False
        self._grade_started = 0.0
        self._grading_ended = float("-inf")
        self._spin = 0
        self._hints_shown = 0
        self.outcome: Outcome | None = None
        """The last grading made on this screen."""
        self._progress: tuple[str, str] = ("", "")
        """While grading: where it is ("check 2/5") and the name of the check running."""

    # ------------------------------------------------------------------ layout and set-up

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="challenge-main"):
            with TabbedContent(id="left", initial="statement"):
                with TabPane("Statement", id="statement"):
                    with VerticalScroll(id="statement-scroll"):
                        yield Markdown(id="statement-md")
                with TabPane("Results", id="results"):
                    yield ResultsPanel(id="results-panel")
                with TabPane("Hints", id="hints"):
                    with VerticalScroll(id="hints-scroll"):
                        yield Markdown(id="hints-md")
            with Vertical(id="right"):
                yield PythonEditor.code_editor("", language="python", id="editor")
        yield Static(id="grading-bar")
        yield Footer(compact=True)  # nine keys: at 80 columns the spaced-out footer cut off "? Help"

    def on_mount(self) -> None:
        services = self.app.services
        self.challenge = services.get_library().challenges.get(self.challenge_id)
        if self.challenge is None:
            from inferview.content.loader import find_challenge

            self.challenge = find_challenge(self.challenge_id, services.get_library())
        spec = self.challenge.spec
        self.challenge_id = spec.id
        self.title = spec.title
        self.path = self.file_override or workspace_file(spec.id, self.challenge.starter_text())
        self.sub_title = _short(self.path)
        if self.time_left is not None:
            self._show_time_left()
            self.set_interval(1.0, self._show_time_left, name="mock interview clock")
        self.query_one("#statement-md", Markdown).update(self.challenge.statement_text())
        store = services.get_store()
        self._hints_shown = min(int(store.get_setting(f"hints_shown:{spec.id}", 0) or 0), len(spec.hints))
        self._show_hints()
        self._load_from_disk()
        panel = self.query_one(ResultsPanel)
        panel.show_hints = self.mock_id is None
        # a result belongs to the content it graded: only the last grading of this very source
        for sub in store.submissions(spec.id, limit=50):
            if self.mock_id is not None and sub.get("mock_id") != self.mock_id:
                continue
            if sub.get("source", "").replace("\r\n", "\n") == self._saved_text.replace("\r\n", "\n"):
                try:
                    panel.result = GradeResult.from_json(sub["result"])
                except ValueError:
                    pass
            break
        self._update_bar()
        self.set_interval(POLL_S, self._poll_disk, name="watch solution file")
        self.query_one("#editor", TextArea).focus()
        self._prepare()

    @work(thread=True, exclusive=True, exit_on_error=False, group="prepare")
    def _prepare(self) -> None:
        """Warm the grading service for this challenge (imports torch there, not here)."""
        self.app.services.warm_grading(self.challenge.folder)

    # ------------------------------------------------------------------ the file on disk

    @property
    def editor(self) -> TextArea:
        return self.query_one("#editor", TextArea)

    @property
    def dirty(self) -> bool:
        """The editor holds edits that are not on disk."""
        return self.editor.text != self._saved_text

    def _load_from_disk(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            self.notify(f"Cannot read {self.path}: {exc}", severity="error")
            return
        self._saved_text = text
        self._disk_stamp = _stamp(self.path)
        self.editor.load_text(text)
        self.refresh_bindings()

    def save(self) -> bool:
        """Write the editor to the solution file; False (and a notification) when that fails."""
        text = self.editor.text
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(text, encoding="utf-8")
        except OSError as exc:
            self.notify(f"Could not save {self.path}: {exc}", severity="error")
            return False
        self._saved_text = text
        self._disk_stamp = _stamp(self.path)
        self.refresh_bindings()
        return True

    def _poll_disk(self) -> None:
        stamp = _stamp(self.path)
        if stamp is None or stamp == self._disk_stamp or self._asking:
            return
        self.post_message(SolutionChangedOnDisk(self.path, stamp[0]))

    def on_solution_changed_on_disk(self, message: SolutionChangedOnDisk) -> None:
        if self._asking:
            return
        try:
            text = message.path.read_text(encoding="utf-8")
        except OSError:
            return
        if text == self.editor.text:
            self._saved_text = text
            self._disk_stamp = _stamp(self.path)
            return
        if not self.dirty:
            self._load_from_disk()
            self.notify("Reloaded: the file changed on disk.")
            return
        from inferview.tui.screens.dialogs import ConfirmScreen

        self._asking = True

        def decided(choice: str | None) -> None:
            self._asking = False
            if choice == "reload":
                self._load_from_disk()
                self.notify("Reloaded the version on disk; your edits were dropped.")
            else:
                # keep the edits; the next save overwrites the disk version on purpose
                self._disk_stamp = _stamp(self.path)
                self.notify("Kept your edits; ctrl+s overwrites the file on disk.")

        self.app.push_screen(
            ConfirmScreen(
                f"{self.path.name} changed on disk, and the editor has unsaved edits.",
                [("reload", "Load the disk version"), ("keep", "Keep my edits")],
                title="File changed",
            ),
            decided,
        )

    # ------------------------------------------------------------------ grading

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_grading":
            return self.grading
        if action == "back":
            # two footer entries for escape, one shown: "Save+back" while there are unsaved edits
            dirty = self.is_mounted and bool(self.query(PythonEditor)) and self.dirty
            return not self.grading and bool(parameters and parameters[0]) == dirty
        if action == "grade":
            return True if not self.grading else None
        if action in ("hint", "solution") and self.mock_id is not None:
            return False  # an interviewer gives no hints or answers during the interview
        return True

    def action_grade(self) -> None:
        if self.grading:
            return
        if not self.save():
            return
        self.grading = True
        self._grade_started = time.monotonic()
        host = getattr(self.app.services.get_backend(), "host", None)
        self._progress = (f"connecting to {host}" if host else "starting", "")
        self._spin_timer = self.set_interval(0.1, self._update_bar, name="grading spinner")
        self._update_bar()
        self.refresh_bindings()
        self._grade(self.path)

    @work(thread=True, exclusive=True, exit_on_error=False, group="grading")
    def _grade(self, path: Path) -> None:
        """Grade in a thread through the one grading path (``inferview.submit``) and the app's
        grading service; the outcome comes back as a message."""
        from inferview.grading import GradingUsageError
        from inferview.submit import GradingCancelled, submit

        worker = get_current_worker()
        services = self.app.services

        def progress(done: int, total: int, check: str) -> None:
            if not worker.is_cancelled:
                self.post_message(GradingProgress(self.challenge_id, done, total, check))

        try:
            outcome = submit(self.challenge, path, services.get_backend(),
                             store=services.get_store(), library=services.get_library(),
                             progress=progress, cancel=lambda: worker.is_cancelled,
                             mock_id=self.mock_id, now=services.now())
        except GradingCancelled:
            return
        except GradingUsageError as exc:
            if not worker.is_cancelled:
                self.post_message(GradingError(self.challenge_id, str(exc)))
            return
        except Exception as exc:  # noqa: BLE001 - the service's failure is shown, never raised
            if not worker.is_cancelled:
                self.post_message(GradingError(self.challenge_id, str(exc) or type(exc).__name__))
            return
        if not worker.is_cancelled:
            self.post_message(GradingDone(self.challenge_id, outcome))

    def on_grading_progress(self, message: GradingProgress) -> None:
        if self.grading:
            # the service reports before each check: ``done`` checks are finished
            if message.check and message.done < message.total:
                self._progress = (f"check {message.done + 1}/{message.total}", message.check)
            else:
                self._progress = (f"{message.total}/{message.total} checks run", "collecting the result")
            self._update_bar()

    def _end_grading(self) -> None:
        self.grading = False
        self._grading_ended = time.monotonic()
        timer = getattr(self, "_spin_timer", None)
        if timer is not None:
            timer.stop()
        self.refresh_bindings()
        self._update_bar()

    def on_grading_done(self, message: GradingDone) -> None:
        self._end_grading()
        outcome = self.outcome = message.outcome
        result = outcome.result
        if outcome.record_error:
            self.notify(f"Result not saved: {outcome.record_error}", severity="error", timeout=10)
        self.query_one(ResultsPanel).result = result
        self.query_one("#left", TabbedContent).active = "results"
        verdict = result.verdict.value
        extra = ""
        if outcome.scheduled and self.mock_id is None:
            n = len(outcome.scheduled)
            extra = f"; {n} linked question{'s' if n != 1 else ''} suggested for practice"
        self.notify(f"{verdict}{extra}", title=self.challenge.spec.title,
                    severity="information" if verdict == "passed" else "warning")
        self._update_bar()

    def on_grading_error(self, message: GradingError) -> None:
        """Grading could not finish (bad input, or the service or its worker died): one line
        that says why; nothing was recorded and the last result stays shown."""
        self._end_grading()
        kept = "the last result is kept; " if self.last_result is not None else ""
        self.notify(f"{_one_line(message.error)} ({kept}ctrl+r grades again)",
                    title="Grading failed", severity="error", timeout=15)

    def action_cancel_grading(self) -> None:
        if not self.grading:
            return
        self.workers.cancel_group(self, "grading")
        cancel = getattr(self.app.services.get_grader(), "cancel", None)
        if cancel is not None:
            try:
                cancel()
            except Exception:  # noqa: BLE001 - cancelling is best effort; the worker is dropped anyway
                pass
        self._end_grading()
        self.notify("Grading cancelled.")

    def _show_time_left(self) -> None:
        left = max(0, int(self.time_left() + 0.999))
        self.sub_title = f"⏱ {left // 60:02d}:{left % 60:02d} left in the interview"

    def _update_bar(self) -> None:
        bar = self.query_one("#grading-bar", Static)
        width = bar.content_size.width or 78
        if self.grading:
            self._spin = (self._spin + 1) % len(SPINNER)
            elapsed = time.monotonic() - self._grade_started
            bar.update(grading_line(SPINNER[self._spin], elapsed, *self._progress, width))
            bar.set_class(True, "busy")
            return
        bar.set_class(False, "busy")
        result = self.query_one(ResultsPanel).result
        if result:
            bar.update(result_line(result, width))
        else:
            bar.update(Text("not graded yet — ctrl+r runs the tests", style="dim"))

    # ------------------------------------------------------------------ hints, solution, panes

    def _show_hints(self) -> AwaitComplete:
        hints = self.challenge.spec.hints
        if self.mock_id is not None:
            text = "No hints during a mock interview: talk through your approach instead."
        elif self._hints_shown == 0:
            text = f"{len(hints)} hints, from a nudge to a near-solution. ctrl+g reveals the next one."
        else:
            text = "\n\n".join(f"**Hint {i + 1}.** {h.text}" for i, h in enumerate(hints[: self._hints_shown]))
            if self._hints_shown < len(hints):
                text += f"\n\n*{len(hints) - self._hints_shown} more — ctrl+g.*"
        return self.query_one("#hints-md", Markdown).update(text)

    async def action_hint(self) -> None:
        hints = self.challenge.spec.hints
        self.query_one("#left", TabbedContent).active = "hints"
        if self._hints_shown >= len(hints):
            self.notify("No more hints; ctrl+l shows the reference solution after an attempt.")
            return
        self._hints_shown += 1
        self.app.services.get_store().set_setting(f"hints_shown:{self.challenge_id}", self._hints_shown)
        await self._show_hints()
        # the new hint is the last one: bring it into view, not the first one again
        scroll = self.query_one("#hints-scroll", VerticalScroll)
        self.call_after_refresh(scroll.scroll_end, animate=False)

    def action_layout(self) -> None:
        """Cycle: side by side, the left pane alone (to read), the editor alone (to write)."""
        main = self.query_one("#challenge-main")
        if main.has_class("-reading"):
            main.remove_class("-reading")
            main.add_class("-writing")
            self.editor.focus()
        elif main.has_class("-writing"):
            main.remove_class("-writing")
        else:
            main.add_class("-reading")
            self.query_one("#left", TabbedContent).focus()

    def action_switch_pane(self) -> None:
        tabs = self.query_one("#left", TabbedContent)
        tabs.active = PANES[(PANES.index(tabs.active) + 1) % len(PANES)] if tabs.active in PANES else PANES[0]

    def action_solution(self) -> None:
        if not self.app.services.get_store().submissions(self.challenge_id, limit=1):
            self.notify("Grade an attempt first (ctrl+r); the solution opens after one.", severity="warning")
            return
        files = self.challenge.solution_files("correct")
        if not files:
            self.notify("This challenge has no reference solution.", severity="warning")
            return
        from inferview.tui.screens.dialogs import ConfirmScreen, SolutionScreen

        def decided(choice: str | None) -> None:
            if choice == "show":
                self.app.push_screen(SolutionScreen(f"Reference solution — {files[0].name}",
                                                    files[0].read_text(encoding="utf-8")))

        hints_left = len(self.challenge.spec.hints) - self._hints_shown
        advice = (f"Try the next hint first: {hints_left} left (ctrl+g)." if hints_left > 0
                  else "Every hint is shown already.")
        self.app.push_screen(
            ConfirmScreen(f"Reveal the reference solution? {advice}",
                          [("show", "Show it"), ("cancel", "Not yet")], title="Solution"),
            decided,
        )

    def action_external_editor(self) -> None:
        if self.dirty and not self.save():
            return
        command = self.app.services.editor_command or os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        argv = [*shlex.split(command), str(self.path)]
        try:
            try:
                with self.app.suspend():
                    subprocess.run(argv, check=False)
            except SuspendNotSupported:
                subprocess.run(argv, check=False, stdin=subprocess.DEVNULL, capture_output=True)
        except OSError as exc:
            self.notify(f"Could not run {command!r}: {exc}", severity="error")
            return
        self._load_from_disk()

    def action_save(self) -> None:
        if self.save():
            self.notify(f"Saved {_short(self.path)}")

    def before_quit(self) -> None:
        """ctrl+q: save unsaved edits; if the file changed on disk meanwhile, keep both versions."""
        if not self.dirty:
            return
        if self._disk_stamp == _stamp(self.path):
            self.save()
            return
        aside = self.path.with_name(f"{self.path.stem}.unsaved{self.path.suffix}")
        try:
            aside.write_text(self.editor.text, encoding="utf-8")
        except OSError:
            pass

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if event.text_area.id == "editor":
            self.refresh_bindings()

    def action_back(self, save: int = 0) -> None:
        """Go back, saving unsaved edits first (``save`` only tells the footer entries apart)."""
        if time.monotonic() - self._grading_ended < LATE_CANCEL_S:
            return  # the press was meant to cancel a grading that finished just before it
        if self.dirty and self._disk_stamp == _stamp(self.path):
            if not self.save():
                return
            self.notify(f"Saved {self.path.name}.")
        elif self.dirty:
            self.notify("The file changed on disk while you edited; save (ctrl+s) or reload first.",
                        severity="warning")
            self._poll_disk()
            return
        self.dismiss(self.outcome)

    @property
    def last_result(self) -> GradeResult | None:
        """The result shown in the results panel."""
        return self.query_one(ResultsPanel).result


def _one_line(text: str) -> str:
    """``text`` on one line: its first line, without a trailing full stop."""
    lines = text.strip().splitlines()
    return (lines[0] if lines else "").rstrip(". ")


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells, with an ellipsis when it was longer."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def grading_line(spinner: str, elapsed: float, where: str, check: str, width: int) -> Text:
    """The status line while grading, fitted to ``width``: spinner, elapsed time, which check of
    how many and the cancel key always show; the running check's name is cut to what is left."""
    head = Text.assemble(f"{spinner} grading {elapsed:4.1f} s · ", (where, "bold"))
    tail = Text("  escape cancels", style="dim")
    room = width - head.cell_len - tail.cell_len - 3
    if check and room >= 4:
        head.append(" · ")
        head.append(_fit(check, room), style="italic")
    return head + tail


def result_line(result: GradeResult, width: int) -> Text:
    """The status line after grading, fitted to ``width``: the verdict, what the checks did
    ("10 passed, 2 need a CUDA GPU") and the time always show; backend and seed follow when there
    is room."""
    verdict = result.verdict.value
    text = Text(verdict.upper(), style=VERDICT_STYLE.get(verdict, "bold"))
    if result.checks:
        text.append(f"  {summary(result)}", style="bold")
    text.append(f" · {result.duration_s:.1f} s")
    where = f"{result.device or result.backend} on {result.host}" if result.host else result.backend
    for extra in (where, f"seed {result.seed}"):
        if extra and text.cell_len + 3 + len(extra) <= width:
            text.append(f" · {extra}", style="dim")
    return text


def _short(path: Path) -> str:
    """The path with the home folder written as ``~``."""
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)

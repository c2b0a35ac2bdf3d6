"""The inferview Textual app: a thin shell of screens, bindings and styles.

Each screen lives in its own module under ``inferview.tui.screens`` and is imported when first
shown, so start-up loads only Home. The UI process never imports torch: grading runs in a separate
service behind ``inferview.graders.client``. Build the app with :func:`create_app` (tests reuse it
with an isolated store, a prepared library, a fake grading client and a fixed clock).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from inferview.tui.services import Services, utc_now
from textual import events
from textual.app import App
from textual.binding import Binding
from textual.screen import Screen


@dataclass(frozen=True)
class InitialChallenge:
    """Open the app straight on one challenge (``inferview challenge ID [--file PATH]``)."""

    challenge_id: str
    file: Path | None = None
    """Edit this file instead of the workspace's ``solution.py``."""


STYLESHEETS = ["app.tcss", "home.tcss", "practice.tcss", "challenge.tcss", "calculator.tcss", "stats.tcss"]
"""One stylesheet per screen (the mock-interview screen brings its own through its ``CSS_PATH``)."""


def _lazy(module: str, name: str) -> Callable[[], Screen]:
    """A screen factory that imports the screen's module only when the screen is first shown."""

    def make() -> Screen:
        return getattr(importlib.import_module(f"inferview.tui.screens.{module}"), name)()

    return make


class InferviewApp(App[None]):
    """Home, practice, challenges, calculator, stats and help."""

    TITLE = "inferview"
    CSS_PATH = [name for name in STYLESHEETS if (Path(__file__).parent / name).is_file()]
    SCREENS = {
        "help": _lazy("help", "HelpScreen"),
        "challenges": _lazy("challenges", "ChallengesScreen"),
        "calculator": _lazy("calculator", "CalculatorScreen"),
        "stats": _lazy("stats", "StatsScreen"),
    }
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
        Binding("question_mark,f1", "help", "Help", key_display="?"),
    ]
    ENABLE_COMMAND_PALETTE = False
    MIN_SIZE = (80, 24)
    """Below this the layouts do not fit: a notice covers the app until the terminal grows."""

    def __init__(self, services: Services | None = None, initial: InitialChallenge | None = None,
                 mock: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.services = services or Services()
        self.initial = initial
        self.initial_mock = mock
        """Keyword arguments for ``MockScreen`` to open on start (``inferview mock``)."""

    def get_default_screen(self) -> Screen:
        from inferview.tui.screens.home import HomeScreen

        return HomeScreen()

    def on_resize(self, event: events.Resize) -> None:
        self._check_size(event.size.width, event.size.height)

    def _check_size(self, width: int, height: int) -> None:
        from inferview.tui.screens.too_small import TooSmallScreen

        small = width < self.MIN_SIZE[0] or height < self.MIN_SIZE[1]
        top = self.screen_stack[-1] if self.screen_stack else None
        if small and not isinstance(top, TooSmallScreen):
            self.push_screen(TooSmallScreen(self.MIN_SIZE))
        elif small and isinstance(top, TooSmallScreen):
            top.show(width, height)
        elif not small and isinstance(top, TooSmallScreen):
            self.pop_screen()

    def on_mount(self) -> None:
        self.call_after_refresh(lambda: self._check_size(self.size.width, self.size.height))
        if self.initial is not None:
            self.open_challenge(self.initial.challenge_id, self.initial.file)
        elif self.initial_mock is not None:
            from inferview.tui.screens.mock import MockScreen

            self.push_screen(MockScreen(**self.initial_mock))

    async def action_quit(self) -> None:
        """Quit, after each open screen has put its work somewhere safe (see ``before_quit``)."""
        for screen in reversed(self.screen_stack):
            before_quit = getattr(screen, "before_quit", None)
            if before_quit is not None:
                try:
                    before_quit()
                except Exception as exc:  # noqa: BLE001 - quitting must still work
                    self.log.error(f"before_quit of {screen!r} failed: {exc}")
        self.exit()

    def _on_notify(self, event: Any) -> None:
        """One toast at a time: a new message replaces the one showing instead of stacking (on
        the app's thread, where Textual handles every notification, so ``notify`` stays
        thread-safe)."""
        self._notifications.clear()
        super()._on_notify(event)

    def action_help(self) -> None:
        """Show the help screen (unless it is already showing)."""
        from inferview.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen("help")

    def open_challenge(self, challenge_id: str, file: Path | None = None) -> None:
        """Push the challenge screen for one challenge."""
        from inferview.tui.screens.challenge import ChallengeScreen

        self.push_screen(ChallengeScreen(challenge_id, file=file))

    def start_practice(self, topic: str | None) -> None:
        """Push a practice session on one topic, or on every topic when ``topic`` is None."""
        from inferview.tui.screens.practice import PracticeScreen

        self.push_screen(PracticeScreen(topic))

    def on_unmount(self) -> None:
        self.services.close()


def create_app(
    *,
    store_path: Path | None = None,
    library: Any = None,
    grading_client: Any = None,
    clock: Callable[[], datetime] | None = None,
    editor_command: str | None = None,
    initial: InitialChallenge | None = None,
    mock: dict[str, Any] | None = None,
) -> InferviewApp:
    """Build the app; every argument is injectable so tests run isolated and deterministic."""
    services = Services(
        store_path=store_path,
        library=library,
        grading_client=grading_client,
        clock=clock or utc_now,
        editor_command=editor_command,
    )
    return InferviewApp(services, initial, mock)


def run_app(initial: InitialChallenge | None = None, mock: dict[str, Any] | None = None,
            library: Any = None, remote: Any = "settings") -> None:
    """Run the app in the terminal: Home (the bare ``inferview`` command), one challenge
    (``inferview challenge``) or a mock interview (``inferview mock``: ``MockScreen`` keywords).
    ``library`` is content a command already loaded (to check its arguments), so it is not
    loaded twice. ``remote``: where challenges are graded (``Services.remote``)."""
    from inferview.store import Store, StoreError

    try:
        # Open the store before the screen is taken over: a store that cannot be used (locked by
        # another process, read-only, from a newer version) ends with its one-line message.
        store = Store.open()
    except StoreError as exc:
        raise SystemExit(f"inferview: {exc}") from None
    app = create_app(initial=initial, mock=mock, library=library)
    app.services.remote = remote
    app.services.adopt_store(store)
    app.run()

"""Messages that travel up the DOM or back from thread workers: small dataclasses, one place.

"Attributes down, messages up": a screen sets its widgets' attributes; widgets and workers tell
their screen what happened with one of these. Workers post them with ``post_message`` (thread-safe)
and the screen changes the UI only in the handler.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.message import Message


@dataclass
class GradingDone(Message):
    """The grading worker finished: ``outcome`` is what ``inferview.submit.submit`` returned
    (the typed result, the graded source, the linked questions scheduled)."""

    challenge_id: str
    outcome: Any


@dataclass
class GradingProgress(Message):
    """The grading service finished check ``done`` of ``total`` (``check`` is its name)."""

    challenge_id: str
    done: int
    total: int
    check: str


@dataclass
class GradingError(Message):
    """The grading service itself failed (not the submission): ``error`` is one clear line."""

    challenge_id: str
    error: str


@dataclass
class SolutionChangedOnDisk(Message):
    """The workspace solution file changed on disk (an external editor saved it)."""

    path: Path
    mtime_ns: int


@dataclass
class StartPractice(Message):
    """Home asks for a practice session, on one topic or (``None``) across every topic."""

    topic: str | None


@dataclass
class OpenChallenge(Message):
    """The challenge list asks to open one challenge."""

    challenge_id: str


@dataclass
class KeyPointToggled(Message):
    """The user corrected the grader: key point ``index`` is now counted as ``hit`` or not."""

    index: int
    hit: bool


@dataclass
class LibraryLoaded(Message):
    """The content library finished loading in the background (``error`` when it could not)."""

    error: str | None = None

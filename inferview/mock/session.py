"""A running mock interview: the clock, the answers, pausing and resuming across restarts.

The clock is injectable (``clock`` returns seconds, monotonic), so tests drive a whole session
without waiting. Only time while the session runs counts: a paused session, or one whose app was
closed, keeps its remaining time (so resuming needs no wall clock: the state saves the running time).
The system clock is never used for timing: when it jumps while the interview runs (a suspend and
resume, or the clock set by hand), the timer is unaffected, and the session notes the jump
(``clock_jumps``) so the report can say what the timer did. Answers are recorded without grading; grading happens once, in
:meth:`MockSession.finish`, so nothing is shown before the end.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from inferview.content.loader import Library
from inferview.mock.plan import Plan, PlanItem, build_plan

WARNINGS_S = (300, 60)
"""The clock warns when 5 minutes and when 1 minute are left."""
CLOCK_JUMP_S = 60
"""A system clock that moves this many seconds more (or less) than the running time between two
ticks has jumped (a suspend, or a clock set by hand): the session notes it."""


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def signed_duration(seconds: float) -> str:
    """A clock jump in words: ``+2 h``, ``-5 min``, ``+1 h 30 min``, ``+45 s``."""
    sign, s = ("-" if seconds < 0 else "+"), int(round(abs(seconds)))
    if s < 60:
        return f"{sign}{s} s"
    h, m = divmod(round(s / 60), 60)
    return sign + " ".join(p for p in (f"{h} h" if h else "", f"{m} min" if m else "") if p)


@dataclass
class Event:
    """Something the clock says: ``warning`` (with seconds left), ``expired``, or ``clock`` (the
    system clock jumped by ``jump_s`` seconds, and the timer ignored it)."""

    kind: str
    seconds_left: int = 0
    jump_s: int = 0

    @property
    def message(self) -> str:
        if self.kind == "expired":
            return "Time is up: the interview is over."
        if self.kind == "clock":
            return (f"The system clock jumped {signed_duration(self.jump_s)}; the interview's "
                    "timer ignored it.")
        minutes = self.seconds_left // 60
        return f"{minutes} minute{'s' if minutes != 1 else ''} left."


@dataclass
class MockSession:
    """One mock interview. Create with :meth:`new`, restore with :meth:`from_state`."""

    minutes: float
    focus: str | None
    seed: int
    plan: Plan
    index: int = 0
    responses: dict[int, dict[str, Any]] = field(default_factory=dict)
    """Plan index -> the user's response (``text``, or ``selected`` option indices, or ``result``
    for the challenge) and the seconds spent on it."""
    elapsed_before_s: float = 0.0
    """Running time accumulated before the current running segment."""
    status: str = "running"
    """``running``, ``paused`` or ``finished``."""
    warned: list[int] = field(default_factory=list)
    started_at: str = field(default_factory=_now_iso)
    finished_reason: str | None = None
    item_started_s: float = 0.0
    """Session time at which the current item was shown."""
    clock: Callable[[], float] = time.monotonic
    _segment_start: float | None = None
    wall_clock: Callable[[], float] = time.time
    """The system clock, only to notice its jumps (tests make it jump)."""
    clock_jumps: list[int] = field(default_factory=list)
    """Seconds the system clock jumped by, beyond the running time, while the interview ran."""
    _wall_mark: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.clock is not time.monotonic and self.wall_clock is time.time:
            self.wall_clock = self.clock  # an injected (test) clock is its own wall clock

    # ------------------------------------------------------------------ creation and persistence

    @classmethod
    def new(cls, lib: Library, minutes: float, focus: str | None = None, seed: int | None = None,
            clock: Callable[[], float] = time.monotonic,
            wall_clock: Callable[[], float] | None = None) -> MockSession:
        """Plan and start a session (``wall_clock``: the system clock it watches for jumps)."""
        if minutes <= 0:
            raise ValueError("a mock interview needs a positive number of minutes")
        if focus is not None and focus not in lib.topics:
            raise ValueError(f"unknown topic {focus!r} (known: {', '.join(sorted(lib.topics))})")
        seed = random.randrange(2**31) if seed is None else seed
        plan = build_plan(lib, minutes, focus, seed)
        if not plan.items:
            raise ValueError("there are no questions to build a mock interview from")
        session = cls(minutes=minutes, focus=focus, seed=seed, plan=plan, clock=clock)
        if wall_clock is not None:
            session.wall_clock = wall_clock
        session._segment_start = clock()
        session._mark_wall_clock()
        return session

    def to_state(self) -> dict[str, Any]:
        """Everything needed to resume, as JSON-compatible data (the clock is not saved)."""
        return {
            "minutes": self.minutes, "focus": self.focus, "seed": self.seed,
            "plan": [i.to_dict() for i in self.plan.items], "plan_note": self.plan.note,
            "index": self.index,
            "responses": {str(k): v for k, v in self.responses.items()},
            "elapsed_s": self.elapsed_s(), "status": self.status, "warned": self.warned,
            "started_at": self.started_at, "finished_reason": self.finished_reason,
            "item_started_s": self.item_started_s, "clock_jumps": self.clock_jumps,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any], clock: Callable[[], float] = time.monotonic) -> MockSession:
        """Restore a saved session, paused (call :meth:`resume` to run the clock again)."""
        s = cls(
            minutes=state["minutes"], focus=state.get("focus"), seed=state["seed"],
            plan=Plan([PlanItem(**i) for i in state["plan"]], note=state.get("plan_note", "")),
            index=state["index"],
            responses={int(k): v for k, v in state.get("responses", {}).items()},
            elapsed_before_s=float(state.get("elapsed_s", 0.0)),
            status="finished" if state.get("status") == "finished" else "paused",
            warned=list(state.get("warned", [])), started_at=state.get("started_at", _now_iso()),
            finished_reason=state.get("finished_reason"), item_started_s=float(state.get("item_started_s", 0.0)),
            clock=clock, clock_jumps=[int(j) for j in state.get("clock_jumps", [])],
        )
        return s

    # ------------------------------------------------------------------ the clock

    @property
    def total_s(self) -> float:
        return self.minutes * 60

    def elapsed_s(self) -> float:
        """Seconds of running time so far."""
        running = self.clock() - self._segment_start if self._segment_start is not None else 0.0
        return min(self.total_s, self.elapsed_before_s + running)

    def remaining_s(self) -> float:
        """Seconds left on the clock."""
        return max(0.0, self.total_s - self.elapsed_s())

    def pause(self) -> None:
        """Stop the clock."""
        if self.status == "running":
            self.elapsed_before_s = self.elapsed_s()
            self._segment_start = None
            self._wall_mark = None
            self.status = "paused"

    def resume(self) -> None:
        """Run the clock again."""
        if self.status == "paused":
            self._segment_start = self.clock()
            self._mark_wall_clock()
            self.status = "running"

    def _mark_wall_clock(self) -> None:
        self._wall_mark = (self.clock(), self.wall_clock())

    def _wall_clock_jump(self) -> int:
        """How far the system clock jumped since the last tick, beyond the running time (0 when
        it kept pace); the jump is noted in ``clock_jumps``."""
        before = self._wall_mark
        self._mark_wall_clock()
        if before is None or self._wall_mark is None:
            return 0
        jump = (self._wall_mark[1] - before[1]) - (self._wall_mark[0] - before[0])
        if abs(jump) < CLOCK_JUMP_S:
            return 0
        self.clock_jumps.append(int(round(jump)))
        return self.clock_jumps[-1]

    @property
    def clock_note(self) -> str:
        """What the timer did about the system clock, for the report ("" when it never jumped)."""
        if not self.clock_jumps:
            return ""
        jumps = ", ".join(signed_duration(j) for j in self.clock_jumps)
        return (f"the system clock jumped {jumps} during the interview (the computer slept, or its "
                "clock was changed); the timer counts running time on a monotonic clock and "
                "ignored it")

    def tick(self) -> list[Event]:
        """What the clock says now: each warning once, then ``expired`` (which finishes the session's
        answering; call :meth:`finish` to grade)."""
        if self.status != "running":
            return []
        events = []
        jump = self._wall_clock_jump()
        if jump:
            events.append(Event("clock", jump_s=jump))
        left = self.remaining_s()
        for w in WARNINGS_S:
            if left <= w and w not in self.warned and w < self.total_s:
                self.warned.append(w)
                events.append(Event("warning", w))
        if left <= 0:
            self._close("time up")
            events.append(Event("expired"))
        return events

    # ------------------------------------------------------------------ moving through the items

    @property
    def current(self) -> PlanItem | None:
        """The item being asked, or None when every item was answered or the session ended."""
        if self.status == "finished" or self.index >= len(self.plan.items):
            return None
        return self.plan.items[self.index]

    def _record(self, response: dict[str, Any]) -> None:
        now = self.elapsed_s()
        self.responses[self.index] = {**response, "time_s": round(now - self.item_started_s, 3)}
        self.index += 1
        self.item_started_s = now
        if self.index >= len(self.plan.items):
            self._close("completed")

    def answer(self, text: str | None = None, selected: list[int] | None = None) -> None:
        """Record the answer to the current question (not graded until the end) and move on."""
        item = self.current
        if item is None or item.kind != "question":
            raise RuntimeError("the current item is not a question")
        self._record({"text": text or "", "selected": list(selected or [])})

    def submit_challenge(self, result: dict[str, Any] | None, source: str = "",
                         response: dict[str, Any] | None = None) -> None:
        """Record the coding item and move on: ``response`` as
        :func:`inferview.mock.coding.hand_in_response` builds it (the last result when it graded
        the handed-in source, else that source, pending), or the plain last ``result``."""
        item = self.current
        if item is None or item.kind != "challenge":
            raise RuntimeError("the current item is not the challenge")
        self._record(response if response is not None else {"result": result, "source": source})

    def insert_next(self, item: PlanItem) -> None:
        """Ask ``item`` next (moving it up if it was planned later), then drop the last questions
        not yet asked, never a probe or the coding item, while the plan overruns the time left."""
        items = self.plan.items
        later = [i for i in range(self.index, len(items)) if items[i].ref == item.ref]
        for i in reversed(later):
            del items[i]
        items.insert(self.index, item)
        while sum(i.budget_s for i in items[self.index:]) > self.remaining_s() + 30:
            droppable = [i for i in range(self.index + 1, len(items))
                         if items[i].kind == "question" and not items[i].probes]
            if not droppable:
                break
            del items[droppable[-1]]

    def open_item(self) -> tuple[int, PlanItem] | None:
        """The item on screen when the session ended (or now), if it has no response yet."""
        if self.index >= len(self.plan.items) or self.index in self.responses:
            return None
        return self.index, self.plan.items[self.index]

    def record_at(self, index: int, response: dict[str, Any]) -> None:
        """Record the response of the item that was open when the session ended, with its time."""
        self.responses[index] = {**response, "time_s": round(self.elapsed_s() - self.item_started_s, 3)}

    def skip(self) -> None:
        """Move on without answering (counts as unanswered)."""
        if self.current is not None:
            self._record({"skipped": True})

    def _close(self, reason: str) -> None:
        if self.status != "finished":
            self.elapsed_before_s = self.elapsed_s()
            self._segment_start = None
            self.status = "finished"
            self.finished_reason = reason

    def end(self) -> None:
        """End the session early (the report says so)."""
        self._close("ended early")

"""The mock interview's coding item: its file, and grading what was handed in.

A candidate may hand the solution in with ``ctrl+n`` without running the tests, or the clock may
run out while the editor is open. Either way the interview grades what is in the file when the item
closes, once: the last grading of the very same source is reused, anything else is graded through
the one grading path (:func:`inferview.submit.submit`) before the report is built. A file still
holding the untouched starter counts as not attempted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferview import paths
from inferview.content.loader import Library
from inferview.mock.session import MockSession

HANDED_IN_SUFFIX = ".handed-in.py"
"""The copy of the source as handed in, graded when it was not graded before."""


def mock_file(mock_id: int | None, challenge_id: str) -> Path:
    """Where a mock interview keeps its coding item's solution."""
    return paths.workspace_dir() / f"mock-{mock_id}" / f"{challenge_id}.py"


def _same(a: str, b: str) -> bool:
    return a.replace("\r\n", "\n") == b.replace("\r\n", "\n")


def hand_in_response(result: dict[str, Any] | None, source: str, file_text: str | None,
                     starter: str) -> dict[str, Any]:
    """The recorded response of a coding item closed with ``file_text`` in its file: the last
    result when it graded that very text, else the text to grade (``pending``)."""
    if file_text is None or _same(file_text, starter):
        return {"result": None, "source": "", "attempted": False}
    if result is not None and _same(source, file_text):
        return {"result": result, "source": source, "attempted": True}
    return {"result": None, "source": file_text, "attempted": True, "pending": True}


@dataclass
class Pending:
    """A coding item whose handed-in source still needs grading."""

    index: int
    challenge_id: str
    source: str


def pending(session: MockSession) -> list[Pending]:
    """The coding items handed in (or cut off by the clock) whose source was not graded yet."""
    out = []
    for i, item in enumerate(session.plan.items):
        r = session.responses.get(i)
        if item.kind == "challenge" and r and r.get("pending"):
            out.append(Pending(i, item.ref, r.get("source", "")))
    return out


def close_open_item(session: MockSession, lib: Library, mock_id: int | None,
                    result: dict[str, Any] | None = None, source: str = "") -> None:
    """When the interview ends with the coding item still open, record what its file holds."""
    item = session.open_item()
    if item is None or item[1].kind != "challenge":
        return
    index, plan_item = item
    ch = lib.challenges.get(plan_item.ref)
    path = mock_file(mock_id, plan_item.ref)
    try:
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
    except OSError:
        text = None
    session.record_at(index, hand_in_response(result, source, text, ch.starter_text() if ch else ""))


def grade_pending(session: MockSession, lib: Library, mock_id: int | None, backend: Any,
                  store: Any = None, now: Any = None) -> None:
    """Grade every pending coding item through ``backend`` and put the result in its response (a
    grading that cannot run leaves the item ungraded, with the reason)."""
    from inferview.grading import GradingUsageError
    from inferview.submit import GradingCancelled, GradingUnavailable, submit

    for p in pending(session):
        response = session.responses[p.index]
        ch = lib.challenges.get(p.challenge_id)
        if ch is None:
            response.update(pending=False, error=f"challenge {p.challenge_id!r} is no longer installed")
            continue
        path = mock_file(mock_id, p.challenge_id).with_name(p.challenge_id + HANDED_IN_SUFFIX)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(p.source, encoding="utf-8")
        try:
            outcome = submit(ch, path, backend, store=store, library=lib, mock_id=mock_id, now=now)
        except (GradingUsageError, GradingCancelled, GradingUnavailable) as exc:
            response.update(pending=False, error=str(exc))
            continue
        response.update(pending=False, result=outcome.result.to_json())

"""One of two apps answering the same due question at the same moment, through the app's own
code path (``PracticeSession``: grade the answer, then ``rate``: record the attempt and review
the card in one transaction).

    python rate_driver.py NAME BARRIER_DIR NOW_ISO STORE...

For each store in turn: open it, take the first question of the practice queue (its one due
card), grade its model answer, then wait at a file barrier until the other driver is there too,
and rate it Good at once. Prints one line per store: the question id and the due time returned.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path

from inferview.tui.practice_session import PracticeSession

from inferview.content.loader import load_library
from inferview.store import Store

BARRIER_TIMEOUT_S = 60.0


def barrier(folder: Path, step: str, name: str) -> None:
    """Both drivers reach ``step`` before either goes on (a file each, polled)."""
    (folder / f"{step}.{name}").touch()
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while len(list(folder.glob(f"{step}.*"))) < 2:
        if time.monotonic() > deadline:
            raise SystemExit(f"the other driver never reached {step}")
        time.sleep(0.0005)


def main(argv: list[str]) -> int:
    name, folder, now = argv[1], Path(argv[2]), datetime.fromisoformat(argv[3])
    library = load_library(include_user=False)
    for i, path in enumerate(argv[4:]):
        store = Store.open(Path(path), backup=False)
        try:
            session = PracticeSession(library, store, None, now=lambda: now)
            item = session.current()
            assert item is not None and item.due, "the seeded card is not due"
            feedback = session.grade(item.question.answer, duration_s=30.0)
            barrier(folder, f"round{i}", name)
            due = session.rate(feedback, 3)
        finally:
            store.close()
        print(item.question.id, due.isoformat(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

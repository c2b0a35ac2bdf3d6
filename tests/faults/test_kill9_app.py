"""kill -9 of the real app while it answers practice questions: after each kill the store opens
without repair, passes ``quick_check``, holds every rating the app had saved, and no rated answer
is without its card's review."""

from __future__ import annotations

import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import fsrs

DRIVER = Path(__file__).with_name("app_driver.py")
APP_KILLS = 6
SEED = 20241


def _lines(proc: subprocess.Popen) -> queue.Queue:
    out: queue.Queue = queue.Queue()

    def read() -> None:
        for line in proc.stdout:
            out.put(line.strip())
        out.put(None)

    threading.Thread(target=read, daemon=True).start()
    return out


def test_kill9_of_the_app_while_it_rates_answers(tmp_path, open_checked) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "INFERVIEW_HOME": str(home), "TMPDIR": str(tmp_path)}
    rng = random.Random(SEED)
    saved: list[str] = []
    killed = 0
    for _ in range(APP_KILLS):
        proc = subprocess.Popen([sys.executable, str(DRIVER)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        lines = _lines(proc)
        assert lines.get(timeout=120) == "ready", proc.stderr.read()
        # a random moment counted in the app's own progress (on a loaded machine a rating can take
        # seconds): after 0-2 saved ratings, then somewhere inside the next one
        for _ in range(rng.randint(0, 2)):
            line = lines.get(timeout=120)
            if line is None:
                break
            if line.startswith("done "):
                saved.append(line.split()[1])
        time.sleep(rng.uniform(0.0, 0.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        killed += proc.returncode == -signal.SIGKILL
        while (line := lines.get(timeout=10)) is not None:
            if line.startswith("done "):
                saved.append(line.split()[1])
        proc.stderr.close()
        with open_checked(home / "progress.sqlite3") as store:
            rated = [a for a in store.question_attempts() if a["rating"] is not None]
            # every rating the app counted is there (once per time it was counted)
            for qid in set(saved):
                assert sum(a["question_id"] == qid for a in rated) >= saved.count(qid), qid
            # and none is half saved: a rated answer always has its card's review
            for a in rated:
                card = store.get_card(a["question_id"])
                assert card is not None, a["question_id"]
                assert fsrs.Card.from_json(card).last_review is not None
    assert killed >= APP_KILLS - 1, "the app ended before it was killed"
    assert saved, "no rating was saved before the kills"
    print(f"app kills: {killed}, ratings saved before them: {len(saved)}")

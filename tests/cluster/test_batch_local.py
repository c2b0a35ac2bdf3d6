"""grade-batch on this machine's process pool: real gradings of real solutions, each result the
same as ``inferview grade``'s with the same seed, and grading processes lost mid-batch."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from inferview.tests.cluster.cohort import CHALLENGE, COHORT, SEED, make_cohort, outline

from inferview.batch.discover import discover
from inferview.batch.local import plan_slots, run_local
from inferview.batch.task import ChallengeRef, grade_submission
from inferview.cli import main as cli_main


def test_a_local_batch_grades_every_submission_as_grade_does(tmp_path: Path, capsys,
                                                             grade_results) -> None:
    """Also with one of its grading processes killed mid-batch: that submission is retried."""
    root = make_cohort(tmp_path / "cohort")
    (root / "dave").mkdir()  # a candidate folder with nothing in it
    table = tmp_path / "out.csv"
    killed: list[int] = []
    with _killing_first_slot(killed):
        code, out, err = run_cli(capsys, "grade-batch", CHALLENGE, str(root), "--json", "--csv",
                                 str(table), "--seed", str(SEED), "--sort", "verdict",
                                 "--jobs", "2")
    assert len(killed) == 1
    assert code == 1, err  # dave could not be graded
    data = json.loads(out)  # stdout holds the JSON object and nothing else
    assert data["schema"] == 1 and data["challenge"] == CHALLENGE and data["runner"] == "local"
    rows = {r["candidate"]: r for r in data["rows"]}
    assert {n: outline(rows[n]["result"]) for n in COHORT} == grade_results
    for name in COHORT:
        assert rows[name]["verdict"] == grade_results[name][0]
        assert (rows[name]["host"], rows[name]["device"]) == (socket.gethostname(), "cpu")
    assert rows["dave"]["verdict"] is None and rows["dave"]["reason"] == "no .py file in dave/"
    assert [r["candidate"] for r in data["rows"]][-1] == "dave"  # not graded: last
    written = list(csv.DictReader(table.open(encoding="utf-8")))
    assert [r["candidate"] for r in written] == [r["candidate"] for r in data["rows"]]
    assert {r["candidate"]: r["verdict"] for r in written} == {
        **{n: v[0] for n, v in grade_results.items()}, "dave": "not graded"}


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        cli_main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def _kill_first_slot(found: list[int], stop: threading.Event) -> None:
    """SIGKILL the first pool process this test starts (a child running multiprocessing's
    spawn_main), once."""
    me = os.getpid()
    while not stop.is_set() and not found:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if int(stat[1]) == me and b"spawn_main" in cmd:
                os.kill(int(entry), signal.SIGKILL)
                found.append(int(entry))
                return
        time.sleep(0.01)


@contextlib.contextmanager
def _killing_first_slot(killed: list[int]) -> Iterator[None]:
    stop = threading.Event()
    killer = threading.Thread(target=_kill_first_slot, args=(killed, stop), daemon=True)
    killer.start()
    try:
        yield
    finally:
        stop.set()
        killer.join()


def test_a_grading_process_lost_for_good_is_not_graded(tmp_path: Path) -> None:
    root = make_cohort(tmp_path / "cohort", {"alice": COHORT["alice"]})
    killed: list[int] = []
    with _killing_first_slot(killed):
        rows = run_local(ChallengeRef(CHALLENGE), discover(root), plan_slots(1024, "cpu", 1),
                         seed=SEED, retries=0)
    assert len(killed) == 1
    assert [(r.candidate, r.verdict, r.reason) for r in rows] == [
        ("alice", None, "its grading process died (1 attempt)")]


def test_a_shipped_challenge_is_graded_against(tmp_path: Path) -> None:
    """What a node does with a challenge that is not built in: the folder's files come with the
    task and are unpacked beside the submission (a correct solution passes every check)."""
    demo = Path(__file__).resolve().parents[1] / "fixtures" / "challenges" / "demo-scale"
    source = (demo / "solutions" / "correct" / "mul.py").read_bytes()
    outcome = grade_submission(ChallengeRef.shipped(demo), "cand.py", source, seed=SEED)
    assert outcome.error is None and outcome.result["challenge"] == "demo-scale"
    assert outcome.result["verdict"] == "passed" and outcome.result["seed"] == SEED
    assert len(outcome.result["checks"]) > 1
    assert {c["status"] for c in outcome.result["checks"]} == {"passed"}
    assert (outcome.host, outcome.device) == (socket.gethostname(), "cpu")

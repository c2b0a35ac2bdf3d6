"""The grading service dies while the app grades: SIGKILL the service process, then its running
worker, then its pre-started one, in one app session against the real service. Each time the app
says so in one line (no traceback, no verdict), the previous result stays shown and is the only
one recorded, and the next ``ctrl+r`` grades correctly (a dead service is started again)."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest
from inferview.tests.support.tui import settle
from inferview.tui.app import InitialChallenge, create_app

from inferview.content.loader import load_library

pytestmark = pytest.mark.slow

SLOW = '''\
import time


def kv_cache_bytes(config, seq_len, batch_size=1, dtype="bf16"):
    time.sleep(120)  # killed long before this ends
    return 0


def max_batch_size(config, seq_len, gpu_bytes, weight_bytes, dtype="bf16"):
    return 0
'''


def children(pid: int) -> list[int]:
    """Live (not zombie) processes whose parent is ``pid``, from ``/proc``."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        rest = data[data.rfind(b")") + 2:].split()
        if int(rest[1]) == pid and rest[0] != b"Z":
            out.append(int(name))
    return out


def _is_fork_server(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"zygote.py" in f.read()
    except OSError:
        return False


def workers(service: int) -> list[int]:
    """The service's worker processes: its children, or (CPU workers) its fork server's."""
    out = []
    for pid in children(service):
        out += children(pid) if _is_fork_server(pid) else [pid]
    return out


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return False
    return data[data.rfind(b")") + 2:].split()[0] != b"Z"


async def wait_for(pilot, condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        await pilot.pause(0.05)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux's /proc to find "
                    "the service's worker processes")
async def test_killed_service_and_workers_leave_the_last_result_and_the_next_ctrl_r_works(
        tmp_path) -> None:
    library = load_library(include_user=False)
    challenge = library.challenges["kv-cache-size"]
    correct = (challenge.folder / "solutions" / "correct" / "closed_form_search.py").read_text()
    mine = tmp_path / "solution.py"
    mine.write_text(correct)
    torch_before = "torch" in sys.modules
    app = create_app(library=library, store_path=tmp_path / "p.sqlite3",
                     initial=InitialChallenge("kv-cache-size", mine))
    orphans: list[int] = []
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        client = app.services.get_grader()

        async def grade(source: str) -> None:
            screen.editor.text = source
            before = getattr(screen, "_grade_started", None)
            await pilot.press("ctrl+r")
            # started (it may already have ended on a loaded machine: the start time tells)
            await wait_for(pilot, lambda: getattr(screen, "_grade_started", None) != before, 30,
                           "grading to start")

        async def finished() -> None:
            await wait_for(pilot, lambda: not screen.grading, 90, "grading to end")
            await settle(pilot)

        def recorded() -> list[str]:
            return [s["result"]["verdict"] for s in app.services.get_store().submissions("kv-cache-size")]

        async def graded_again_correctly(n: int) -> None:
            await grade(correct)
            await finished()
            assert screen.last_result is not None and screen.last_result.verdict == "passed"
            assert recorded() == ["passed"] * n

        await pilot.pause()
        await graded_again_correctly(1)
        for n, target in enumerate(("service", "running worker"), start=1):
            app._notifications.clear()
            await grade(SLOW)
            # the solution sleeps inside the first check: its worker is the service's only one
            await wait_for(pilot, lambda: screen._progress[0].startswith("check"), 60,
                           "the first check")
            service = client._proc.pid
            await wait_for(pilot, lambda s=service: workers(s), 10, "the running worker")
            await pilot.pause(0.3)
            if target == "service":
                orphans += workers(service) + children(service)
                os.kill(service, signal.SIGKILL)
            else:
                for pid in workers(service):
                    os.kill(pid, signal.SIGKILL)
            await finished()
            said = [str(n.message) for n in app._notifications]
            assert len(said) == 1 and "\n" not in said[0], said
            assert said[0].startswith("the grading service failed: "), said
            assert ("it was killed by SIGKILL" if target == "service"
                    else "worker was killed from outside the grader (SIGKILL)") in said[0], said
            assert "the last result is kept; ctrl+r grades again" in said[0]
            assert "Traceback" not in said[0]
            # the previous result stays shown, and nothing else was recorded
            assert screen.last_result is not None and screen.last_result.verdict == "passed"
            assert recorded() == ["passed"] * n
            if target == "service":
                assert client._proc is None  # forgotten: the next request starts a new one
            await graded_again_correctly(n + 1)

        # the worker the service pre-started for the next ctrl+r dies while idle: not noticed
        service = client._proc.pid
        await wait_for(pilot, lambda: workers(service), 30, "the pre-started worker")
        for pid in workers(service):
            os.kill(pid, signal.SIGKILL)
        await graded_again_correctly(4)
    # the killed service's worker was swept (by the service started after it) and none is left
    deadline = time.monotonic() + 10
    while any(alive(p) for p in orphans) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in orphans if alive(p)], "the killed service's worker is still running"
    if not torch_before:
        assert "torch" not in sys.modules

"""How fast the TUI becomes usable, and how long ``ctrl+r`` takes to show a verdict.

1. Start-up: a fresh Python process imports the app, opens a fresh store and renders Home
   (``App.run_test``, headless, 80x24), measured from the first line of the process to the moment
   Home is mounted and takes keys (target: under a second); then until the library, parsed in a
   background worker, is shown. Median of ``--runs`` processes.
2. Grading round trip: the challenge screen for ``kv-cache-size`` with its first known-correct
   solution; ``ctrl+r`` right after the screen opened (``prepare`` has only just started the
   grading service), then again with the service warm, each until the verdict is shown.
3. The way a candidate gets there: Home, the challenge list (which starts the grading service),
   ``--read`` seconds on it, then ``kv-cache-size`` opened and ``ctrl+r`` at once.

Run: ``python benchmarks/tui_startup.py [--runs 5] [--skip-grading] [--read 3]``. Prints one line per
number.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STARTUP_PROBE = r"""
import time
t0 = time.perf_counter()
import asyncio
from inferview.tui.app import create_app
from inferview.tui.screens.home import HomeScreen
t_import = time.perf_counter()
marks = {}

async def main():
    app = create_app()
    async with app.run_test(size=(80, 24)) as pilot:
        # run_test hands over once the first screen is mounted and drawn: Home takes keys now
        assert isinstance(app.screen, HomeScreen)
        marks["home"] = time.perf_counter()
        table = app.screen.query_one("#topics")
        while table.row_count == 0:
            await pilot.pause(0.01)
        marks["content"] = time.perf_counter()

asyncio.run(main())
import sys
print(f"{t_import - t0:.4f} {marks['home'] - t0:.4f} {marks['content'] - t0:.4f} {'torch' in sys.modules}")
"""


def startup(runs: int) -> None:
    imports, homes, contents, torch_seen = [], [], [], False
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as home:
            env = {**os.environ, "INFERVIEW_HOME": home}
            out = subprocess.run([sys.executable, "-c", STARTUP_PROBE], capture_output=True, text=True,
                                 env=env)
        if out.returncode != 0:
            sys.exit(f"start-up probe failed:\n{out.stderr[-3000:]}")
        t_import, t_home, t_content, torch = out.stdout.split()
        imports.append(float(t_import))
        homes.append(float(t_home))
        contents.append(float(t_content))
        torch_seen |= torch == "True"
        print(f"  run: import {float(t_import):.3f} s, Home interactive {float(t_home):.3f} s, "
              f"content shown {float(t_content):.3f} s")
    print(f"startup (median of {runs}): import {statistics.median(imports):.3f} s, "
          f"Home interactive {statistics.median(homes):.3f} s (target < 1 s), "
          f"library loaded and shown {statistics.median(contents):.3f} s"
          f"{'  TORCH WAS IMPORTED' if torch_seen else ''}")


async def _grade_round_trip() -> tuple[float, float, str]:
    from inferview.tui.app import InitialChallenge, create_app

    from inferview.content.loader import load_library

    library = load_library(include_user=False)
    challenge = library.challenges["kv-cache-size"]
    correct = challenge.solution_files("correct")[0]
    solution = Path(tempfile.mkdtemp()) / "solution.py"
    solution.write_text(correct.read_text())
    app = create_app(library=library, initial=InitialChallenge("kv-cache-size", solution))
    times, verdict = [], "none"
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()  # prepare() sent: the service starts warming up
        screen = app.screen
        for _ in range(2):  # the first run may still wait for the service; the second is warm
            t0 = time.perf_counter()
            await pilot.press("ctrl+r")
            while screen.grading:
                await pilot.pause(0.01)
            times.append(time.perf_counter() - t0)
            verdict = screen.last_result.verdict.value if screen.last_result else "none"
    return times[0], times[1], verdict


async def _grade_from_the_list(read_s: float) -> tuple[float, str]:
    from inferview.tui.app import create_app
    from inferview.tui.screens.challenge import ChallengeScreen
    from textual.widgets import DataTable

    from inferview.content.loader import load_library

    library = load_library(include_user=False)
    correct = library.challenges["kv-cache-size"].solution_files("correct")[0]
    app = create_app(library=library)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await asyncio.sleep(read_s)  # reading the list
        table = app.screen.query_one(DataTable)
        table.move_cursor(row=table.get_row_index("kv-cache-size"))
        await pilot.press("enter")
        while not isinstance(app.screen, ChallengeScreen):
            await pilot.pause(0.01)
        screen = app.screen
        screen.editor.text = correct.read_text()  # ctrl+r saves it, then grades
        t0 = time.perf_counter()
        await pilot.press("ctrl+r")
        await pilot.pause(0.05)
        while screen.grading:
            await pilot.pause(0.01)
        took = time.perf_counter() - t0
        verdict = screen.last_result.verdict.value if screen.last_result else "none"
    return took, verdict


def grading(read_s: float = 3.0) -> None:
    try:
        import inferview.graders.client  # noqa: F401
    except ImportError:
        print("grading: skipped (inferview.graders.client is not available)")
        return
    with tempfile.TemporaryDirectory() as home:
        os.environ["INFERVIEW_HOME"] = home
        first, second, verdict = asyncio.run(_grade_round_trip())
    print(f"grading kv-cache-size (correct solution, {verdict}): ctrl+r -> verdict {first:.2f} s right after "
          f"opening the screen, {second:.2f} s with the service warm")
    with tempfile.TemporaryDirectory() as home:
        os.environ["INFERVIEW_HOME"] = home
        took, verdict = asyncio.run(_grade_from_the_list(read_s))
    print(f"grading kv-cache-size ({verdict}) opened from the list after {read_s:.0f} s on it: "
          f"ctrl+r -> verdict {took:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-grading", action="store_true")
    parser.add_argument("--read", type=float, default=3.0,
                        help="seconds spent on the challenge list before opening one")
    args = parser.parse_args()
    startup(args.runs)
    if not args.skip_grading:
        grading(args.read)


if __name__ == "__main__":
    main()

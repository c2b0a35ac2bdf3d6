"""The UI process never imports torch: start-up, every screen, practice and the calculator."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from inferview.tests.support.tui import FakeGradingClient, make_library
    from inferview.tui.app import create_app

    async def main():
        app = create_app(library=make_library(Path(sys.argv[1])), grading_client=FakeGradingClient())
        async with app.run_test(size=(80, 24)) as pilot:
            for key in ["c", "enter", "ctrl+r", "escape", "escape", "escape", "k", "escape",
                        "s", "escape", "p", "escape", "question_mark", "escape"]:
                await pilot.press(key)
                await pilot.pause()
                await app.workers.wait_for_complete()
            seen.extend(type(s).__name__ for s in app.screen_stack)

    seen = []
    asyncio.run(main())
    print("torch" in sys.modules, "textual" in sys.modules)
    """
)


def test_no_torch_in_the_ui_process(tmp_path) -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "content")], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "True"]

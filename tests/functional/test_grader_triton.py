"""Triton challenges under TRITON_INTERPRET=1: kernel launches are counted, the interpreter's own
torch use is not flagged, and answers computed by torch instead of a kernel are ``forbidden``."""

from __future__ import annotations

from pathlib import Path

import pytest
from inferview.graders.engine import grade

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "challenges" / "demo-triton"
pytest.importorskip("triton")


@pytest.mark.parametrize("name, verdict, text", [
    ("correct/kernel.py", "passed", ""),
    ("wrong/no_kernel.py", "forbidden", "computes with torch (aten.mul)"),
    ("wrong/kernel_then_torch.py", "forbidden", "computes with torch (aten.mul)"),
])
def test_triton_demo(name: str, verdict: str, text: str) -> None:
    result = grade(DEMO, DEMO / "solutions" / name, device="cpu", seed=4)
    messages = "\n".join(c.message for c in result.checks)
    assert result.verdict == verdict, messages
    assert text in messages


def test_zero_launches_is_forbidden(tmp_path: Path) -> None:
    sub = tmp_path / "copy_only.py"
    sub.write_text('"""Returns a scaled copy made by a view trick: no kernel, no compute op."""\n'
                   "def scale(x, factor):\n    return x.clone()\n")
    result = grade(DEMO, sub, device="cpu", seed=4)
    assert result.verdict == "forbidden"
    assert "without launching a Triton kernel" in result.checks[0].message

"""The headless engine never imports textual; the CLI and TUI start-up never import torch.

Each check runs in a fresh interpreter and inspects ``sys.modules``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

HEADLESS = [
    "inferview.content.models", "inferview.content.loader", "inferview.content.lint", "inferview.store",
    "inferview.reference", "inferview.graders",
]
TORCH_FREE = [
    "inferview.cli", "inferview.content.loader", "inferview.store", "inferview.reference",
]


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def _optional(names: list[str]) -> list[str]:
    import importlib.util

    return [n for n in names if importlib.util.find_spec(n) is not None]


@pytest.mark.parametrize("module", HEADLESS + _optional([
    "inferview.graders.engine", "inferview.graders.client", "inferview.practice.grading",
    "inferview.practice.scheduler", "inferview.reference.estimators", "inferview.reference.presets",
]))
def test_headless_modules_never_import_textual(module):
    mods = _modules_after(f"import {module}")
    assert not any(m == "textual" or m.startswith("textual.") for m in mods), module


@pytest.mark.parametrize("module", TORCH_FREE + _optional([
    "inferview.tui.app", "inferview.graders.client", "inferview.practice.grading", "inferview.practice.drills",
    "inferview.practice.scheduler", "inferview.reference.estimators", "inferview.reference.presets",
    "inferview.reference.formulas", "inferview.reference.speculative_theory",
]))
def test_ui_side_modules_never_import_torch(module):
    mods = _modules_after(f"import {module}")
    assert "torch" not in mods, f"{module} imports torch"


def test_cli_help_and_list_do_not_import_torch():
    code = ("import sys\nfrom click.testing import CliRunner\nfrom inferview.cli import cli\n"
            "r = CliRunner().invoke(cli, ['list', '--json'])\nassert r.exit_code == 0, r.output\n"
            "r = CliRunner().invoke(cli, ['--help'])\nassert r.exit_code == 0\n")
    assert "torch" not in _modules_after(code)


def test_generic_top_level_names_are_not_importable():
    for name in ("tui", "graders", "reference", "challenges", "questions"):
        proc = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True,
                              cwd="/")
        assert proc.returncode != 0, f"'{name}' is importable as a top-level package"

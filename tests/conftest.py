"""Shared test set-up: Hypothesis profiles and an isolated data folder for every test."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

if "TRITON_INTERPRET" not in os.environ:
    # Triton decides how to build its library functions when it is first imported; without a GPU
    # they must be built for the interpreter, whichever test happens to import triton first.
    import torch

    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"

settings.register_profile("dev", max_examples=30, deadline=None)
settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    max_examples=30,  # as many as "dev": derandomized, CI sees the same 30 every run
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(scope="session", autouse=True)
def forked_workers():
    """Gradings in this process fork their CPU workers from a fork server once it has booted:
    torch is then imported once per kind instead of once per grading. ``test_grader_hostile``
    turns it off to prove spawned workers (what ``inferview grade`` and the app start), and
    ``test_grader_forked`` proves the forked ones against the same hostile submissions."""
    from inferview.graders.pool import POOL

    POOL.fork = True
    yield
    POOL.fork = False
    POOL.shutdown()


@pytest.fixture(autouse=True)
def inferview_home(tmp_path, monkeypatch):
    """Every test gets its own data folder, so no test touches the user's progress."""
    home = tmp_path / "inferview-home"
    home.mkdir()
    monkeypatch.setenv("INFERVIEW_HOME", str(home))
    return home

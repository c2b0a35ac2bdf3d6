"""Shared by the batch tests: ``inferview grade``'s result for each member of the cohort."""

from __future__ import annotations

import pytest
from inferview.tests.cluster.cohort import CHALLENGE, COHORT, SEED, outline, solutions

from inferview.content.loader import find_challenge


@pytest.fixture(scope="session")
def grade_results() -> dict[str, tuple]:
    """:func:`outline` of ``inferview grade``'s result for every cohort member, seed
    :data:`SEED` (the engine and backend the command uses, run in this process)."""
    from inferview.submit import LocalBackend, submit

    found = find_challenge(CHALLENGE)
    return {name: outline(submit(found, solutions() / rel, LocalBackend(), seed=SEED)
                          .result.to_json())
            for name, rel in COHORT.items()}

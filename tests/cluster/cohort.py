"""A small real cohort for the batch tests: kv-cache-size solutions under candidates' names."""

from __future__ import annotations

import shutil
from pathlib import Path

from inferview.content.loader import find_challenge

CHALLENGE = "kv-cache-size"
SEED = 11
COHORT = {  # candidate -> solution of challenges/kv-cache-size/solutions/
    "alice": "correct/per_layer_loop.py",
    "bob": "wrong/forgets_k_and_v.py",
    "carol": "wrong/int4_one_byte.py",
}


def solutions() -> Path:
    return find_challenge(CHALLENGE).folder / "solutions"


def make_cohort(root: Path, candidates: dict[str, str] = COHORT) -> Path:
    """``root/alice.py`` and ``root/<name>/solution.py`` alternately, copied from the solutions."""
    root.mkdir(parents=True, exist_ok=True)
    for i, (name, rel) in enumerate(candidates.items()):
        target = root / f"{name}.py" if i % 2 == 0 else root / name / "solution.py"
        target.parent.mkdir(exist_ok=True)
        shutil.copyfile(solutions() / rel, target)
    return root


def outline(result: dict) -> tuple:
    """What must be the same whoever grades a submission with one seed: the verdict, the seed and
    every check's name and status."""
    return (result["verdict"], result["seed"],
            [(c["name"], c["status"]) for c in result["checks"]])

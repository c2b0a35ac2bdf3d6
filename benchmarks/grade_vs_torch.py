"""``inferview grade`` of a correct solution against the floor every grading pays: importing torch.

``python benchmarks/grade_vs_torch.py [--challenge kv-cache-size] [--runs 5]`` runs, alternately,
``python -c "import torch"`` and ``inferview grade CHALLENGE <its first correct solution>
--no-record`` as fresh processes, and prints each one's median wall time and their ratio (the
target is at most 2x). Alternating keeps both under the same load and page cache.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from inferview.content.loader import find_challenge


def _wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if done.returncode not in (0,):
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--challenge", default="kv-cache-size")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    ch = find_challenge(args.challenge)
    solution = sorted((ch.folder / "solutions" / "correct").glob("*.py"))[0]
    torch_cmd = [sys.executable, "-c", "import torch"]
    grade_cmd = [sys.executable, "-m", "inferview", "grade", ch.id, str(solution), "--no-record",
                 "--seed", "1"]
    _wall(torch_cmd)  # warm the page cache for both
    _wall(grade_cmd)
    torch_s, grade_s = [], []
    for _ in range(args.runs):
        torch_s.append(_wall(torch_cmd))
        grade_s.append(_wall(grade_cmd))
    t, g = statistics.median(torch_s), statistics.median(grade_s)
    print(f"import torch               {t:6.2f} s (median of {args.runs})")
    print(f"inferview grade {ch.id:<10} {g:6.2f} s (median of {args.runs}, {solution.name})")
    print(f"ratio                      {g / t:6.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()

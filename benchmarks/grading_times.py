"""Grading time of every challenge's correct solutions, through the engine ``inferview grade``
uses: ``python benchmarks/grading_times.py [CHALLENGE ...] [--device cpu|cuda|auto]``.

Prints one row per solution (verdict, wall seconds, the checks' share) and a total, so authors see
which checks make grading slow. A correct submission should grade in seconds on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import time

from inferview.graders.engine import grade

from inferview.content.loader import find_challenge


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("challenges", nargs="*", help="challenge ids (default: all)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    from inferview.content.loader import load_library

    lib = load_library(include_user=False)
    ids = args.challenges or [ch.id for ch in lib.challenges_in_order()]
    total = 0.0
    print(f"{'challenge':24s} {'solution':32s} {'verdict':9s} {'seconds':>8s}  limit")
    for cid in ids:
        ch = find_challenge(cid, lib)
        for sol in sorted((ch.folder / "solutions" / "correct").glob("*.py")):
            t0 = time.perf_counter()
            result = grade(ch, sol, device=args.device, seed=args.seed)
            dt = time.perf_counter() - t0
            total += dt
            print(f"{cid:24s} {sol.stem:32s} {result.verdict.value:9s} {dt:8.1f}  "
                  f"{ch.spec.time_limit_s:g} s ({result.backend})", flush=True)
    print(f"{'total':24s} {'':32s} {'':9s} {total:8.1f}")


if __name__ == "__main__":
    main()

"""How well the free-text grader judges answers it was not written against.

The corpus (``benchmarks/answers/``) holds answers to the open questions in many voices, of five
kinds: ``complete`` (correct and complete), ``partial`` (misses the main point), ``wrong`` (a fluent
wrong claim), ``term-only`` (names the right terms, claims nothing) and ``appended`` (a complete
answer with a wrong claim added). It was split into ``tune.jsonl`` and ``test.jsonl`` before any
rubric was tuned on it (``split.py``); rubrics are tuned on the tune split only, which also takes
``dev.jsonl`` (answers written later by other writers, first used to measure how far the tune
figures generalise) and ``claims.jsonl`` (wrong and appended answers only, many mistakes per
question, for the error catalogues) and ``dev2.jsonl`` (1,556 answers by six more writers who saw
the prompts only: every open question, the 2026 topics with all five kinds; measured once as it
came in, before any tuning on it: wrong 34.9 %, appended 20.6 %, complete passed 90.0 %, term-only
passed 21.2 %). ``holdout.jsonl`` is a second held-out set (720 answers by yet
other writers, all five kinds), written before the error catalogues' second round and never tuned
on: like the test split, it is only ever measured. ``newtopics.jsonl`` (528 answers, all five
kinds, by two more writers who saw the prompts only) covers the eight topics added for 2026, which
the other sets predate; it too is only ever measured.

    python benchmarks/answer_grading.py                 # the table for the test split
    python benchmarks/answer_grading.py --split tune --show wrong --topic kv-cache

``--show`` lists the answers graded against their label, and only for the tune split: looking at
the test split's failures would make it a second tune split.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent / "answers"

GOALS = {
    "complete passed": (">=", 0.90),
    "wrong: error flagged": (">=", 0.75),
    "appended: error flagged": (">=", 0.75),
    "term-only passed": ("<=", 0.05),
    "partial not passed": (">=", 0.90),
    "complete wrongly flagged": ("<=", 0.03),
}


@dataclass
class Outcome:
    record: dict
    verdict: str
    flagged: bool
    detail: str

    @property
    def as_labelled(self) -> bool:
        kind = self.record["kind"]
        if kind == "complete":
            return self.verdict == "pass" and not self.flagged
        if kind in ("wrong", "appended"):
            return self.flagged
        return self.verdict != "pass"


TUNE_FILES = ("tune", "dev", "claims", "dev2")
"""What rubrics are tuned on: the tune split, a second set of answers written later (dev), a set
of wrong claims only (claims), and a third round by six more writers (dev2) that also covers the
2026 topics. The test split is none of them."""


def load(split: str) -> list[dict]:
    names = TUNE_FILES if split == "tune" else (split,)
    out = []
    for name in names:
        path = HERE / f"{name}.jsonl"
        if path.exists():
            out += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                    if line.strip()]
    return out


def grade_all(records: list[dict]) -> list[Outcome]:
    from inferview.content.loader import load_library
    from inferview.practice.openq import RubricContext

    lib = load_library(include_user=False)
    ctx = RubricContext.from_library(lib)
    out = []
    for r in records:
        q = lib.questions.get(r["id"])
        if q is None or q.kind != "open":
            continue
        g = ctx.rubric(q).grade(r["text"])
        hits = "; ".join(f"+{p.point.point[:50]} [{p.matched}]" for p in g.points if p.hit)
        miss = "; ".join(f"-{p.point.point[:50]}" for p in g.points if not p.hit)
        errs = "; ".join(f"!{e.claim[:60]} [{e.matched}]" for e in g.errors)
        out.append(Outcome(r, g.verdict, bool(g.errors), f"{g.score:.2f} {hits} | {miss} | {errs}"))
    return out


def table(outcomes: list[Outcome]) -> dict[str, tuple[int, int]]:
    by = defaultdict(list)
    for o in outcomes:
        by[o.record["kind"]].append(o)
    rows = {
        "complete passed": [o.verdict == "pass" and not o.flagged for o in by["complete"]],
        "wrong: error flagged": [o.flagged for o in by["wrong"]],
        "appended: error flagged": [o.flagged for o in by["appended"]],
        "term-only passed": [o.verdict == "pass" for o in by["term-only"]],
        "partial not passed": [o.verdict != "pass" for o in by["partial"]],
        "complete wrongly flagged": [o.flagged for o in by["complete"]],
    }
    return {k: (sum(v), len(v)) for k, v in rows.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=["test", "holdout", "newtopics", "tune", "dev", "claims", "dev2"], default="test")
    ap.add_argument("--topic", help="only the questions of this topic")
    ap.add_argument("--id", help="only this question")
    ap.add_argument("--show", choices=["complete", "partial", "wrong", "term-only", "appended", "all"],
                    help="list the answers of this kind graded against their label (tune split only)")
    ap.add_argument("--json", action="store_true", help="print the table as JSON")
    args = ap.parse_args(argv)
    if args.show and args.split in ("test", "holdout", "newtopics"):
        ap.error("--show works on the tune split only: the held-out splits stay unseen")
    records = load(args.split)
    if args.topic:
        from inferview.content.loader import load_library

        questions = load_library(include_user=False).questions
        records = [r for r in records if r["id"] in questions and questions[r["id"]].topic == args.topic]
    if args.id:
        records = [r for r in records if r["id"] == args.id]
    outcomes = grade_all(records)
    rows = table(outcomes)
    if args.json:
        print(json.dumps({k: {"hits": a, "of": n, "share": a / n if n else None} for k, (a, n) in rows.items()}))
    else:
        print(f"free-text grading on the {args.split} split: {len(outcomes)} answers, "
              f"{len({o.record['id'] for o in outcomes})} questions")
        print(f"{'measure':28} {'result':>16}   goal")
        for k, (a, n) in rows.items():
            op, goal = GOALS[k]
            share = a / n if n else 0.0
            ok = (share >= goal) if op == ">=" else (share <= goal)
            print(f"{k:28} {a:>5}/{n:<4} {share:6.1%}   {op} {goal:.0%} {'' if ok else ' (missed)'}")
    if args.show:
        kinds = Counter()
        for o in outcomes:
            if (args.show in ("all", o.record["kind"])) and not o.as_labelled:
                kinds[o.record["kind"]] += 1
                print(f"\n[{o.record['kind']}/{o.record.get('voice')}] {o.record['id']}: {o.verdict}"
                      f"{' FLAGGED' if o.flagged else ''}")
                if o.record.get("error"):
                    print(f"  error: {o.record['error']}")
                print(f"  text: {o.record['text']}")
                print(f"  grade: {o.detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

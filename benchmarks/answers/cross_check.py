"""Errors that fire on correct answers: every correct text of every topic graded against the
errors of one topic's questions (its catalogue and the questions' own misconceptions).

    python benchmarks/answers/cross_check.py TOPIC

Correct texts: the tune-side corpus's complete answers (``tune``, ``dev``, ``dev2``), and every bank's model
answers and good examples. A hit means an error pattern matches something a correct answer says;
fix the pattern (the test split is not read).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent


def correct_texts(lib) -> list[tuple[str, str]]:
    out = []
    for name in ("tune", "dev", "dev2"):
        path = HERE / f"{name}.jsonl"
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                r = json.loads(line)
                if r["kind"] == "complete":
                    out.append((f"{name}:{r['id']}", r["text"]))
    for q in lib.questions.values():
        if q.kind == "open":
            out.append((f"answer:{q.id}", q.answer))
            out += [(f"good:{q.id}", t) for t in q.examples.good]
    return out


def main(argv: list[str]) -> int:
    from inferview.content.loader import load_library
    from inferview.practice.openq import RubricContext

    if len(argv) != 1:
        print(__doc__)
        return 2
    topic = argv[0]
    lib = load_library(include_user=False)
    ctx = RubricContext.from_library(lib)
    texts = correct_texts(lib)
    hits: Counter[str] = Counter()
    shown = 0
    for q in (q for q in lib.questions.values() if q.kind == "open" and q.topic == topic):
        rubric = ctx.rubric(q)
        for where, text in texts:
            g = rubric.grade(text)
            for e in g.errors:
                if e.origin == "reversal" and not where.endswith(q.id):
                    continue  # a key point's reversal only concerns answers to its own question
                key = f"{q.id} | {e.origin} | {e.claim}"
                hits[key] += 1
                if shown < 60:
                    print(f"{where}: [{q.id}] {e.claim!r} matched {e.matched!r}")
                    shown += 1
    print(f"\n{sum(hits.values())} hits over {len(texts)} correct texts")
    for key, n in hits.most_common(40):
        print(f"{n:4d}  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

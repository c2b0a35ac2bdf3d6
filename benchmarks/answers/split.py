"""Add new corpus answers to the tune and test splits, before any rubric is tuned on them.

    python benchmarks/answers/split.py NEW.jsonl [NEW2.jsonl ...]

Each line of a new file is ``{"id", "kind", "voice", "text"[, "error"]}``. Answers already in a
split stay where they are. A new answer goes to the split that has fewer answers of its question
and kind (ties broken by a hash of its text), so both splits cover every question and kind; the
assignment is deterministic and never looks at how an answer grades.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
KINDS = {"complete", "partial", "wrong", "term-only", "appended"}


def _read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(paths: list[str]) -> int:
    splits = {name: _read(HERE / f"{name}.jsonl") for name in ("tune", "test")}
    seen = {r["text"] for rows in splits.values() for r in rows}
    counts = {name: Counter((r["id"], r["kind"]) for r in rows) for name, rows in splits.items()}
    added = Counter()
    for p in paths:
        for n, line in enumerate(Path(p).read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            r = json.loads(line)
            missing = {"id", "kind", "text"} - set(r)
            if missing or r["kind"] not in KINDS:
                print(f"{p}:{n}: skipped (missing {sorted(missing)} or unknown kind)", file=sys.stderr)
                continue
            if r["text"] in seen:
                continue
            seen.add(r["text"])
            key = (r["id"], r["kind"])
            tune, test = counts["tune"][key], counts["test"][key]
            if tune != test:
                name = "tune" if tune < test else "test"
            else:
                name = "tune" if hashlib.sha256(r["text"].encode()).digest()[0] % 2 == 0 else "test"
            splits[name].append(r)
            counts[name][key] += 1
            added[name] += 1
    for name, rows in splits.items():
        with open(HERE / f"{name}.jsonl", "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"added {added['tune']} to tune, {added['test']} to test; now {len(splits['tune'])} / "
          f"{len(splits['test'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

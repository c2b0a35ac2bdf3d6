"""Numbers the Home and Stats screens show, computed from the store and the library.

Mastery of a topic is the mean, over the topic's questions, of the probability of recalling each
one now: the FSRS retrievability of its card (Ye et al. 2022, "A Stochastic Shortest Path Algorithm
for Optimizing Spaced Repetition Scheduling"; the ``fsrs`` package), and 0 for a question never
reviewed. So a topic reaches 100 % only when every question has been reviewed recently enough to be
remembered. Pure functions over plain rows: no textual, no torch.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any


@dataclass(frozen=True)
class TopicRow:
    """One line of the Home screen's topic table."""

    topic: str
    title: str
    group: str
    questions: int
    reviewed: int
    due: int
    mastery: float


_SCHEDULER: Any = None


def retrievability(card_json: str, now: datetime) -> float:
    """Probability (0..1) of recalling a card at ``now`` under FSRS; 0 for an unreadable card.

    Cards are ``fsrs.Card`` JSON, as ``inferview.practice.scheduler`` stores them; retrievability
    depends only on the card's stability and the model's decay, not on the desired retention."""
    global _SCHEDULER
    try:
        import fsrs

        if _SCHEDULER is None:
            _SCHEDULER = fsrs.Scheduler()
        return float(_SCHEDULER.get_card_retrievability(fsrs.Card.from_json(card_json), now))
    except Exception:  # noqa: BLE001 - a card we cannot read counts as not remembered
        return 0.0


def topic_rows(library: Any, cards: list[dict[str, Any]], due_ids: list[str], now: datetime) -> list[TopicRow]:
    """Per topic (in the library's order): question count, reviewed, due now, mastery."""
    by_question = {c["question_id"]: c for c in cards}
    due = set(due_ids)
    rows: list[TopicRow] = []
    topic_ids = list(library.topics)
    for q in library.questions.values():
        if q.topic not in library.topics and q.topic not in topic_ids:
            topic_ids.append(q.topic)
    for tid in topic_ids:
        qs = [q.id for q in library.questions_for(tid)]
        recall = [retrievability(by_question[q]["card"], now) for q in qs if q in by_question]
        topic = library.topics.get(tid)
        rows.append(TopicRow(
            topic=tid,
            title=library.topic_title(tid),
            group=topic.group if topic is not None else "",
            questions=len(qs),
            reviewed=len(recall),
            due=sum(1 for q in qs if q in due),
            mastery=(sum(recall) / len(qs)) if qs else 0.0,
        ))
    return rows


def daily_series(attempts: list[dict[str, Any]], days: int, today: date) -> tuple[list[str], list[int], list[float | None]]:
    """For the last ``days`` days ending ``today``: labels (MM-DD), attempts per day, and accuracy
    per day (None on days without a graded attempt). Dates are UTC."""
    start = today - timedelta(days=days - 1)
    counts: dict[date, int] = defaultdict(int)
    correct: dict[date, int] = defaultdict(int)
    graded: dict[date, int] = defaultdict(int)
    for a in attempts:
        day = datetime.fromisoformat(a["created_at"]).date()
        if day < start or day > today:
            continue
        counts[day] += 1
        if a.get("correct") is not None:
            graded[day] += 1
            correct[day] += int(bool(a["correct"]))
    labels, n, acc = [], [], []
    for i in range(days):
        d = start + timedelta(days=i)
        labels.append(d.strftime("%m-%d"))
        n.append(counts[d])
        acc.append(correct[d] / graded[d] if graded[d] else None)
    return labels, n, acc


def topic_accuracy(attempts: list[dict[str, Any]]) -> dict[str, tuple[int, int, int]]:
    """Per topic: (attempts, graded, correct)."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for a in attempts:
        row = out[a["topic"]]
        row[0] += 1
        if a.get("correct") is not None:
            row[1] += 1
            row[2] += int(bool(a["correct"]))
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}


def ago(then: str | datetime, now: datetime, short: bool = False) -> str:
    """A relative time: "just now", "5 min ago", "3 h ago", "2 d ago" (short: "now", "5m", "3h",
    "2d")."""
    ts = datetime.fromisoformat(then) if isinstance(then, str) else then
    seconds = max(0.0, (now - ts).total_seconds())
    if short:
        for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
            if seconds >= size:
                return f"{int(seconds // size)}{unit}"
        return "now"
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} d ago"


@dataclass(frozen=True)
class RecentItem:
    """One line of Home's "Recent" list: what was attempted, in words, and how it went."""

    kind: str
    """``question`` or ``challenge``."""
    ref: str
    """The question or challenge id (shown dim, after the title)."""
    title: str
    """The challenge's title, or the question's prompt as plain text on one line."""
    correct: bool | None
    created_at: str


_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_MARKUP = re.compile(r"[*_`#>]+")


def prompt_title(prompt: str) -> str:
    """A question prompt as a one-line title: Markdown marks dropped, template fields such as
    ``{model}`` (of a drill whose numbers are not known) written "…", whitespace collapsed."""
    text = _PLACEHOLDER.sub("…", prompt)
    text = _MARKUP.sub("", text)
    return " ".join(text.split())


def recent_items(attempts: list[dict[str, Any]], submissions: list[dict[str, Any]], library: Any,
                 limit: int = 5) -> list[RecentItem]:
    """The newest question attempts and challenge submissions together, newest first, each with a
    human title (ids are kept for a dim second column)."""
    items = []
    for a in attempts:
        q = library.questions.get(a["question_id"])
        result = a.get("result") if isinstance(a.get("result"), dict) else {}
        prompt = result.get("prompt") or (q.prompt if q is not None else None)  # a drill's, as asked
        title = prompt_title(str(prompt)) if prompt else a["question_id"]
        items.append(RecentItem("question", a["question_id"], title, a["correct"], a["created_at"]))
    for s in submissions:
        ch = library.challenges.get(s["challenge_id"])
        title = ch.spec.title if ch is not None else s["challenge_id"]
        items.append(RecentItem("challenge", s["challenge_id"], title, s["verdict"] == "passed", s["created_at"]))
    items.sort(key=lambda i: i.created_at, reverse=True)
    return items[:limit]

"""The mock-interview report: score per topic, time per item, what was missed, what to review.

Built once, when the session ends, by grading every recorded answer with the same engine as
practice mode. Saved in the store with the session, shown again from Home, listed in
``inferview stats --json`` and exported with ``inferview report SESSION --md``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from inferview.content.loader import Library
from inferview.content.models import NumericQuestion
from inferview.mock.session import MockSession

REVIEW_BELOW = 0.7
"""Questions scored below this enter the review queue."""
CHALLENGE_WEIGHT = 2.0
"""The coding challenge counts as this many questions in its topic's score."""


@dataclass
class ItemReport:
    """How one item went."""

    index: int
    kind: str
    ref: str
    topic: str
    prompt: str
    budget_s: int
    time_s: float | None
    answered: bool
    score: float
    answer: str = ""
    message: str = ""
    model_answer: str = ""
    key_points_missed: list[str] = field(default_factory=list)
    misconceptions: list[dict[str, str]] = field(default_factory=list)
    verdict: str | None = None
    failing_checks: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Report:
    """The whole report."""

    session_id: int | None
    started_at: str
    minutes: float
    focus: str | None
    reason: str
    elapsed_s: float
    score: float
    topics: dict[str, dict[str, float]]
    items: list[ItemReport]
    review: list[str]
    challenge: dict[str, Any] | None
    clock_note: str = ""
    """What the timer did when the system clock jumped during the interview ("" when it did not)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        items = [ItemReport(**i) for i in data.get("items", [])]
        return cls(**{**data, "items": items})

    def to_markdown(self, lib: Library | None = None) -> str:
        """The report as Markdown (``inferview report SESSION --md``): items named by their prompt
        or title (ids only beside them, for ``inferview`` commands), never by id alone."""
        title = (lambda t: lib.topic_title(t)) if lib else (lambda t: t)
        out = [f"# Mock interview {self.session_id or ''}".rstrip(), ""]
        out.append(f"- Started: {_when(self.started_at)}")
        out.append(f"- Length: {self.minutes:g} min{f', focus: {title(self.focus)}' if self.focus else ''}")
        out.append(f"- Ended: {self.reason} after {_mmss(self.elapsed_s)}")
        if self.clock_note:
            out.append(f"- Timing: {self.clock_note}")
        out.append(f"- Overall score: **{100 * self.score:.0f}%**")
        out += ["", "## Score per topic", "", "| Topic | Score | Items |", "|---|---:|---:|"]
        for topic, s in self.topics.items():
            out.append(f"| {title(topic)} | {100 * s['score']:.0f}% | {int(s['items'])} |")
        out += ["", "## Items", "", "| # | Item | Topic | Time | Budget | Score |", "|---:|---|---|---:|---:|---:|"]
        for it in self.items:
            time_s = _mmss(it.time_s) if it.time_s is not None else "-"
            mark = f"{100 * it.score:.0f}%" if it.answered else "not answered"
            out.append(f"| {it.index + 1} | {_label(it).replace('|', '/')} | {title(it.topic)} | {time_s} | "
                       f"{_mmss(it.budget_s)} | {mark} |")
        if self.challenge:
            c = self.challenge
            item = next((it for it in self.items if it.kind == "challenge"), None)
            name = item.prompt if item is not None and item.prompt else c["id"]
            out += ["", f"## Coding challenge: {name}", "", f"Verdict: **{c['verdict'] or 'not graded'}**"]
            for chk in c.get("failing_checks", []):
                out.append(f"- ✗ {chk.get('name')}: {chk.get('message', '')}".rstrip(": "))
                if chk.get("counterexample"):
                    out.append(f"  - smallest failing input: `{_one_line(chk['counterexample'])}`")
                if chk.get("hint"):
                    out.append(f"  - hint: {chk['hint']}")
        out += self._by_topic(title)
        if self.review:
            out += ["", "## To review next", "",
                    "In your practice queue now: the questions you answered weakly are due for review, "
                    "the ones left unanswered are suggested as new.", ""]
            for qid in self.review:
                label = self._review_label(qid, lib)
                out.append(f"- {label} (`{qid}`)" if label else f"- `{qid}`")
        answered = [it for it in self.items if it.kind == "question"]
        if answered:
            out += ["", "## Answers and model answers", ""]
            for it in answered:
                out += [f"### {it.index + 1}. {it.prompt.strip()}", "", "**Your answer:**", "",
                        it.answer.strip() or "_(not answered)_", "", "**Model answer:**", "",
                        it.model_answer.strip(), ""]
                if it.message:
                    out += [f"_{it.message}_", ""]
        return "\n".join(out).rstrip() + "\n"


    def _by_topic(self, title: Any) -> list[str]:
        """Per topic: its score, the key points missed and the errors made (with corrections)."""
        out = ["", "## What each topic showed", ""]
        for topic, s in self.topics.items():
            items = [it for it in self.items if it.topic == topic]
            out += [f"### {title(topic)}: {100 * s['score']:.0f}%", ""]
            lines = []
            for it in items:
                if it.kind == "challenge":
                    verdict = it.verdict or ("not graded" if it.answered else "not attempted")
                    lines.append(f"- Coding, {_label(it)}: **{verdict}**"
                                 + (f", {len(it.failing_checks)} failing check"
                                    f"{'s' if len(it.failing_checks) != 1 else ''}"
                                    if it.failing_checks else ""))
                    continue
                if not it.answered:
                    lines.append(f"- {_label(it)}: not answered")
                    continue
                lines += [f"- Missed ({_label(it)}): {kp}" for kp in it.key_points_missed]
                lines += [f"- Error ({_label(it)}): “{m['claim']}” — {m['correction']}"
                          for m in it.misconceptions]
            out += (lines or ["- Every key point made, no error."]) + [""]
        return out[:-1]

    def _review_label(self, qid: str, lib: Library | None) -> str:
        """A review item's name: its prompt as asked, or as a drill renders it (never a template)."""
        asked = next((it for it in self.items if it.kind == "question" and it.ref == qid), None)
        if asked is not None:
            return _shorten(_plain(asked.prompt))
        q = lib.questions.get(qid) if lib else None
        if q is None:
            return ""
        if isinstance(q, NumericQuestion):
            from inferview.practice.drills import render

            return _shorten(_plain(render(q, seed=0).prompt))
        return _shorten(_plain(q.prompt))


def _plain(text: str) -> str:
    """Markdown emphasis and code marks out: a shortened title must not leave a backtick open."""
    return text.replace("**", "").replace("`", "")


LABEL_CHARS = 70
"""Items are named by the start of their prompt, cut at a word to about this many characters."""


def _shorten(text: str, width: int = LABEL_CHARS) -> str:
    """``text`` on one line, cut at a word boundary with an ellipsis when longer than ``width``."""
    line = " ".join(text.split())
    if len(line) <= width:
        return line
    cut = line[: width - 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:—-") + "…"


def _label(item: ItemReport) -> str:
    """How an item is named in the report: the start of its prompt (a challenge: its title)."""
    return _shorten(_plain(item.prompt)) if item.prompt else item.ref


def _when(iso: str) -> str:
    """A stored UTC timestamp as "2026-03-02 09:30 UTC" (the raw value when it does not parse)."""
    from datetime import datetime, timezone

    try:
        ts = datetime.fromisoformat(iso)
    except (TypeError, ValueError):
        return str(iso)
    if ts.tzinfo is not None:
        ts = ts.astimezone(timezone.utc)
    return ts.strftime("%Y-%m-%d %H:%M UTC")


def _mmss(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())[:200]


def _grade_question(lib: Library, item, response: dict[str, Any] | None, context: Any = None,
                    judge: Any = None) -> ItemReport:
    from inferview.practice import grading

    q = lib.questions.get(item.ref)
    rendered = None
    if q is None:
        return ItemReport(0, "question", item.ref, item.topic, f"(question {item.ref} no longer exists)",
                          item.budget_s, None, False, 0.0)
    if isinstance(q, NumericQuestion):
        from inferview.practice.drills import render

        rendered = render(q, seed=item.seed)
    prompt = rendered.prompt if rendered is not None else q.prompt
    model_answer = rendered.answer if rendered is not None else q.answer
    answered = bool(response) and not response.get("skipped") and bool(
        (response.get("text") or "").strip() or response.get("selected"))
    rep = ItemReport(0, "question", q.id, q.topic, prompt, item.budget_s,
                     (response or {}).get("time_s"), answered, 0.0, model_answer=model_answer,
                     answer=_answer_text(q, response))
    if not answered:
        if hasattr(q, "key_points"):
            rep.key_points_missed = [kp.point for kp in q.key_points]
        return rep
    result = grading.grade_answer(q, response.get("selected") if q.kind == "choice" else response.get("text", ""),
                                  rendered=rendered, context=context, judge=judge)
    rep.score = float(result.score)
    rep.message = result.message
    rep.key_points_missed = list(result.misses)
    rep.misconceptions = [{"claim": f["claim"], "correction": f["correction"]} for f in result.flags]
    return rep


def _answer_text(q, response: dict[str, Any] | None) -> str:
    if not response:
        return ""
    if q.kind == "choice":
        return "; ".join(q.options[i].text for i in response.get("selected", []) if 0 <= i < len(q.options))
    return response.get("text", "")


def build_report(session: MockSession, lib: Library, session_id: int | None = None,
                 judge: Any = None) -> Report:
    """Grade every answer of a finished (or ended) session and assemble the report (open answers
    as Practice grades them: the library's rubrics, and the judge when one is given)."""
    from inferview.practice.openq import RubricContext

    context = RubricContext.from_library(lib)
    items: list[ItemReport] = []
    challenge = None
    for i, item in enumerate(session.plan.items):
        response = session.responses.get(i)
        if item.kind == "challenge":
            result = (response or {}).get("result")
            checks = (result or {}).get("checks", [])
            verdict = (result or {}).get("verdict")
            passed = sum(c.get("status") == "passed" for c in checks)
            score = 1.0 if verdict == "passed" else (passed / len(checks) * 0.5 if checks else 0.0)
            failing = [c for c in checks if c.get("status") in ("failed", "error")]
            ch = lib.challenges.get(item.ref)
            attempted = bool(response) and bool(response.get("attempted", result is not None))
            message = (result or {}).get("message", "")
            if attempted and result is None:
                message = f"handed in but not graded: {(response or {}).get('error') or 'no result'}"
            rep = ItemReport(i, "challenge", item.ref, item.topic, ch.spec.title if ch else item.ref, item.budget_s,
                             (response or {}).get("time_s"), attempted, score, verdict=verdict,
                             failing_checks=failing, message=message)
            challenge = {"id": item.ref, "verdict": verdict, "failing_checks": failing,
                         "seed": (result or {}).get("seed"), "backend": (result or {}).get("backend")}
        else:
            rep = _grade_question(lib, item, response, context, judge)
            rep.index = i
        items.append(rep)

    topics: dict[str, dict[str, float]] = {}
    weights: dict[str, float] = {}
    for it in items:
        w = CHALLENGE_WEIGHT if it.kind == "challenge" else 1.0
        t = topics.setdefault(it.topic, {"score": 0.0, "items": 0})
        t["score"] += w * it.score
        t["items"] += 1
        weights[it.topic] = weights.get(it.topic, 0.0) + w
    for topic, t in topics.items():
        t["score"] = t["score"] / weights[topic]
    total_w = sum(weights.values())
    overall = sum(topics[t]["score"] * weights[t] for t in topics) / total_w if total_w else 0.0

    review: list[str] = []
    for it in items:
        if it.kind == "question" and (it.score < REVIEW_BELOW or it.misconceptions) and it.ref in lib.questions:
            review.append(it.ref)
    if challenge and challenge["verdict"] != "passed":
        ch = lib.challenges.get(challenge["id"])
        review += [q for q in (ch.spec.questions if ch else []) if q in lib.questions and q not in review]
    return Report(session_id, session.started_at, session.minutes, session.focus,
                  session.finished_reason or "ended early", session.elapsed_s(), overall, topics, items,
                  review, challenge, session.clock_note)

"""The mock-interview report over the real banks: scores, time per item, misses, review, export."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from click.testing import CliRunner

from inferview.cli import cli
from inferview.content.loader import load_library
from inferview.mock import store as mock_store
from inferview.practice.drills import render
from inferview.store import Store

LIB = load_library(include_user=False)


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _answer_everything_well(session, clock):
    while session.current is not None:
        item = session.current
        clock.t += 30
        if item.kind == "challenge":
            session.submit_challenge({"verdict": "passed", "checks": [{"name": "c", "status": "passed"}],
                                      "seed": 3, "backend": "cpu"}, "source")
            continue
        q = LIB.questions[item.ref]
        if q.kind == "choice":
            session.answer(selected=[i for i, o in enumerate(q.options) if o.correct])
        elif q.kind == "numeric":
            d = render(q, seed=item.seed)
            session.answer(text=f"{d.value!r} {d.unit}")
        else:
            session.answer(text=q.answer)


def test_a_strong_session_scores_high_and_schedules_nothing():
    clock = FakeClock()
    with Store.open() as store:
        mock_id, s = mock_store.start(store, LIB, 30, seed=11, clock=clock)
        _answer_everything_well(s, clock)
        assert s.status == "finished" and s.finished_reason == "completed"
        report = mock_store.finish(store, LIB, mock_id, s)
        assert report.score > 0.95, [(i.ref, i.score, i.message) for i in report.items if i.score < 1]
        assert report.review == []
        assert all(i.time_s == 30 for i in report.items)
        assert report.challenge["verdict"] == "passed"
        assert set(report.topics) == {i.topic for i in s.plan.items}
        assert store.get_mock(mock_id)["status"] == "finished"


def test_an_expired_session_reports_unanswered_items_and_schedules_them():
    clock = FakeClock()
    with Store.open() as store:
        mock_id, s = mock_store.start(store, LIB, 15, seed=4, clock=clock)
        first = s.current
        clock.t += 60
        s.answer(text="Flash attention approximates attention, so it is faster." if first.kind == "question" else "")
        clock.t += 15 * 60
        assert s.tick()[-1].kind == "expired"
        report = mock_store.finish(store, LIB, mock_id, s)
        assert report.reason == "time up"
        assert report.items[0].answered and report.items[0].time_s == 60
        assert not any(i.answered for i in report.items[1:])
        assert report.score < 0.3
        question_refs = [i.ref for i in report.items if i.kind == "question"]
        assert set(question_refs) <= set(report.review) | {report.items[0].ref}
        due = store.due_question_ids(datetime.now(timezone.utc) + timedelta(seconds=5))
        suggested = {row["question_id"] for row in store.suggestions()}
        answered = {i.ref for i in report.items if i.kind == "question" and i.answered}
        # the weak answer is a review due now; questions never reached are suggested, not reviews
        assert answered & set(report.review) <= set(due)
        assert set(report.review) - answered <= suggested
        assert not (set(report.review) - answered) & set(due)
        missed = [kp for i in report.items for kp in i.key_points_missed]
        assert missed


def test_misconceptions_are_flagged_in_the_report():
    from inferview.mock.plan import PlanItem

    exactness = next(q for q in LIB.questions_for("flash-attention") if q.kind == "open"
                     and any("approximat" in m.claim.lower() for m in q.misconceptions))
    clock = FakeClock()
    with Store.open() as store:
        mock_id, s = mock_store.start(store, LIB, 30, focus="flash-attention", seed=2, clock=clock)
        s.plan.items.insert(0, PlanItem("question", exactness.id, "flash-attention", 240))
        while s.current is not None:
            item = s.current
            if item.ref == exactness.id:
                s.answer(text="Flash attention is an approximation of attention that approximates the softmax.")
            else:
                s.skip()
        report = mock_store.finish(store, LIB, mock_id, s)
        flagged = [m for i in report.items for m in i.misconceptions]
        assert flagged, "an answer calling flash attention approximate must be flagged"
        assert "exact" in " ".join(m["correction"] for m in flagged).lower()


def test_markdown_export_and_stats_listing():
    clock = FakeClock()
    with Store.open() as store:
        mock_id, s = mock_store.start(store, LIB, 30, seed=5, clock=clock)
        _answer_everything_well(s, clock)
        report = mock_store.finish(store, LIB, mock_id, s)
    md = CliRunner().invoke(cli, ["report", str(mock_id), "--md"])
    assert md.exit_code == 0, md.output
    text = md.output
    for heading in ("# Mock interview", "## Score per topic", "## Items", "## Coding challenge", "## Answers and model answers"):
        assert heading in text
    assert f"{100 * report.score:.0f}%" in text
    data = json.loads(CliRunner().invoke(cli, ["stats", "--json"]).output)
    assert data["mock_sessions"][0]["id"] == mock_id and data["mock_sessions"][0]["status"] == "finished"
    assert abs(data["mock_sessions"][0]["score"] - report.score) < 1e-9
    js = json.loads(CliRunner().invoke(cli, ["report", str(mock_id), "--json"]).output)
    assert js["session_id"] == mock_id
    laid_out = CliRunner().invoke(cli, ["report", str(mock_id)])
    assert laid_out.exit_code == 0 and laid_out.output != text
    assert "Mock interview" in laid_out.output and "## " not in laid_out.output
    assert "|---" not in laid_out.output and "**" not in laid_out.output


def test_report_of_unknown_or_unfinished_session_is_a_clear_error():
    result = CliRunner().invoke(cli, ["report", "999"])
    assert result.exit_code == 2 and "no mock interview with id 999" in result.output
    with Store.open() as store:
        mock_id, _ = mock_store.start(store, LIB, 15, seed=1)
    result = CliRunner().invoke(cli, ["report", str(mock_id)])
    assert result.exit_code == 1 and "has not finished" in result.output
    assert f"inferview mock --resume {mock_id}" in result.output
    result = CliRunner().invoke(cli, ["report", "abc"])
    assert result.exit_code == 2
    with Store.open() as store:
        broken = store.create_mock({"minutes": 15})
        store.update_mock(broken, {}, "finished")
        garbled = store.create_mock({"minutes": 15})
        store.update_mock(garbled, {"report": {"nonsense": 1}}, "finished")
    result = CliRunner().invoke(cli, ["report", str(broken)])
    assert result.exit_code == 1 and "has no saved report" in result.output
    result = CliRunner().invoke(cli, ["report", str(garbled)])
    assert result.exit_code == 1 and "cannot be read" in result.output, result.output
    result = CliRunner().invoke(cli, ["report"])  # the latest with a report, not the one without
    assert result.exit_code == 1 and f"mock interview {garbled} cannot be read" in result.output


def test_resume_of_an_unknown_or_finished_session_is_refused_before_the_app_opens():
    result = CliRunner().invoke(cli, ["mock", "--resume", "999"])
    assert result.exit_code == 1 and "no mock interview with id 999" in result.output
    with Store.open() as store:
        done = store.create_mock({"minutes": 15})
        store.update_mock(done, {}, "finished")
    result = CliRunner().invoke(cli, ["mock", "--resume", str(done)])
    assert result.exit_code == 1 and f"inferview report {done}" in result.output


def test_the_markdown_names_items_by_prompt_and_title_not_by_id():
    from inferview.mock.session import MockSession

    s = MockSession.new(LIB, 30, seed=5, clock=FakeClock())
    s.started_at = "2026-03-02T09:30:05+00:00"
    while s.current is not None:
        s.skip()  # nothing answered: every key point is missed and every question is to review
    md = mock_store.build_report(s, LIB, 7).to_markdown(LIB)
    assert "- Started: 2026-03-02 09:30 UTC" in md
    challenge = next(i for i in s.plan.items if i.kind == "challenge")
    assert f"## Coding challenge: {LIB.challenges[challenge.ref].spec.title}" in md
    first = next(i for i in s.plan.items if i.kind == "question")
    LIB.questions[first.ref]
    section = md[md.index("## What each topic showed"):md.index("## To review")]
    assert f"{first.ref}" not in section  # named by prompt, not by id
    assert f"### {LIB.topic_title(first.topic)}: 0%" in section
    assert "- Coding, " in section and ": **not attempted**" in section
    review = md[md.index("## To review"):md.index("## Answers")]
    assert f"(`{first.ref}`)" in review and f"- `{first.ref}`" not in review
    for line in review.splitlines():
        assert "{" not in line, line  # drills named as rendered, never by their template
        assert line.count("`") % 2 == 0, line  # a shortened title leaves no backtick open
    for line in md[md.index("## Items"):md.index("## Coding")].strip().splitlines()[4:]:
        label = line.split(" | ")[1]
        assert len(label) <= 70 and (label.endswith("…") or not label.endswith(" "))

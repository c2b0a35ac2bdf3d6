"""The optional local-model judge against a real HTTP server on loopback that speaks the
OpenAI-compatible chat API, including its failure modes; and ``inferview answer`` end to end."""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from inferview.cli import main
from inferview.content.models import KeyPoint, Misconception, OpenQuestion
from inferview.practice import lexicon
from inferview.practice.judge import JudgeConfig, grade_with_judge, quote_in
from inferview.practice.openq import Rubric

QUESTION = OpenQuestion(
    id="j-q", topic="t-topic", prompt="Why is decode slow?", source="test",
    answer="Decode is memory-bound: every step reads all the weights for one token.",
    key_points=[
        KeyPoint(point="Decode is memory-bandwidth-bound", main=True, match=["decode @memory-bound"]),
        KeyPoint(point="Every step reads all the weights", match=["read (every|all) weight"]),
    ],
    misconceptions=[Misconception(claim="Decode is compute-bound", match=["decode @compute-bound"],
                                  correction="Decode does about 1 FLOP per byte read.")],
)
ANSWER = "Generation waits on HBM: each new token needs the whole model streamed in again."


class FakeServer:
    """A chat-completions endpoint whose replies the test scripts: ``mode`` is ``ok``, ``slow``,
    ``500``, ``invalid`` or ``invent``; ``verdicts`` maps a claim's words to (verdict, quote)."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.verdicts: dict[str, tuple[str, str]] = {}
        self.requests: list[dict] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_POST(self):  # noqa: N802 - the http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append({"path": self.path, **body})
                if owner.mode == "slow":
                    time.sleep(2)
                if owner.mode == "500":
                    self.send_response(500)
                    self.end_headers()
                    self.wfile.write(b"internal error")
                    return
                claim = re.search(r"Claim: (.*)\n", body["messages"][-1]["content"]).group(1)
                verdict, quote = next((v for k, v in owner.verdicts.items() if k in claim), ("no", ""))
                if owner.mode == "invent" and verdict != "no":
                    quote = "words the candidate never wrote"
                content = "not json {" if owner.mode == "invalid" else json.dumps(
                    {"verdict": verdict, "quote": quote})
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(data.encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


def rubric() -> Rubric:
    return Rubric.build(QUESTION, lexicon.shared())


def test_the_judge_decides_and_quotes(server):
    server.verdicts = {"memory-bandwidth-bound": ("yes", "Generation waits on HBM"),
                       "reads all the weights": ("yes", "the whole model streamed in again")}
    g = grade_with_judge(rubric(), ANSWER, JudgeConfig(server.url, "local-model", timeout_s=5))
    assert g.grader == "judge" and g.verdict == "pass" and not g.note
    assert [p.matched for p in g.points] == ["Generation waits on HBM", "the whole model streamed in again"]
    # the rubric alone misses both points of this wording
    assert rubric().grade(ANSWER).verdict != "pass"


def test_requests_follow_the_protocol(server):
    grade_with_judge(rubric(), ANSWER, JudgeConfig(server.url, "local-model", timeout_s=5))
    assert len(server.requests) == 3  # two key points, one error
    req = server.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["model"] == "local-model"
    assert req["temperature"] == 0
    assert req["response_format"]["type"] == "json_schema"
    schema = req["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["verdict", "quote"]


def test_an_opposite_key_point_and_an_asserted_error_are_flagged(server):
    server.verdicts = {"memory-bandwidth-bound": ("opposite", "compute is the limit"),
                       "compute-bound": ("yes", "compute is the limit")}
    g = grade_with_judge(rubric(), "Decode: compute is the limit.", JudgeConfig(server.url, "m", 5))
    assert {e.origin for e in g.errors} == {"reversal", "question"}
    assert g.verdict != "pass"


def test_an_invented_quote_is_discarded(server):
    server.mode = "invent"
    server.verdicts = {"memory-bandwidth-bound": ("yes", "x"), "compute-bound": ("yes", "x")}
    g = grade_with_judge(rubric(), ANSWER, JudgeConfig(server.url, "m", 5))
    assert g.grader == "judge"
    assert not g.hits and not g.errors
    assert "discarded" in g.note


@pytest.mark.parametrize("mode, why", [("slow", "no reply within"), ("500", "HTTP 500"),
                                       ("invalid", "not the JSON asked for")])
def test_failures_leave_the_rubric_result_standing(server, mode, why):
    server.mode = mode
    text = "Decode is memory-bound: every step reads all the weights."
    g = grade_with_judge(rubric(), text, JudgeConfig(server.url, "m", timeout_s=0.5))
    assert g.grader == "rubric" and g.verdict == "pass"
    assert why in g.note and "the rubric decided" in g.note


def test_a_refused_connection_leaves_the_rubric_result_standing():
    g = grade_with_judge(rubric(), ANSWER, JudgeConfig("http://127.0.0.1:9/v1", "m", timeout_s=1))
    assert g.grader == "rubric" and "cannot reach" in g.note


def test_quote_matching_ignores_case_spacing_and_edge_punctuation():
    assert quote_in('"generation  waits on HBM."', ANSWER)
    assert not quote_in("waits on DRAM", ANSWER)
    assert not quote_in("", ANSWER)


def test_settings_come_from_the_environment_or_the_config_file(monkeypatch, inferview_home):
    monkeypatch.delenv("INFERVIEW_JUDGE_URL", raising=False)
    monkeypatch.delenv("INFERVIEW_JUDGE_MODEL", raising=False)
    assert JudgeConfig.from_settings() is None
    (inferview_home / "config.toml").write_text(
        'INFERVIEW_JUDGE_URL = "http://127.0.0.1:11434/v1/"\nINFERVIEW_JUDGE_MODEL = "qwen"\n'
        "INFERVIEW_JUDGE_TIMEOUT = 12\n")
    cfg = JudgeConfig.from_settings()
    assert cfg == JudgeConfig("http://127.0.0.1:11434/v1", "qwen", 12.0)
    monkeypatch.setenv("INFERVIEW_JUDGE_MODEL", "llama")
    assert JudgeConfig.from_settings().model == "llama"


# ------------------------------------------------------------------------------- the command




def _main_rc(argv, capsys, monkeypatch, stdin=None):
    import io

    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_answer_command_json_from_stdin(capsys, monkeypatch):
    code, out, _ = _main_rc(["answer", "attn-why-not-mqa-everywhere", "--json"], capsys, monkeypatch,
                            stdin="MQA costs quality: one shared K/V head removes head diversity. "
                                  "GQA keeps most of the memory saving with near-MHA quality.")
    assert code == 0
    obj = json.loads(out)
    assert obj["id"] == "attn-why-not-mqa-everywhere" and obj["grader"] == "rubric"
    assert obj["verdict"] == "pass"
    assert {"text", "hit", "matched"} == set(obj["key_points"][0])


def test_answer_command_text_from_file_names_words_and_corrections(capsys, monkeypatch, tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("With MQA, the quality is the same as MHA.")
    code, out, _ = _main_rc(["answer", "attn-why-not-mqa-everywhere", "--file", str(f)], capsys, monkeypatch)
    assert code == 0
    assert "MQA keeps the quality of multi-head attention" in out
    assert 'matched: "MQA, the quality is the same"' in out
    assert "correction:" in out and "graded by the rubric" in out


def test_answer_command_batch(capsys, monkeypatch, tmp_path):
    f = tmp_path / "b.jsonl"
    f.write_text(json.dumps({"id": "attn-why-not-mqa-everywhere", "text": "It costs quality."}) + "\n"
                 + json.dumps({"id": "kv-formula-choice", "text": "x"}) + "\n"
                 + "not json\n")
    code, out, err = _main_rc(["answer", "--batch", str(f), "--json"], capsys, monkeypatch)
    assert code == 2
    assert len(out.strip().splitlines()) == 1 and json.loads(out)["verdict"] in ("partial", "pass")
    assert "b.jsonl:2: 'kv-formula-choice' is a choice question" in err
    assert "b.jsonl:3: not a JSON object" in err


@pytest.mark.parametrize("argv, message", [
    (["answer", "no-such-question"], "unknown question"),
    (["answer", "kv-formula-choice"], "is a choice question"),
    (["answer"], "give a QUESTION_ID"),
])
def test_answer_command_usage_errors_exit_2(capsys, monkeypatch, argv, message):
    code, _, err = _main_rc(argv, capsys, monkeypatch, stdin="some answer")
    assert code == 2 and message in err


def test_answer_command_empty_answer_is_a_usage_error(capsys, monkeypatch):
    code, _, err = _main_rc(["answer", "attn-why-not-mqa-everywhere"], capsys, monkeypatch, stdin="  \n")
    assert code == 2 and "no answer text" in err


def test_answer_command_uses_the_configured_judge(capsys, monkeypatch, server):
    server.verdicts = {"costs quality": ("yes", "heads all read one K/V"),
                       "most of the memory saving": ("yes", "GQA is the sweet spot")}
    monkeypatch.setenv("INFERVIEW_JUDGE_URL", server.url)
    monkeypatch.setenv("INFERVIEW_JUDGE_MODEL", "m")
    text = "The heads all read one K/V, so they can't specialise. GQA is the sweet spot."
    code, out, _ = _main_rc(["answer", "attn-why-not-mqa-everywhere", "--json"], capsys, monkeypatch,
                            stdin=text)
    assert code == 0 and json.loads(out)["grader"] == "judge"
    code, out, _ = _main_rc(["answer", "attn-why-not-mqa-everywhere", "--json", "--no-judge"], capsys,
                            monkeypatch, stdin=text)
    assert json.loads(out)["grader"] == "rubric"

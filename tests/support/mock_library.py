"""A small synthetic library for mock-interview tests: a few topics, questions and a challenge."""

from __future__ import annotations

from pathlib import Path

from inferview.content.loader import Library, LoadedChallenge
from inferview.content.models import (
    ChallengeSpec,
    ChoiceOption,
    ChoiceQuestion,
    KeyPoint,
    Misconception,
    OpenQuestion,
    Topic,
)

TOPICS = ["serving", "kv-cache", "attention-variants", "quantization", "flash-attention",
          "speculative-decoding", "moe", "pruning", "distillation", "framing"]


def make_library(with_challenge: bool = True) -> Library:
    lib = Library()
    for t in TOPICS:
        lib.topics[t] = Topic(id=t, title=t.replace("-", " ").title())
    lib.questions["serve-why-slow"] = OpenQuestion(
        id="serve-why-slow", topic="serving", prompt="Why is generation slow?",
        answer="Decoding is sequential: one token at a time, each step reads all the weights.",
        source="test", tags=["seed-worded"], follow_ups=["kv-why"],
        key_points=[KeyPoint(point="sequential decoding",
                             match=["1 token (a time|time)", "decode @sequential"]),
                    KeyPoint(point="memory bound", match=["decode @memory-bound", "read (all|every) weight"])])
    for t in TOPICS:
        for n in range(3):
            qid = f"{t}-q{n}" if not (t == "kv-cache" and n == 0) else "kv-why"
            lib.questions[qid] = OpenQuestion(
                id=qid, topic=t, prompt=f"Explain {t} ({n})?", answer=f"The {t} answer uses the keyword alpha{n}.",
                source="test", tags=["seed-worded"] if n == 0 else [],
                follow_ups=[f"{t}-q{n + 1}"] if n < 2 else [],
                key_points=[KeyPoint(point=f"mentions alpha{n}", match=[f"keyword alpha{n}"])],
                misconceptions=[Misconception(claim="it is approximate", match=[f"{t} @approximate"],
                                              correction="it is exact")])
        lib.questions[f"{t}-c0"] = ChoiceQuestion(
            id=f"{t}-c0", topic=t, prompt=f"Pick for {t}", answer="The first.", source="test",
            options=[ChoiceOption(text="right", correct=True), ChoiceOption(text="wrong")])
    lib.questions["kv-cache-q1"] = lib.questions["kv-cache-q1"].model_copy(update={"follow_ups": ["kv-cache-q2"]})
    if with_challenge:
        spec = ChallengeSpec(id="kv-cache", title="Implement a KV cache", topic="kv-cache", time_budget_min=10,
                             entry_points=[{"name": "KVCache", "kind": "class"}],
                             hints=[{"text": "a"}, {"text": "b"}, {"text": "c"}], questions=["kv-why"])
        lib.challenges["kv-cache"] = LoadedChallenge(spec, Path("."), True)
    for q in lib.questions.values():
        lib.question_bank[q.id] = "test"
    return lib

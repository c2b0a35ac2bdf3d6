"""Content loading: a bad file is reported with file, line and field; everything else still loads."""

from __future__ import annotations

import textwrap

import pytest

from inferview.content.loader import find_challenge, load_bank_file, load_library
from inferview.content.models import Bank

GOOD_Q = """
  - id: my-q-{n}
    kind: choice
    topic: kv-cache
    prompt: What does the KV cache store?
    answer: The keys and values of past tokens.
    source: my notes
    options:
      - text: keys and values
        correct: true
      - text: queries
"""


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_yaml_syntax_error_names_file_and_line_and_the_rest_loads(inferview_home):
    qdir = inferview_home / "questions"
    _write(qdir / "broken.yaml", "bank: broken\ntitle: Broken\nquestions:\n  - id: [oops\n")
    _write(qdir / "mine.yaml", "bank: mine\ntitle: Mine\nquestions:" + GOOD_Q.format(n=1))
    lib = load_library()
    assert "my-q-1" in lib.questions
    (err,) = [e for e in lib.errors if e.path.name == "broken.yaml"]
    assert err.line == 5 and "YAML syntax error" in err.message
    assert str(err).startswith(f"{qdir / 'broken.yaml'}:5:")


def test_schema_error_names_line_and_field_and_keeps_good_questions(inferview_home):
    bad = """
      - id: my-bad
        kind: open
        topic: kv-cache
        prompt: Why cache?
        answer: To avoid recomputation.
        source: notes
        key_points:
          - point: avoids recomputation
            phrases: []
    """
    path = _write(inferview_home / "questions" / "mixed.yaml",
                  "bank: mixed\ntitle: Mixed\nquestions:" + GOOD_Q.format(n=2) + textwrap.indent(textwrap.dedent(bad), "  "))
    bank, errors = load_bank_file(path)
    assert [q.id for q in bank.questions] == ["my-q-2"]
    (err,) = errors
    assert err.field == "questions[1] (my-bad).key_points[0].phrases"
    assert err.line == path.read_text().splitlines().index("        phrases: []") + 1
    lib = load_library()
    assert "my-q-2" in lib.questions and "my-bad" not in lib.questions


def test_unknown_kind_and_missing_fields_are_reported(tmp_path):
    path = _write(tmp_path / "b.yaml", """
        bank: bb
        title: B
        questions:
          - id: q1
            kind: essay
            topic: kv-cache
            prompt: Something long enough
            answer: Something long enough
            source: here
          - id: q2
            kind: choice
            topic: kv-cache
            prompt: Pick one please
            answer: The first one.
            source: here
            options:
              - text: a
              - text: b
    """)
    bank, errors = load_bank_file(path)
    assert bank.questions == []
    assert len(errors) == 2
    assert "kind" in errors[0].message or "essay" in errors[0].message
    assert "at least one correct option" in errors[1].message


def test_duplicate_ids_across_banks_keep_the_first(inferview_home):
    _write(inferview_home / "questions" / "a.yaml", "bank: aa\ntitle: A\nquestions:" + GOOD_Q.format(n=9))
    _write(inferview_home / "questions" / "b.yaml", "bank: bb\ntitle: B\nquestions:" + GOOD_Q.format(n=9))
    lib = load_library()
    assert lib.question_bank["my-q-9"] == "aa"
    assert any("already used" in e.message for e in lib.errors)


def test_user_challenge_loads_beside_builtin(inferview_home):
    folder = inferview_home / "challenges" / "my-softmax"
    _write(folder / "challenge.yaml", """
        id: my-softmax
        title: Stable softmax
        topic: flash-attention
        entry_points: [{name: softmax}]
        hints: [{text: subtract the max}, {text: exp}, {text: divide by the sum}]
    """)
    for name in ("statement.md", "starter.py", "checks.py"):
        _write(folder / name, "# placeholder content for the test\n")
    lib = load_library()
    assert lib.challenges["my-softmax"].builtin is False
    assert find_challenge("my-softmax", lib).folder == folder
    assert find_challenge(str(folder)).spec.title == "Stable softmax"


def test_challenge_with_missing_files_and_wrong_id_is_reported(inferview_home):
    folder = inferview_home / "challenges" / "oops"
    _write(folder / "challenge.yaml", """
        id: not-oops
        title: Oops
        topic: kv-cache
        entry_points: [{name: f}]
        hints: [{text: a}, {text: b}, {text: c}]
    """)
    lib = load_library()
    assert "not-oops" not in lib.challenges
    messages = [str(e) for e in lib.errors if "oops" in str(e.path)]
    assert any("must equal the folder name" in m for m in messages)
    assert any("statement.md" in m for m in messages)


def test_unknown_challenge_message_lists_known_ids():
    try:
        find_challenge("no-such-challenge")
    except KeyError as exc:
        assert "unknown challenge 'no-such-challenge'" in str(exc)
    else:
        raise AssertionError("expected KeyError")


def test_builtin_topics_load():
    lib = load_library(include_user=False)
    assert {"kv-cache", "flash-attention", "speculative-decoding", "framing"} <= set(lib.topics)
    assert Bank.model_fields["questions"].description


def test_unknown_challenge_suggests_the_closest_id():
    from inferview.content.loader import unknown_challenge_message

    msg = unknown_challenge_message("kv-cach", ["kv-cache", "kv-cache-size", "quantize"])
    assert msg.startswith("unknown challenge 'kv-cach'; did you mean 'kv-cache'?")
    assert "did you mean" not in unknown_challenge_message("zzzz", ["kv-cache"])
    assert "did you mean 'kv-cache-size'?" in unknown_challenge_message("KV-CACHE-SIZE",
                                                                       ["kv-cache", "kv-cache-size"])


def test_a_folder_without_challenge_yaml_is_named_as_such(tmp_path):
    with pytest.raises(KeyError, match="is a folder but not a challenge"):
        find_challenge(str(tmp_path))


def test_a_topic_typo_is_blamed_on_its_own_file_with_a_suggestion(inferview_home):
    from inferview.content.loader import cross_reference_errors

    typo = GOOD_Q.format(n=1).replace("topic: kv-cache", "topic: kv-cahce")
    a = _write(inferview_home / "questions" / "a.yaml", "bank: same\ntitle: A\nquestions:" + typo)
    b = _write(inferview_home / "questions" / "b.yaml",
               "bank: same\ntitle: B\nquestions:" + GOOD_Q.format(n=2))
    lib = load_library()
    topic_errors = [e for e in cross_reference_errors(lib) if e.field == "question my-q-1.topic"]
    assert [e.path for e in topic_errors] == [a]
    assert "did you mean 'kv-cache'?" in topic_errors[0].message
    assert any(e.path == b and "bank id 'same' is also used by" in e.message for e in lib.errors)

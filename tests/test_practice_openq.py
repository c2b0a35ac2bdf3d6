"""Phrase matching for open questions: the published semantics of inferview.practice.openq."""

from __future__ import annotations

import pytest

from inferview.content.models import KeyPoint, Misconception, OpenQuestion
from inferview.practice.openq import find_phrase, grade_open, normalize, stem, tokenize


@pytest.mark.parametrize(
    "words, same",
    [
        (["recompute", "recomputes", "recomputed", "recomputing", "Recomputes"], True),
        (["cache", "caches", "cached", "caching"], True),
        (["layer", "layers"], True),
        (["entry", "entries"], True),
        (["run", "running", "runs"], True),
        (["use", "used", "uses"], True),
        (["exact", "exactly"], True),
        (["need", "needs"], True),
        (["layer", "lay"], False),
        (["fp16", "fp8"], False),
    ],
)
def test_stemmer_groups(words, same):
    stems = {stem(w.lower()) for w in words}
    assert (len(stems) == 1) is same, stems


def test_short_words_and_numbers_are_intact():
    assert stem("kv") == "kv"
    assert stem("gqa") == "gqa"
    assert stem("4096") == "4096"
    assert stem("int4s") == "int4s"
    assert stem("string") == "string"


def test_tokenize_splits_hyphens_slashes_and_drops_punctuation():
    assert tokenize("KV-cache, bits/byte; the model's 1.5x!") == [
        "kv", "cache", "bits", "byte", "the", "model", "1.5", "x",
    ]
    assert tokenize("it isn’t") == ["it", "isn't"]


def test_phrase_window_is_len_plus_three():
    assert find_phrase("stores the keys", "it stores all of the keys") is not None
    # 4 extra words inside a 3-word phrase is too far
    assert find_phrase("stores the keys", "it stores all of the many old keys") is None
    # order matters
    assert find_phrase("keys values", "values and keys") is None
    assert find_phrase("key value", "Keys and values") is not None
    assert find_phrase("kv cache", "the KV-cache grows") is not None


def _q(**kw) -> OpenQuestion:
    base = dict(
        id="t-q", topic="kv-cache", prompt="Why cache?", answer="Because.", source="test",
        key_points=[KeyPoint(point="avoids recomputation", phrases=["recompute keys", "avoid recomputing"])],
        misconceptions=[
            Misconception(claim="flash attention approximates", phrases=["approximates attention"],
                          correction="It is exact."),
        ],
    )
    base.update(kw)
    return OpenQuestion(**base)


def test_key_points_hit_and_missed():
    q = _q()
    g = grade_open(q, "Without it we'd recompute all past keys every step.")
    assert [k.point for k in g.hits] == ["avoids recomputation"]
    assert g.missed == [] and g.flagged == []
    assert g.score == 1.0
    g = grade_open(q, "It makes things faster.")
    assert g.hits == [] and len(g.missed) == 1 and g.score == 0.0


@pytest.mark.parametrize(
    "text, flagged",
    [
        ("Flash attention approximates attention to save memory.", True),
        ("It approximated attention.", True),
        ("It does not approximate attention; it is exact.", False),
        ("It never approximates attention.", False),
        ("It computes exact results rather than approximating attention.", False),
        ("It tiles instead of approximating attention.", False),
        ("It doesn't approximate attention.", False),
        # negation more than 3 words before the match does not count
        ("Not at all slow, and it simply approximates attention.", True),
    ],
)
def test_misconception_negation(text, flagged):
    g = grade_open(_q(), text)
    assert bool(g.flagged) is flagged


def test_flag_lowers_score():
    g = grade_open(_q(), "We avoid recomputing keys, and it approximates attention.")
    assert len(g.hits) == 1 and len(g.flagged) == 1
    assert g.score == pytest.approx(0.75)


def test_normalize_is_applied_to_phrases_too():
    assert normalize("Caching KV-Values") == normalize("cached kv values")


def test_self_check():
    from inferview.practice.openq import self_check

    assert self_check(_q(answer="It is faster.")) != []  # no key point phrase matches
    good = _q(answer="Without a cache we would recompute keys each step; it is exact.")
    assert self_check(good) == []
    bad = _q(answer="We recompute keys. Flash attention approximates attention.")
    assert any("states" in p for p in self_check(bad))


def test_negation_does_not_cross_a_clause_boundary():
    from inferview.content.models import Misconception
    from inferview.practice.openq import detect_misconception

    mis = Misconception(claim="flash attention only helps training", phrases=["only helps training"],
                        correction="it helps prefill at inference too")
    assert detect_misconception(mis, "No, it only helps training.") is not None
    assert detect_misconception(mis, "Yes. It only helps training") is not None
    assert detect_misconception(mis, "It does not only help training; prefill benefits too.") is None


def test_negation_inside_the_match_window_discards_the_match():
    from inferview.content.models import Misconception
    from inferview.practice.openq import detect_misconception

    approx = Misconception(claim="flash attention is approximate", phrases=["is approximate"],
                           correction="it computes exact attention")
    assert detect_misconception(approx, "Flash attention is exact, not approximate.") is None
    assert detect_misconception(approx, "Flash attention is approximate.") is not None
    bound = Misconception(claim="decode is compute-bound", phrases=["decode is compute bound"],
                          correction="decode is memory-bound")
    assert detect_misconception(bound, "Decode is memory-bound, not compute-bound.") is None
    own = Misconception(claim="pruning does not need data", phrases=["does not need data"],
                        correction="recovery needs data")
    assert detect_misconception(own, "Pruning does not need data at all.") is not None


def test_example_answers_are_checked_by_self_check():
    from inferview.content.models import OpenQuestion
    from inferview.practice.openq import self_check

    q = OpenQuestion.model_validate({
        "id": "fa-exact-demo", "topic": "flash-attention", "prompt": "Is flash attention exact?",
        "answer": "Yes: it computes exact attention in tiles with an online softmax.", "source": "test",
        "key_points": [{"point": "exact", "phrases": ["exact attention", "same result"]}],
        "misconceptions": [{"claim": "it approximates", "phrases": ["approximates attention"],
                            "correction": "it is exact"}],
        "examples": {"good": ["It gives the same result, just computed in blocks.", "It is faster."],
                     "bad": ["It approximates attention to save memory.", "It is great."]},
    })
    problems = self_check(q)
    assert problems == ["examples.good[1]: scores 0.00, missing 'exact'",
                        "examples.bad[1]: no misconception is flagged"]


def test_phrases_the_matcher_cannot_use_are_reported():
    from inferview.practice.openq import phrase_problem

    assert "matching ignores ×" in phrase_problem("2×")
    assert phrase_problem("γ") == "has no words the matcher can see"
    assert phrase_problem("T²") is None and phrase_problem("n^2") is None  # "t squared", "n squared"
    assert phrase_problem("b·k/e") is not None and phrase_problem("0.5") is not None
    for fine in ("2:4", "448", "3.36", "93 gb", "up to 2x", "flash attention approximates", "1.78×"):
        assert phrase_problem(fine) is None, fine


def test_a_misconception_does_not_match_across_sentences():
    from inferview.content.models import Misconception
    from inferview.practice.openq import detect_misconception

    sparse = Misconception(claim="attention is sparse in an MoE", phrases=["attention is sparse"],
                           correction="only the FFN is sparse")
    assert detect_misconception(sparse, "Experts replace the FFN, not attention; only the FFN is sparse.") is None
    assert detect_misconception(sparse, "In an MoE the attention is sparse too.") is not None
    spans = Misconception(claim="same range", phrases=["same range; bf16"], correction="bf16 has fp32's range")
    assert detect_misconception(spans, "They have the same range; bf16 rounds differently.") is not None


def test_a_misconception_does_not_match_across_a_comma_but_a_thousands_comma_splits_nothing():
    from inferview.content.models import Misconception
    from inferview.practice.openq import detect_misconception

    precise = Misconception(claim="bf16 is more precise", phrases=["bf16 has more precision"],
                            correction="fp16 has more mantissa bits")
    assert detect_misconception(precise, "bf16 has fp32's range, fp16 more precision.") is None
    assert detect_misconception(precise, "bf16 has a lot more precision than fp16.") is not None
    heads = Misconception(claim="it uses 4,096 heads", phrases=["uses 4 096 heads"], correction="it does not")
    assert detect_misconception(heads, "It uses 4,096 heads.") is not None  # a number, not a break
    assert detect_misconception(heads, "It uses 4, 096 heads.") is None


@pytest.mark.parametrize("text", ["O(n^2) work", "O(n ^ 2) work", "O(n²) work", "n squared work"])
def test_powers_written_as_carets_or_superscripts_read_as_words(text):
    assert normalize(text)[-3:] == normalize("n squared work")
    assert find_phrase("n squared", text) is not None


def test_other_exponents_are_left_alone():
    assert normalize("2^20 bytes") == normalize("2 20 bytes")
    assert normalize("x^2.5") == ["x", "2.5"] and normalize("T³") == ["t", "cub"]

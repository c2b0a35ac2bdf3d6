"""The rubric grader's published semantics: reading text, patterns, polarity, figures, errors."""

from __future__ import annotations

import pytest

from inferview.content.models import KeyPoint, Misconception, OpenQuestion
from inferview.practice import lexicon, textnorm
from inferview.practice.openq import Rubric, RubricContext, grade_open, self_check
from inferview.practice.patterns import PatternError, Reading, compile_pattern, match

LEX = lexicon.shared()


def hits(pattern: str, text: str, **kw) -> list[tuple[str, bool]]:
    """(answer words, affirmed) for every sentence where ``pattern`` matches ``text``."""
    return [(m.words, m.affirmed) for m in match(compile_pattern(pattern, LEX), Reading(text, LEX), **kw)]


def affirmed(pattern: str, text: str, **kw) -> bool:
    return any(a for _, a in hits(pattern, text, **kw))


def reversed_(pattern: str, text: str, **kw) -> bool:
    found = hits(pattern, text, **kw)
    return bool(found) and not any(a for _, a in found)


# ------------------------------------------------------------------------------- reading text


def test_contractions_are_expanded():
    words = [t.surface for t in textnorm.read("It can't, it isn't, we'd, they're, won't").tokens]
    assert words == ["it", "can", "not", "it", "is", "not", "we", "would", "they", "are", "will", "not"]


def test_number_words_become_digits():
    doc = textnorm.read("one FLOP per byte; forty-seven billion; two hundred and fifty six; 4,096")
    assert [t.lemma for t in doc.tokens if t.lemma[0].isdigit()] == ["1", "47", "256", "4096"]


def test_quantities_are_read_with_scale_and_unit():
    doc = textnorm.read("46.7B params, 93.4 GB, 87 GiB, 2x, 56%")
    q = [t.quantity for t in doc.tokens if t.quantity is not None]
    assert q[0].fits(47e9, "count", 0.05)
    assert q[1].fits(93.4e9, "bytes", 0.01) and q[2].fits(93.4e9, "bytes", 0.01)
    assert q[3].fits(2, "ratio", 0.01) and q[4].fits(0.56, "ratio", 0.01)


def test_lemmas_join_word_forms():
    doc = textnorm.read("caches cached caching larger queries")
    assert [t.lemma for t in doc.tokens] == ["cache", "cache", "cache", "large", "query"]


def test_sentences_questions_and_soft_line_breaks():
    doc = textnorm.read("Is it exact? Yes.\nThe cache grows\nlinearly.\n\n- a list item")
    sentences = {t.sentence for t in doc.tokens}
    assert len(sentences) == 4
    assert 0 in doc.questions
    grows = next(t for t in doc.tokens if t.surface == "grows")
    linearly = next(t for t in doc.tokens if t.surface == "linearly")
    assert grows.sentence == linearly.sentence  # a wrapped line is not a sentence break


def test_quotes_the_answers_own_words():
    (words, _), = hits("cache grow linear", "And the KV-Cache can't help it: it grows linearly!")
    assert words == "Cache can't help it: it grows linearly"


# ------------------------------------------------------------------------------- patterns


def test_a_pattern_needs_two_slots_unless_negative():
    with pytest.raises(PatternError):
        compile_pattern("fragmentation", LEX)
    with pytest.raises(PatternError):
        compile_pattern("w4a16", LEX)
    assert compile_pattern("no calibration data", LEX).negative


def test_word_forms_and_thesaurus_groups():
    lex = lexicon.shared().extended({"absorb": ["absorb", "absorption", "fold into", "merge into"]})

    def m(p, t):
        return any(x.affirmed for x in match(compile_pattern(p, lex), Reading(t, lex)))

    assert m("absorb up projection query", "Use absorption of the up-projection into the query.")
    assert m("absorb up projection query", "The up-projection is folded into the query side.")
    assert m("absorb up projection query", "the up projection is merged with the query")  # preposition


def test_word_order_and_small_words_are_tolerated_in_key_points():
    assert affirmed("keep distribution exact target", "it keeps the output distribution exactly the target's")
    assert affirmed("keep distribution exact target", "the target's distribution is kept exactly")


def test_numbers_written_as_words():
    assert affirmed("~1 flop byte", "that's about one FLOP per byte")
    assert affirmed("~1 flop byte", "roughly 1 flop/byte")


def test_figures_accept_published_roundings():
    assert affirmed("mixtral ~47B total", "Mixtral has 46.7B parameters in total")
    assert affirmed("mixtral ~47B total", "Mixtral: forty-seven billion total")
    assert not affirmed("mixtral ~47B total", "Mixtral has 56B parameters in total")
    assert affirmed("mixtral ~93.4GB", "Mixtral needs 87 GiB in bf16")


def test_contractions_in_claims():
    assert affirmed("not skip zero weight", "the hardware can't skip the zero weights")
    assert affirmed("not skip zero weight", "the hardware cannot skip zero weights")


# ------------------------------------------------------------------------------- polarity


def test_negation_reverses_a_claim():
    assert reversed_("(memory bandwidth) (limit|bottleneck)", "Memory bandwidth isn't really the limit, compute is.")
    assert affirmed("decode memory bound", "Decode is memory-bound, not compute-bound.")
    assert reversed_("decode compute bound", "Decode is memory-bound, not compute-bound.")


def test_never_need_is_not_need():
    assert reversed_("need fine tune", "With PTQ you never need to fine-tune the model.")
    assert affirmed("no fine tune", "With PTQ you never need to fine-tune the model.")


def test_negative_claims_and_lexical_negation():
    assert affirmed("no calibration data", "It doesn't need any calibration data.")
    assert reversed_("no calibration data", "It needs calibration data.")
    assert affirmed("flash attention exact", "Flash attention is not an approximation; it's exact.")
    assert reversed_("flash attention approximate", "Flash attention is not an approximation.")


def test_without_negates_its_noun_phrase_only():
    assert affirmed("without cache recompute prefix",
                    "Without a cache you'd recompute the whole prefix at every step.")


def test_not_only_is_not_a_negation():
    assert affirmed("flash attention fast", "Flash attention is not only faster but also exact.")


def test_a_claim_never_spans_a_contrast_in_errors():
    text = "MQA loses quality, whereas GQA keeps quality close to MHA."
    assert not affirmed("mqa keep quality", text, scope="block")


# ------------------------------------------------------------------------------- grading


def _q(**kw) -> OpenQuestion:
    base = dict(
        id="t-q", topic="t-topic", prompt="Why does decode not use the GPU's compute?", source="test",
        answer="Decode is memory-bound: each step reads every weight once for one token, about 1 FLOP per byte.",
        key_points=[
            KeyPoint(point="Decode is memory-bandwidth-bound", main=True,
                     match=["decode @memory-bound", "(memory bandwidth) (limit|bottleneck)"]),
            KeyPoint(point="Each step reads every weight for one token", match=["read (every|all) weight"]),
            KeyPoint(point="About 1 FLOP per byte", match=["~1 flop byte"]),
        ],
        misconceptions=[Misconception(claim="Decode is compute-bound", match=["decode @compute-bound"],
                                      correction="Decode does ~1 FLOP per byte read: memory-bound.")],
    )
    base.update(kw)
    return OpenQuestion(**base)


CTX = RubricContext()


def test_a_complete_answer_passes_and_quotes_its_words():
    g = grade_open(_q(), "Decoding is bandwidth-bound: a step reads all weights, one FLOP per byte.", CTX)
    assert g.verdict == "pass" and g.score == 1.0 and not g.errors
    assert all(p.matched for p in g.points)


def test_missing_the_main_point_does_not_pass():
    g = grade_open(_q(), "Each step reads all the weights. That is about one FLOP per byte.", CTX)
    assert g.score > 0.6 and g.verdict == "partial"
    assert [k.point for k in g.main_missed] == ["Decode is memory-bandwidth-bound"]


def test_a_reversed_key_point_is_an_error():
    g = grade_open(_q(), "Memory bandwidth isn't the limit here. Every step reads all weights.", CTX)
    assert any(e.origin == "reversal" for e in g.errors)
    assert g.verdict != "pass"


def test_an_antonym_reverses_a_key_point():
    q = _q(key_points=[KeyPoint(point="Higher temperature flattens the distribution",
                                match=["high temperature flatten distribution"])], misconceptions=[])
    g = grade_open(q, "A higher temperature sharpens the distribution.", CTX)
    assert [e.origin for e in g.errors] == ["reversal"]
    g = grade_open(q, "A higher temperature makes the distribution flatter.", CTX)
    assert g.verdict == "pass"


def test_an_error_appended_to_a_correct_answer_is_flagged():
    text = ("Decode is memory-bound: each step reads all the weights for one token, about one FLOP "
            "per byte. Also, decode is compute-bound on big GPUs.")
    g = grade_open(_q(), text, CTX)
    assert [e.claim for e in g.errors] == ["Decode is compute-bound"]
    assert g.errors[0].matched == "decode is compute-bound"


def test_errors_need_an_assertion():
    for text in ("Is decode compute-bound? No: it is memory-bound.",
                 "A common misconception is that decode is compute-bound.",
                 "If decode were compute-bound, batching would not help.",
                 "Decode is not compute-bound."):
        assert not grade_open(_q(), text, CTX).errors, text


def test_term_lists_do_not_hit_key_points():
    g = grade_open(_q(), "Decode, memory, bandwidth, FLOPs, bytes, weights.", CTX)
    assert g.score < 0.6 and g.verdict != "pass"


def test_topic_catalogue_applies_to_every_question_of_the_topic():
    ctx = RubricContext(catalogues={"t-topic": [Misconception(
        claim="Batching makes each token slower", match=["batch (make|makes) token slow"],
        correction="Up to the ridge point, batching adds tokens nearly for free.")]})
    g = grade_open(_q(), "Decode is memory bound. Batching makes each token slower.", ctx)
    assert [e.origin for e in g.errors] == ["topic"]


def test_self_check_reports_patterns_the_model_answer_and_examples():
    bad = _q(key_points=[KeyPoint(point="x claim", match=["fragmentation"])])
    problems = self_check(bad, CTX)
    assert any("a pattern needs at least 2" in p for p in problems)
    assert any("not detected in the model answer" in p for p in problems)
    assert self_check(_q(), CTX) == []


def test_rubric_json_shape():
    g = Rubric.build(_q(), LEX).grade("Decode is compute-bound.")
    out = g.to_json("t-q")
    assert set(out) == {"id", "verdict", "score", "key_points", "errors", "grader"}
    assert out["errors"][0] == {"text": "Decode is compute-bound", "matched": "Decode is compute-bound",
                                "correction": "Decode does ~1 FLOP per byte read: memory-bound."}
    assert out["grader"] == "rubric" and out["verdict"] == "fail"


def test_the_consequence_of_an_if_is_still_a_claim():
    q = _q()
    assert not grade_open(q, "If decode were compute-bound, batching would not help.", CTX).errors
    g = grade_open(q, "If you batch a lot, decode is compute-bound on any GPU.", CTX)
    assert [e.claim for e in g.errors] == ["Decode is compute-bound"]


def test_reported_claims_are_not_made_until_a_contrast():
    q = _q()
    assert not grade_open(q, "People say decode is compute-bound, but that is wrong.", CTX).errors
    g = grade_open(q, "People say it is fine, but decode is compute-bound.", CTX)
    assert g.errors


def test_not_always_and_not_just_negate():
    assert reversed_("big teacher always good student", "A bigger teacher does not always make a better student.")
    assert reversed_("soft target noisy label", "Soft targets are not just noisy labels.")


def test_not_equal_sign_is_a_negation():
    assert reversed_("good teacher good student", "better teacher ≠ better student")


def test_less_before_a_word_reads_as_its_antonym():
    assert affirmed("high temperature flatten distribution", "A higher temperature makes the distribution less peaked.")


def test_a_literal_slot_does_not_stand_for_its_group():
    assert affirmed("cache shrink", "the cache is smaller")  # "shrink" stands for its group
    assert not affirmed("cache =shrink", "the cache is smaller")
    assert affirmed("cache =shrink", "the cache shrinks")


def test_a_negated_point_made_elsewhere_is_no_reversal():
    q = _q(key_points=[KeyPoint(point="Temperature softens the distribution",
                                match=["temperature soften distribution"])], misconceptions=[])
    g = grade_open(q, "Temperature softens the distribution. At T = 1 the temperature does not "
                      "soften the distribution at all.", CTX)
    assert g.verdict == "pass" and not g.errors
    g = grade_open(q, "The temperature does not soften the distribution.", CTX)
    assert [e.origin for e in g.errors] == ["reversal"]


def test_formulas_read_their_letters_and_signs():
    doc = textnorm.read("E[tokens] = (1 − α^(γ+1))/(1 − α); accept w.p. min(1, p/q) when p < q ... ≥ 2")
    words = [t.surface for t in doc.tokens]
    assert "alpha" in words and "gamma" in words and "less" in words and "least" in words
    assert len({t.sentence for t in doc.tokens}) == 2  # "w.p." and "..." end no sentence


def test_what_unlike_introduces_is_not_asserted():
    q = _q(misconceptions=[Misconception(claim="It trades quality for speed",
                                         match=["trade (accuracy|quality) speed"],
                                         correction="Speculative decoding is exact.")])
    text = "Unlike quantization, which trades accuracy for speed, speculative decoding is exact."
    assert not grade_open(q, text, CTX).errors
    assert grade_open(q, "Speculative decoding trades accuracy for speed.", CTX).errors


def test_a_positive_claim_has_no_negated_word():
    # two negators do not make "keeps salient weights in fp16" true
    assert not affirmed("awq keep salient weight fp16 update weight",
                        "AWQ doesn't keep salient weights in fp16 and doesn't update weights.")


def test_not_because_negates_the_reason():
    assert reversed_("int4 math fast", "It is faster, but not because int4 math is faster.")


def test_without_any_negates_the_noun():
    assert affirmed("without scale factor", "cast directly without any scaling factors")


def test_hedged_exact_is_approximate():
    assert not affirmed("quantization @exact", "int8 quantization is near-lossless")
    assert affirmed("quantization @approximate", "int8 quantization is near-lossless")


def test_jargon_plurals_and_big_o_and_plus():
    doc = textnorm.read("matmuls on GPUs; softmaxes; O(N^2) memory, O(N) compute; W+A quantization")
    words = [t.lemma for t in doc.tokens]
    assert {"matmul", "gpu", "softmax", "quadratic", "linear"} <= set(words)
    assert words[-4:] == ["w", "and", "a", "quantization"]


def test_a_list_of_terms_makes_no_claim():
    text = "MQA, GQA, MLA, head sharing, number of KV heads, latent, quality trade-off, cache size."
    assert not affirmed("mqa (quality|accuracy) (trade off|cost|lose)", text)
    assert affirmed("mqa (quality|accuracy) (trade off|cost|lose)", "MQA trades off some quality.")


def test_an_enumeration_is_not_a_claim_about_its_first_item():
    q = _q(misconceptions=[Misconception(claim="MLA quantizes the cache", match=["mla quantize cache"],
                                         correction="MLA caches a latent.")])
    assert not grade_open(q, "Use MLA or a quantized cache to shrink it.", CTX).errors
    assert grade_open(q, "MLA quantizes the cache to 4 bits.", CTX).errors


def test_a_modal_claim_is_a_claim():
    g = grade_open(_q(), "On an H100 I would expect decode to be compute-bound.", CTX)
    assert [e.claim for e in g.errors] == ["Decode is compute-bound"]


def test_a_label_before_a_colon_joins_the_clause_after_it():
    g = grade_open(_q(), "Decode: compute-bound, since the GPU is busy.", CTX)
    assert [e.claim for e in g.errors] == ["Decode is compute-bound"]
    # a full clause before the colon stays a clause of its own
    assert not grade_open(_q(), "We batch every decode step we can: compute-bound prefill is "
                                "scheduled apart.", CTX).errors


def test_an_arrow_states_a_consequence():
    g = grade_open(_q(), "Bigger batches help, decode -> compute-bound at batch 1.", CTX)
    assert [e.claim for e in g.errors] == ["Decode is compute-bound"]


def test_non_negates_the_word_after_it():
    q = _q(misconceptions=[Misconception(claim="Sampling is deterministic", match=["sampling deterministic"],
                                         correction="It draws from a distribution.")])
    assert not grade_open(q, "Sampling is non-deterministic by design.", CTX).errors
    g = grade_open(q, "Sampling is deterministic, given the seed.", CTX)
    assert [e.claim for e in g.errors] == ["Sampling is deterministic"]


def test_a_pair_joined_by_and_in_the_pattern_is_not_a_list():
    q = _q(misconceptions=[Misconception(claim="fp16 and bf16 have the same range",
                                         match=["fp16 and bf16 same range"],
                                         correction="bf16 keeps fp32's 8 exponent bits.")])
    g = grade_open(q, "fp16 and bf16 have the same range, so either works.", CTX)
    assert [e.claim for e in g.errors] == ["fp16 and bf16 have the same range"]


def test_a_figure_may_be_one_of_alternatives_and_optional_slots_are_refused():
    from inferview.practice.patterns import PatternError, Reading, compile_pattern, match

    p = compile_pattern("(~2x|double) (speed|speedup)", LEX)
    assert match(p, Reading("It gives about a 2.0x speedup.", LEX))
    assert match(p, Reading("It can double the speed.", LEX))
    assert not match(p, Reading("It gives a 3x speedup.", LEX))
    for bad in ("(gpu|gpus)? memory", "memory ?bound", "?(a|b) memory"):
        with pytest.raises(PatternError, match="optional"):
            compile_pattern(bad, LEX)

"""Reading answers with units, and formatting values."""

from __future__ import annotations

import pytest

from inferview.practice.units import UnitError, alternative_answers, format_value, parse_answer


@pytest.mark.parametrize(
    "text, unit, want",
    [
        ("40 GiB", "bytes", 40 * 2**30),
        ("42.9 GB", "bytes", 42.9e9),
        ("4.29e10 bytes", "bytes", 4.29e10),
        ("4.29 x 10^10 bytes", "bytes", 4.29e10),
        ("42949672960", "bytes", 42949672960),
        ("~40GiB", "bytes", 40 * 2**30),
        ("320 KiB/token", "bytes/token", 320 * 1024),
        ("320 KiB per token", "bytes/token", 320 * 1024),
        ("327,680 bytes/token", "bytes/token", 327680),
        ("1,234,567", "count", 1234567),
        ("70B params", "params", 70e9),
        ("46.7 billion parameters", "params", 46.7e9),
        ("12.9B", "params", 12.9e9),
        ("3.2x", "ratio", 3.2),
        ("3.2 ×", "ratio", 3.2),
        ("320%", "ratio", 3.2),
        ("40 Gb", "bytes", 5e9),
        ("40 Gbit", "bytes", 5e9),
        ("40 gb", "bytes", 40e9),
        ("512 MiB", "bytes", 512 * 2**20),
        ("1 TiB", "bytes", 2**40),
        ("1.4 PFLOPs", "flops", 1.4e15),
        ("1.4e15 FLOPs", "flops", 1.4e15),
        ("8 FLOPs/byte", "flop/byte", 8),
        ("8 flop per byte", "flop/byte", 8),
        ("29 ms", "seconds", 0.029),
        ("12 us", "seconds", 12e-6),
        ("128k tokens", "tokens", 128e3),
        ("3.36 tokens", "tokens", 3.36),
        ("12 sequences", "count", 12),
        ("= 16 GiB in total", "bytes", 16 * 2**30),
        ("around 16 GiB of KV cache", "bytes", 16 * 2**30),
    ],
)
def test_parse(text, unit, want):
    assert parse_answer(text, unit).value == pytest.approx(want, rel=1e-12)


def test_bits_are_flagged():
    assert parse_answer("40 Gb", "bytes").in_bits
    assert not parse_answer("40 GB", "bytes").in_bits


@pytest.mark.parametrize("text, unit", [("40 GiB", "params"), ("banana", "bytes"), ("3 apples", "bytes"),
                                        ("5 ms", "ratio"), ("", "count")])
def test_rejects(text, unit):
    with pytest.raises(UnitError):
        parse_answer(text, unit)


@pytest.mark.parametrize("value, unit", [(42949672960.0, "bytes"), (327680.0, "bytes/token"),
                                         (46.7e9, "params"), (1.4e15, "flops"), (2.8, "ratio"),
                                         (0.029, "seconds"), (3925.0, "tokens"), (8.0, "flop/byte"),
                                         (3.0, "count")])
def test_formatted_and_alternative_answers_parse_back(value, unit):
    assert parse_answer(format_value(value, unit).split(" (")[0], unit).value == pytest.approx(value, rel=2e-3)
    for alt in alternative_answers(value, unit):
        assert parse_answer(alt, unit).value == pytest.approx(value, rel=1e-9), alt


def test_format_examples():
    assert format_value(40 * 2**30, "bytes") == "40 GiB (42.95 GB)"
    assert format_value(327680, "bytes/token") == "320 KiB/token"
    assert format_value(46.7e9, "params") == "46.7B params"


@pytest.mark.parametrize(
    "text, unit, want",
    [
        ("40GiB", "bytes", 40 * 2**30),
        ("40 gib", "bytes", 40 * 2**30),
        ("4.0e1 GiB", "bytes", 40 * 2**30),
        ("42,949,672,960", "bytes", 42949672960),
        ("1.2 TB", "bytes", 1.2e12),
        ("70 billion", "params", 70e9),
        ("1.5×", "ratio", 1.5),
        ("2 Gbit", "bytes", 2.5e8),
        ("1 000 000", "params", 1e6),
        ("5.1B active params", "params", 5.1e9),
        ("671B total parameters", "params", 671e9),
        ("7 ms per token", "seconds", 0.007),
        ("1,234.5 GB", "bytes", 1234.5e9),
    ],
)
def test_parse_awkward_but_valid(text, unit, want):
    assert parse_answer(text, unit).value == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(
    "text, unit, says",
    [
        ("-5 GB", "bytes", "negative"),
        ("1e400", "bytes", "too large"),
        ("12,9", "params", "commas may only group thousands"),
        ("1,2,3", "bytes", "commas may only group thousands"),
        ("40 GB", "params", "unit of memory"),
        ("1.5 MB", "params", "unit of memory"),
        ("320 KiB/token", "bytes", "per token"),
        ("abc", "bytes", "could not read a number"),
        ("", "bytes", "could not read a number"),
    ],
)
def test_rejects_with_a_message_that_says_why(text, unit, says):
    with pytest.raises(UnitError, match=says):
        parse_answer(text, unit)


@pytest.mark.parametrize(
    "text, unit, want, bits",
    [
        ("40 GIB", "bytes", 40 * 2**30, False),
        ("40 GBs", "bytes", 40e9, False),
        ("40 gigabytes", "bytes", 40e9, False),
        ("40 gibibytes", "bytes", 40 * 2**30, False),
        ("40 Gigabits", "bytes", 5e9, True),
        ("40 Gib", "bytes", 40 * 2**30 / 8, True),  # upper-case prefix, lower-case b: bits
        ("1.41 petaflops", "flops", 1.41e15, False),
        ("2.5 tokens per step", "tokens", 2.5, False),
    ],
)
def test_spelled_and_shouted_units(text, unit, want, bits):
    p = parse_answer(text, unit)
    assert p.value == pytest.approx(want, rel=1e-12) and p.in_bits is bits

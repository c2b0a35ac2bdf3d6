"""Grading numeric answers: relative tolerance, unit parsing, and a diagnosis of typical slips.

An answer is correct when ``|answer - expected| <= tolerance * |expected|`` after converting its
unit (``inferview.practice.units``). A wrong answer that is off by a factor someone typically
slips on gets a diagnosis: the drill supplies the factors that matter for its model (query heads
over KV heads for GQA, the number of layers, the sliding window...), and these generic ones
follow: 8 (bits vs bytes), 1.0737 (GB vs GiB), 2 (K and V, or two bytes per bf16 value), 1000
and 1024 (a unit prefix); a generic factor is named only when none of the drill's own explains
the answer. Answers within three times the tolerance count as close (score 0.5); for those, only a
unit-prefix slip is named (a number right in GB but written as GiB, or the reverse).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from inferview.practice.units import Parsed, UnitError, format_value, parse_answer

CLOSE_FACTOR = 3.0
"""An answer within ``CLOSE_FACTOR * tolerance`` of the expected value scores 0.5."""

Factor = tuple[float, str] | tuple[float, str, str]
"""A multiplicative slip and its explanation, e.g. ``(8.0, "used num_attention_heads ...")``: the
answer is ``f`` times too large or too small. A third element ``"too large"`` or ``"too small"``
restricts it to that direction (ignoring a sliding window can only overestimate)."""

GENERIC_FACTORS: list[Factor] = [
    (8.0, "8 bits per byte: the answer looks like bits where bytes were asked (or the reverse)"),
    (2**30 / 1e9, "GB vs GiB: 1 GiB = 2^30 bytes = 1.074 GB"),
    (2**40 / 1e12, "TB vs TiB: 1 TiB = 2^40 bytes = 1.100 TB"),
    (2.0, "a factor of 2: check the bytes per value (a bf16/fp16 value takes 2) and any term "
          "counted twice or not at all"),
    (1024.0, "a factor of 1024: one binary prefix step (KiB, MiB, GiB)"),
    (1000.0, "a factor of 1000: one SI prefix step (k, M, G, T)"),
    (1e6, "a factor of a million: two prefix steps"),
    (1e9, "a factor of a billion: three prefix steps (e.g. B params read as units)"),
]
"""Factors checked for every drill, after the drill's own."""


@dataclass(frozen=True)
class NumericGrade:
    """The outcome of grading one numeric answer."""

    correct: bool
    """Within the tolerance."""
    score: float
    """1 when correct, 0.5 when close, else 0."""
    expected: float
    """The reference value, in the question's unit."""
    unit: str
    """The question's unit."""
    value: float | None = None
    """The answer read in the question's unit (None when it could not be read)."""
    rel_error: float | None = None
    """``(value - expected) / expected``."""
    message: str = ""
    """One or two sentences for the user."""
    diagnosis: str | None = None
    """The likely slip, when the answer is off by a recognised factor."""
    parsed: Parsed | None = field(default=None, repr=False)
    """The parsed answer."""


def _near(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol * abs(b)


def _match(ratio: float, tol: float, factors: Sequence[Factor], slack: float = 0.0) -> str | None:
    """The explanation for the first of ``factors`` that ``ratio`` equals (either way), merging
    every reason given for that same factor; None when none matches. ``slack`` widens the
    tolerance for factors of 1.5 and more (rounded counts), never for GB-vs-GiB-sized ones."""
    seen: dict[tuple[str, float], list[str]] = {}
    order: list[tuple[str, float]] = []
    for factor in factors:
        f, why = factor[0], factor[1]
        only = factor[2] if len(factor) > 2 else None
        if f <= 0 or _near(f, 1.0, 1e-9):
            continue
        t = max(tol, slack) if f >= 1.5 else tol
        for direction, target in (("too large", f), ("too small", 1 / f)):
            if only is not None and direction != only:
                continue
            if _near(ratio, target, t):
                # factors that are nearly equal (2 and 1.998) are one explanation with two causes
                key = next((k for k in order if k[0] == direction and _near(f, k[1], t)),
                           (direction, round(f, 6)))
                if key not in seen:
                    seen[key] = []
                    order.append(key)
                if why not in seen[key]:
                    seen[key].append(why)
    if not order:
        return None
    direction, f = order[0]
    shown = f"{f:.3g}" if f < 100 else f"{f:g}"
    return f"Your answer is {shown}x {direction}. Likely: {'; or '.join(seen[(direction, f)])}."


_PREFIX_POWER = {"k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def prefix_slip(parsed: Parsed, expected: float, tolerance: float) -> str | None:
    """Name a GB-for-GiB (or GiB-for-GB, TB/TiB...) slip: the answer's number, read with the other
    system's prefix, is right. Only answers written with such a prefix qualify."""
    m = re.match(r"^\s*([kKmMgGtTpP])(i?)[bB]", parsed.unit_text)
    if not m or expected == 0 or parsed.in_bits:
        return None
    n = _PREFIX_POWER[m.group(1).lower()]
    si, binary = 1000.0**n, 1024.0**n
    wrote_binary = bool(m.group(2))
    other = parsed.value / binary * si if wrote_binary else parsed.value / si * binary
    if abs(other - expected) > tolerance * abs(expected):
        return None
    p = m.group(1).upper() if n > 1 else "K"
    bi, de = f"{p}iB", f"{p if n > 1 else 'k'}B"
    said, meant = (bi, de) if wrote_binary else (de, bi)
    return (f"Read in {meant} instead of {said}, your number would be right: GB vs GiB "
            f"(1 {bi} = 2^{10 * n} bytes = {binary / si:.3f} {de}).")


def diagnose(value: float, expected: float, tolerance: float,
             factors: Sequence[Factor] = (), in_bits: bool = False,
             slack: float = 0.0) -> str | None:
    """Explain ``value`` when it is ``expected`` times or divided by a known factor (``slack``:
    extra relative tolerance for the larger factors, see ``_match``).

    The drill's own ``factors`` are tried first and, when one matches, the generic ones are not
    mentioned (an 8x slip on a GQA model is the head count, not bits, unless the answer was in bits).
    """
    if expected == 0 or value == 0 or not math.isfinite(value):
        return None
    ratio = value / expected
    tol = max(tolerance, 1e-9)
    if in_bits and abs(ratio * 8 - 1) <= max(tol, 2**30 / 1e9 - 1 + tol):
        return ("Your answer is in bits (a lower-case b, as in Gb, means bits): read as bytes it "
                "would be about right. 1 byte = 8 bits.")
    found = _match(ratio, tol, factors, slack) or _match(ratio, tol, GENERIC_FACTORS, slack)
    if found and in_bits and found.startswith("Your answer is 8x"):
        found = found.replace(". Likely:", " (your answer was in bits). Likely:", 1)
    return found


def grade_numeric(answer: str, expected: float, unit: str, tolerance: float = 0.05,
                  factors: Sequence[Factor] = ()) -> NumericGrade:
    """Grade ``answer`` (free text with an optional unit) against ``expected`` in ``unit``."""
    shown = format_value(expected, unit)
    try:
        parsed = parse_answer(answer, unit)
    except UnitError as exc:
        return NumericGrade(False, 0.0, expected, unit, message=f"{exc}. Expected about {shown}.")
    value = parsed.value
    rel = (value - expected) / expected if expected != 0 else (0.0 if value == 0 else math.inf)
    if expected == 0:
        ok = value == 0
    else:
        ok = abs(rel) <= tolerance
    if ok:
        return NumericGrade(True, 1.0, expected, unit, value, rel,
                            f"Correct: {shown} (you said {format_value(value, unit)}).",
                            parsed=parsed)
    close = expected != 0 and abs(rel) <= CLOSE_FACTOR * tolerance
    diagnosis: str | None = None
    if not close:
        slack = 0.0
        if unit in ("count", "tokens") and abs(expected) >= 1 and abs(value) >= 1:
            # a slip by f changes floor(x) to floor(f x), not f floor(x): allow one unit of
            # rounding in the smaller of the two
            slack = min(1 / min(abs(value), abs(expected)), 0.1)
        diagnosis = diagnose(value, expected, tolerance, factors, parsed.in_bits, slack)
        if (diagnosis is None and not parsed.unit_text and unit in ("bytes", "bytes/token")
                and abs(expected) >= 1e4 and abs(value) * 1e3 <= abs(expected)):
            diagnosis = (f"A number without a unit is read as {unit}; add one "
                         f"(e.g. {format_value(expected, unit).split(' (')[0]}).")
    elif unit in ("bytes", "bytes/token"):
        # this near the answer only a unit-prefix slip (GB for GiB) is worth naming
        diagnosis = prefix_slip(parsed, expected, tolerance)
    if close:
        msg = (f"Close: {format_value(value, unit)} is {rel:+.1%} from {shown}; "
               f"within {tolerance:.0%} counts.")
    else:
        msg = f"Not quite: you said {format_value(value, unit)}, the answer is {shown}."
    return NumericGrade(False, 0.5 if close else 0.0, expected, unit, value, rel, msg, diagnosis,
                        parsed)

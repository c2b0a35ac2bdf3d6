"""Reading numeric answers with units, and writing values in friendly units.

``parse_answer("40 GiB", "bytes")`` returns ``42949672960.0``. Accepted forms:

- Numbers: ``42.9``, ``1,234,567``, ``1_000``, ``4.29e10``, ``4.29 x 10^10``, ``4.29*10**10``,
  with an optional leading ``~``/``≈``/``about``.
- Byte and bit prefixes: SI ``kB MB GB TB PB`` (10^3 steps) and binary ``KiB MiB GiB TiB PiB``
  (2^10 steps), also spelled out (``gigabytes``, ``gibibytes``) or as ``GIB``/``GBs``; ``bytes``, ``B``. Bits: ``bit``, ``bits``, ``Gbit``, and ``Kb Mb Gb Tb`` with an
  upper-case prefix and lower-case ``b`` (all lower-case ``gb`` is read as bytes). Bits are
  converted to bytes (/8), so an answer in bits that should have been bytes is 8x off and the grader
  says so.
- Counts with scale words: ``k``/``K``/``thousand``, ``M``/``million``/``mn``,
  ``B``/``bn``/``billion`` (when the answer is not in bytes), ``T``/``trillion``; then ``params``,
  ``parameters``, ``tokens``, ``sequences``... (ignored words naming the unit).
- FLOPs: ``FLOPs``, ``TFLOPs``, ``PFLOP``...; intensity ``flop/byte``, ``FLOPs per byte``.
- Per token: ``320 KiB/token``, ``320 KiB per token``.
- Trailing words ``total``, ``in total``, ``overall``, ``of memory``, ``of KV cache`` are ignored.
- Ratios: ``3.2x``, ``3.2×``, ``3.2 times``, ``320%``. Time: ``s``, ``ms``, ``us``/``µs``, ``ns``,
  ``min``.

Prefixes follow IEC 80000-13: ``Ki Mi Gi Ti`` are powers of 2^10, ``k M G T`` powers of 10^3.
An answer without a unit is taken in the question's unit. An answer in a unit of another kind
("40 GiB" for a parameter count) raises ``UnitError`` with a message naming both.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

FORMAT_EXAMPLES = ("9.87 TiB", "4.5 KiB/token", "3.3e13 params")
"""How the answer boxes show the format of a number: values that answer none of the drills (a test
checks every drill), so an example never gives an answer away."""
FORMAT_HINT = ", ".join(FORMAT_EXAMPLES)

SI = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15, "e": 1e18}
BINARY = {"ki": 2.0**10, "mi": 2.0**20, "gi": 2.0**30, "ti": 2.0**40, "pi": 2.0**50, "ei": 2.0**60}
SCALE_WORDS = {
    "k": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "million": 1e6, "b": 1e9, "bn": 1e9,
    "billion": 1e9, "g": 1e9, "t": 1e12, "trillion": 1e12, "": 1.0,
}
COUNT_WORDS = {
    "params", "param", "parameters", "parameter", "weights", "tokens", "token", "sequences",
    "sequence", "seqs", "seq", "requests", "request", "count", "experts", "flops", "flop",
    "active", "total", "activated",
}
UNIT_KINDS = {
    "bytes": "bytes", "bytes/token": "bytes", "params": "count", "flops": "count",
    "flops/token": "count", "flop/byte": "count", "tokens": "count", "ratio": "ratio",
    "count": "count", "seconds": "seconds",
}


class UnitError(ValueError):
    """The answer could not be read, or its unit does not fit the question."""


@dataclass(frozen=True)
class Parsed:
    """An answer read as a number in the question's unit."""

    value: float
    """The value in the question's unit (bytes, params, seconds...)."""
    in_bits: bool = False
    """The answer was written in bits (converted to bytes)."""
    unit_text: str = ""
    """The unit as the user wrote it (empty when none)."""


_NUM = re.compile(
    r"^\s*(?P<num>[-+]?(?:\d{1,3}(?: \d{3})+(?!\d)(?:\.\d*)?|\d[\d,_]*(?:\.\d*)?|\.\d+)"
    r"(?:[eE][-+]?\d+)?)"
    r"(?:\s*(?:x|\*|×|·)\s*10\s*(?:\^|\*\*)\s*(?P<exp>[-+]?\d+))?\s*(?P<rest>.*?)\s*\.?\s*$"
)
_TRAILING = re.compile(
    r"\s*(?:in total|total|overall|of (?:gpu |hbm )?memory|of (?:the )?(?:kv )?cache|memory)\s*$",
    re.IGNORECASE)
_PER_TOKEN = re.compile(r"\s*(?:/|per)\s*(?:token|tok|tokens)\s*$", re.IGNORECASE)
_PER_BYTE = re.compile(r"\s*(?:/|per)\s*(?:byte|bytes|b)\s*$", re.IGNORECASE)
_BYTES = re.compile(r"^(?P<prefix>[kKmMgGtTpPeE]i?)?\s*(?P<base>bytes?|B|b|bits?|bit)$")
_SECONDS = {
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0, "ms": 1e-3,
    "msec": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6,
    "microsecond": 1e-6, "microseconds": 1e-6, "ns": 1e-9, "nanosecond": 1e-9,
    "nanoseconds": 1e-9, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
}


def _number(text: str) -> tuple[float, str]:
    t = text.strip()
    t = re.sub(r"^(?:=|~|≈|about|approx\.?|approximately|roughly|around)\s*", "", t, flags=re.IGNORECASE)
    m = _NUM.match(t)
    if not m:
        raise UnitError(f"could not read a number in {text.strip()!r}")
    raw = m.group("num")
    whole = re.split(r"[.eE]", raw.lstrip("+-"), maxsplit=1)[0]
    if "," in whole and not re.fullmatch(r"\d{1,3}(?:,\d{3})+", whole):
        raise UnitError(f"{m.group('num')!r}: commas may only group thousands (1,234,567); "
                        "write decimals with a point (12.9)")
    raw = raw.replace(",", "").replace("_", "").replace(" ", "")
    try:
        value = float(raw)
    except ValueError as exc:
        raise UnitError(f"could not read a number in {text.strip()!r}") from exc
    if m.group("exp"):
        value *= 10.0 ** int(m.group("exp"))
    if not math.isfinite(value):
        raise UnitError("the number is too large to be an answer")
    if value < 0:
        raise UnitError(f"{m.group('num')!r} is negative; every quantity here is positive")
    return value, m.group("rest").strip()


_SPELLED = {
    "kilo": "k", "mega": "M", "giga": "G", "tera": "T", "peta": "P",
    "kibi": "Ki", "mebi": "Mi", "gibi": "Gi", "tebi": "Ti", "pebi": "Pi",
}


def _byte_factor(unit: str) -> tuple[float, bool] | None:
    """(bytes per unit, is_bits) for a byte/bit unit, or None if ``unit`` is not one."""
    u = unit.strip()
    m = re.fullmatch(r"(kilo|mega|giga|tera|peta|kibi|mebi|gibi|tebi|pebi)(bytes?|bits?)", u,
                     re.IGNORECASE)
    if m:  # "gigabytes", "gibibytes", "megabits"
        u = _SPELLED[m.group(1).lower()] + ("bit" if m.group(2).lower().startswith("bit") else "B")
    elif re.fullmatch(r"[kKmMgGtTpP][iI]Bs?", u):  # "GIB", "GiBs" (a lower-case b stays bits)
        u = u[0] + "iB"
    elif re.fullmatch(r"[kKmMgGtTpP]?Bs", u):  # "GBs"
        u = u[:-1]
    if u.lower() in ("byte", "bytes"):
        return 1.0, False
    if u.lower() in ("bit", "bits"):
        return 1 / 8, True
    m = re.match(r"^(?P<prefix>[kKmMgGtTpPeE]i?)\s*(?P<base>bytes?|bits?|B|b|bit)$", u)
    if not m:
        if u == "B":
            return 1.0, False
        if u == "b":
            return 1 / 8, True
        return None
    prefix, base = m.group("prefix"), m.group("base")
    p = prefix.lower()
    scale = BINARY[p] if p.endswith("i") else SI[p]
    if base.lower().startswith("bit"):
        return scale / 8, True
    if base == "b" and prefix[0].isupper():
        return scale / 8, True  # "Gb" = gigabits; all lower-case "gb" is read as bytes
    return scale, False


def _scale_count(unit: str, allow_b_billion: bool = True) -> float | None:
    """Scale factor for a count unit like "B params", "k tokens", "million", or None."""
    words = unit.replace("-", " ").split()
    words = [w for w in words if w.lower() not in COUNT_WORDS]
    if not words:
        return 1.0
    if len(words) == 1:
        w = words[0]
        key = w.lower()
        if key in ("b",) and not allow_b_billion:
            return None
        if key in SCALE_WORDS:
            return SCALE_WORDS[key]
        m = re.match(r"^([kmgtpe])(?:flops?|flop)$", key)
        if m:
            return SI[m.group(1)]
        m = re.match(r"^(kilo|mega|giga|tera|peta|exa)flops?$", key)
        if m:
            return SI[m.group(1)[0]]
    return None


def parse_answer(text: str, unit: str) -> Parsed:
    """Read ``text`` as a value in ``unit`` (a ``NumericQuestion.unit`` literal)."""
    if unit not in UNIT_KINDS:
        raise ValueError(f"unknown unit {unit!r}")
    value, rest = _number(text)
    rest = _TRAILING.sub("", rest).strip()
    original = rest
    kind = UNIT_KINDS[unit]

    if unit in ("bytes/token", "flops/token", "seconds"):
        rest = _PER_TOKEN.sub("", rest)
    if unit == "tokens":
        rest = re.sub(r"\s*(?:/|per)\s*(?:step|iteration|round)\s*$", "", rest, flags=re.IGNORECASE)
    if unit == "flop/byte":
        rest = _PER_BYTE.sub("", rest)
        if rest.lower() in ("flop", "flops"):
            rest = ""

    if not rest:
        return Parsed(value, unit_text="")

    if kind == "bytes":
        bf = _byte_factor(rest)
        if bf is not None:
            return Parsed(value * bf[0], in_bits=bf[1], unit_text=original)
        sc = _scale_count(rest, allow_b_billion=False)
        if sc is not None and rest.lower() not in ("params", "parameters"):
            return Parsed(value * sc, unit_text=original)
        if _PER_TOKEN.search(rest) and _byte_factor(_PER_TOKEN.sub("", rest)) is not None:
            raise UnitError(f"{original!r} is a cost per token; the question asks for a total "
                            "in bytes (multiply by the tokens)")
        raise UnitError(f"{original!r} is not a unit of bytes (try GB, GiB, MiB, bytes)")

    if kind == "ratio":
        r = rest.lower()
        if r in ("x", "×", "times", "fold"):
            return Parsed(value, unit_text=original)
        if r == "%":
            return Parsed(value / 100, unit_text=original)
        raise UnitError(f"{original!r} is not a ratio (write e.g. 2.8x)")

    if kind == "seconds":
        r = rest.lower()
        if r in _SECONDS:
            return Parsed(value * _SECONDS[r], unit_text=original)
        raise UnitError(f"{original!r} is not a unit of time (write s, ms or us)")

    # counts: params, tokens, flops, sequences, flop/byte
    if _byte_factor(rest) is not None and rest != "B":  # a bare "B" is billions
        raise UnitError(f"{original!r} is a unit of memory; the question asks for {unit}")
    sc = _scale_count(rest)
    if sc is not None:
        return Parsed(value * sc, unit_text=original)
    raise UnitError(f"could not read {original!r} as {unit}")


# --------------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------------


def _sig(v: float, digits: int = 3) -> str:
    if v == 0:
        return "0"
    s = f"{v:.{digits}g}"
    if "e" in s:
        mant, exp = s.split("e")
        return f"{mant}e{int(exp)}"
    return s


def format_bytes(n: float, binary: bool = True) -> str:
    """``n`` bytes in the largest binary (GiB) or SI (GB) unit that keeps the number >= 1."""
    step = 1024.0 if binary else 1000.0
    units = ["KiB", "MiB", "GiB", "TiB", "PiB"] if binary else ["kB", "MB", "GB", "TB", "PB"]
    if abs(n) < step:
        return f"{_sig(n, 4)} bytes"
    v = float(n)
    name = "bytes"
    for u in units:
        if abs(v) < step:
            break
        v /= step
        name = u
    return f"{_sig(v, 4)} {name}"


def format_count(n: float, word: str = "") -> str:
    """``n`` with a scale word: ``46.7B``, ``12.9M``, ``3,925``."""
    suffix = f" {word}" if word else ""
    a = abs(n)
    for scale, s in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if a >= scale:
            return f"{_sig(n / scale, 4)}{s}{suffix}"
    if float(n).is_integer():
        return f"{int(n):,}{suffix}"
    return f"{_sig(n, 4)}{suffix}"


def format_flops(n: float) -> str:
    """FLOPs with an SI prefix: ``1.41 PFLOPs``."""
    a = abs(n)
    for scale, s in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M")):
        if a >= scale:
            return f"{_sig(n / scale, 4)} {s}FLOPs"
    return f"{_sig(n, 4)} FLOPs"


def format_seconds(s: float) -> str:
    """Seconds in s, ms, us or ns."""
    a = abs(s)
    if a >= 1:
        return f"{_sig(s, 4)} s"
    if a >= 1e-3:
        return f"{_sig(s * 1e3, 4)} ms"
    if a >= 1e-6:
        return f"{_sig(s * 1e6, 4)} us"
    return f"{_sig(s * 1e9, 4)} ns"


def format_value(value: float, unit: str) -> str:
    """``value`` in ``unit`` written for people: ``40 GiB (42.9 GB)``, ``320 KiB/token``,
    ``46.7B params``, ``2.8x``."""
    if unit == "bytes":
        if abs(value) >= 1024:
            return f"{format_bytes(value)} ({format_bytes(value, binary=False)})"
        return format_bytes(value)
    if unit == "bytes/token":
        return f"{format_bytes(value)}/token"
    if unit == "params":
        return format_count(value, "params")
    if unit == "flops":
        return format_flops(value)
    if unit == "flops/token":
        return f"{format_flops(value)}/token"
    if unit == "flop/byte":
        return f"{_sig(value, 4)} FLOP/byte"
    if unit == "tokens":
        if float(value).is_integer():
            return f"{int(value):,} tokens"
        return f"{_sig(value, 4)} tokens"
    if unit == "ratio":
        return f"{_sig(value, 4)}x"
    if unit == "seconds":
        return format_seconds(value)
    return format_count(value)


def alternative_answers(value: float, unit: str) -> list[str]:
    """The same value written in two or more different units (used by the content tests)."""
    if unit == "bytes":
        return [f"{value / 2**30!r} GiB", f"{value / 1e9!r} GB", f"{value!r} bytes",
                f"{value * 8 / 1e9!r} Gbit"]
    if unit == "bytes/token":
        return [f"{value / 1024!r} KiB/token", f"{value!r} bytes per token"]
    if unit == "params":
        return [f"{value / 1e9!r}B params", f"{value / 1e6!r} million", f"{value!r}"]
    if unit in ("flops", "flops/token"):
        return [f"{value / 1e12!r} TFLOPs", f"{value!r}"]
    if unit == "flop/byte":
        return [f"{value!r} FLOP/byte", f"{value!r}"]
    if unit == "tokens":
        return [f"{value!r} tokens", f"{value / 1e3!r}k tokens"]
    if unit == "ratio":
        return [f"{value!r}x", f"{value * 100!r}%"]
    if unit == "seconds":
        return [f"{value * 1e3!r} ms", f"{value!r} s"]
    return [f"{value!r}", f"{value / 1e3!r} thousand"]

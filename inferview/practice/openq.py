"""Grading free-text answers by key points and misconceptions, with phrase matching.

The matching rules below are a published contract: question-bank authors write ``phrases`` against
them, and ``tests/test_question_banks.py`` checks every open question's own model answer with them.

Normalisation (applied identically to the answer and to every phrase)
    1. Lower-case; curly apostrophes become ``'``; hyphens and slashes split words
       ("KV-cache" -> "kv cache", "bits/byte" -> "bits byte"); a power 2 or 3 written as ``^2``
       or a superscript becomes a word ("O(n^2)", "n²" -> "o n squared"; "T³" -> "t cubed").
    2. Words are runs of letters and digits; other punctuation is ignored. A decimal number keeps
       its point ("1.5"). An apostrophe inside a word is kept ("isn't"); a trailing possessive
       "'s" is dropped ("model's" -> "model").
    3. Each word is reduced by a light stemmer (``stem``). Words of three characters or fewer and
       words that contain a digit ("fp16", "4096", "2") are kept intact. Otherwise, repeatedly until
       nothing changes:
         - "ies"/"ied" -> "y"  (entries -> entry, applied -> apply)
         - "sses" -> "ss"; words ending in "ss", "us" or "is" keep their "s"
         - a final "s" is dropped (caches -> cache)
         - "ed" is dropped when a vowel remains before it and at least 3 letters remain
           ("eed" words keep it: need, speed); "used" -> "use"
         - "ing" is dropped when a vowel remains before it and at least 3 letters remain
           (string, thing and being stay whole)
         - after "ed"/"ing" a doubled final consonant other than l, s, z is undoubled
           (running -> run, embedding -> embed)
         - "ly" is dropped when at least 4 letters remain and the word does not end in "ply"
           (exactly -> exact; only, apply stay)
         - a final "e" is dropped from words of 4 letters or more (cache -> cach)
       So "recompute", "recomputes", "recomputed", "recomputing" all become "recomput", and
       "cache", "caches", "cached", "caching" all become "cach". There is no "-er" rule:
       "layer" and "layers" match each other, "layer" and "lay" do not.

Matching
    A phrase of n words matches when its stemmed words occur in the answer in the same order
    within a window of n + 3 consecutive words (so up to three extra words may sit between or
    inside them: "stores the keys" matches "stores all of the keys"). A one-word phrase matches any
    occurrence of that word. A key point is hit when any of its phrases matches.

Negation (misconceptions only)
    A misconception match is discarded when a negation occurs within the 3 words before the
    match's first word, in the same clause: the look-back stops at ``. , ; : ! ?`` or a line
    break, so "No, it only helps training" is still flagged while "it is not an approximation" is
    not. A match is also discarded when a negation sits among its own words (between the first and
    the last matched word) and the phrase itself has none: "flash attention is exact, not
    approximate" does not state "is approximate"; and when its words span two clauses split by
    ``. , ; : ! ?`` or a line break ("attention; only the FFN is sparse" does not state "attention
    is sparse", nor "bf16 has fp32's range, fp16 more precision" "bf16 has more precision") unless
    the phrase itself spans one. A comma between digits ("4,096") splits nothing. Key points may span them. Negations: "not", "no", "never", "without", "neither", "nor", "cannot",
    any contraction ending in "n't" ("isn't", "doesn't", "don't", "can't", ...), and the two-word
    negations "rather than" and "instead of" (counted when their last word lies in those 3 words).
    A misconception is flagged when at least one of its phrases has a match that is not discarded.
    Key points ignore negation.

Score
    ``score = hits / number of key points - 0.25 * flagged misconceptions``, clipped to [0, 1].
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from inferview.content.models import KeyPoint, Misconception, OpenQuestion

WINDOW_SLACK = 3
"""Extra words allowed inside a phrase's window: a phrase of n words matches within n + 3 words."""
NEGATION_LOOKBACK = 3
"""How many words before a misconception match are searched for a negation."""
FLAG_PENALTY = 0.25
"""Score subtracted per flagged misconception."""
PASS_SCORE = 0.7
"""A free-text answer with at least this score and no misconception flagged is correct."""

NEGATIONS: frozenset[str] = frozenset({"not", "no", "never", "without", "neither", "nor", "cannot"})
"""Single-word negations (any word ending in "n't" is one too)."""
NEGATION_PAIRS: tuple[tuple[str, str], ...] = (("rather", "than"), ("instead", "of"))
"""Two-word negations."""

_TOKEN = re.compile(r"\d+(?:\.\d+)+|[a-z0-9]+(?:'[a-z]+)*")
_VOWELS = set("aeiouy")
_BOUNDARY = re.compile(r"[.,;:!?\n]")
_CLAUSE = re.compile(r"(?<![0-9])[.,;:!?\n]|[.,](?![0-9])")  # not inside "1.5" or "4,096"
_SQUARED = re.compile(r"\^\s*2(?!\.?[0-9])|\u00b2")  # "n^2", "n ^ 2", "n\u00b2"; not "2^20" or "x^2.5"
_CUBED = re.compile(r"\^\s*3(?!\.?[0-9])|\u00b3")


def _tokens_and_breaks(text: str, boundary: re.Pattern[str] | None = None) -> tuple[list[str], frozenset[int]]:
    """Words (rules 1 and 2) and the indices ``i`` where a clause boundary (``. , ; : ! ?`` or a
    line break; ``boundary`` overrides the set) separates word ``i - 1`` from word ``i``."""
    boundary = boundary or _BOUNDARY
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    text = _CUBED.sub(" cubed", _SQUARED.sub(" squared", text))
    text = re.sub(r"[-/\u2010-\u2015]", " ", text)
    words: list[str] = []
    breaks: set[int] = set()
    # Boundaries found in the whole text, so look-arounds see past the gap ("4,096" is no break).
    marks = [b.start() for b in boundary.finditer(text)]
    last_end = 0
    for m in _TOKEN.finditer(text):
        w = m.group(0)
        if w.endswith("'s"):
            w = w[:-2]
        if not w:
            continue
        i = bisect.bisect_left(marks, last_end)
        if words and i < len(marks) and marks[i] < m.start():
            breaks.add(len(words))
        words.append(w)
        last_end = m.end()
    return words, frozenset(breaks)


def tokenize(text: str) -> list[str]:
    """Split text into lower-case words (rules 1 and 2 of the module docstring), not stemmed."""
    return _tokens_and_breaks(text)[0]


def _has_vowel(s: str) -> bool:
    return any(c in _VOWELS for c in s)


def _undouble(s: str) -> str:
    if len(s) >= 4 and s[-1] == s[-2] and s[-1] not in "lsz" and s[-1] not in _VOWELS:
        return s[:-1]
    return s


def _step(w: str) -> str:
    if w.endswith(("ies", "ied")) and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith("sses"):
        return w[:-2]
    if w.endswith(("ss", "us", "is")):
        return w
    if w.endswith("s"):
        return w[:-1]
    if w.endswith("eed"):
        return w
    if w.endswith("ed"):
        base = w[:-2]
        if len(base) >= 3 and _has_vowel(base):
            return _undouble(base)
        if len(base) < 3 and w[:-1].endswith("e") and _has_vowel(base):
            return w[:-1]  # used -> use
        return w
    if w.endswith("ing"):
        base = w[:-3]
        if len(base) >= 3 and _has_vowel(base):
            return _undouble(base)
        return w
    if w.endswith("ly") and not w.endswith("ply") and len(w) - 2 >= 4:
        return w[:-2]
    if w.endswith("e") and len(w) >= 4:
        return w[:-1]
    return w


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Reduce one lower-case word by the light stemmer (rule 3 of the module docstring)."""
    if len(word) <= 3 or not word.isalpha():
        return word
    while True:
        nxt = _step(word)
        if nxt == word or len(nxt) < 3:
            return word
        word = nxt


def normalize(text: str) -> list[str]:
    """Tokenize and stem: the word sequence that phrases are matched against."""
    return [stem(w) for w in tokenize(text)]


@dataclass(frozen=True)
class Match:
    """Where a phrase matched: word indices ``start``..``end`` (inclusive) of the answer."""

    phrase: str
    start: int
    end: int


def _matches(pwords: Sequence[str], words: Sequence[str]) -> list[tuple[int, int]]:
    """Every (start, end) where ``pwords`` occur in order within len(pwords) + 3 words."""
    n = len(pwords)
    if n == 0:
        return []
    window = n + WINDOW_SLACK
    out = []
    for i, w in enumerate(words):
        if w != pwords[0]:
            continue
        j, k = i, 1
        limit = min(len(words), i + window)
        while k < n:
            j += 1
            while j < limit and words[j] != pwords[k]:
                j += 1
            if j >= limit:
                break
            k += 1
        if k == n:
            out.append((i, j))
    return out


def find_phrase(phrase: str, text: str) -> Match | None:
    """The first match of ``phrase`` in ``text``, or None (negation is not considered)."""
    hits = _matches(normalize(phrase), normalize(text))
    return Match(phrase, *hits[0]) if hits else None


def _is_negation(w: str) -> bool:
    return w in NEGATIONS or w.endswith("n't")


def _negated(raw: Sequence[str], start: int, breaks: frozenset[int] = frozenset()) -> bool:
    lo = max(0, start - NEGATION_LOOKBACK)
    for idx in range(start - 1, lo - 1, -1):
        if idx + 1 in breaks:
            break  # "No, it only helps training": the negation belongs to another clause
        w = raw[idx]
        if w in NEGATIONS or w.endswith("n't"):
            return True
        for first, second in NEGATION_PAIRS:
            if w == second and idx > 0 and raw[idx - 1] == first and idx not in breaks:
                return True
    return False


@dataclass(frozen=True)
class OpenGrade:
    """The outcome of grading one free-text answer."""

    hits: list[KeyPoint] = field(default_factory=list)
    """Key points the answer contains."""
    missed: list[KeyPoint] = field(default_factory=list)
    """Key points the answer lacks."""
    flagged: list[Misconception] = field(default_factory=list)
    """Misconceptions the answer states (not negated)."""
    matches: dict[str, Match] = field(default_factory=dict)
    """For each hit key point or flagged claim (by its text), the match that detected it."""

    @property
    def score(self) -> float:
        """Fraction of key points hit, minus 0.25 per flagged misconception, clipped to [0, 1]."""
        total = len(self.hits) + len(self.missed)
        base = len(self.hits) / total if total else 1.0
        return max(0.0, min(1.0, base - FLAG_PENALTY * len(self.flagged)))


def detect_point(point: KeyPoint, text: str) -> Match | None:
    """The first match of any of the key point's phrases in ``text``."""
    words = normalize(text)
    for phrase in point.phrases:
        hits = _matches(normalize(phrase), words)
        if hits:
            return Match(phrase, *hits[0])
    return None


def detect_misconception(mis: Misconception, text: str) -> Match | None:
    """The first non-negated match of any of the misconception's phrases in ``text``."""
    raw, breaks = _tokens_and_breaks(text)
    _, clauses = _tokens_and_breaks(text, _CLAUSE)
    words = [stem(w) for w in raw]
    for phrase in mis.phrases:
        own_negation = any(_is_negation(w) for w in tokenize(phrase))
        own_split = bool(_tokens_and_breaks(phrase, _CLAUSE)[1])  # "same range; bf16" spans one
        for start, end in _matches(normalize(phrase), words):
            inside = not own_negation and any(_is_negation(raw[i]) for i in range(start + 1, end))
            split = not own_split and any(i in clauses for i in range(start + 1, end + 1))
            if not inside and not split and not _negated(raw, start, breaks):
                return Match(phrase, start, end)
    return None


def grade_open(
    key_points: Sequence[KeyPoint] | OpenQuestion,
    answer: str,
    misconceptions: Sequence[Misconception] = (),
) -> OpenGrade:
    """Grade ``answer`` against key points and misconceptions (or an ``OpenQuestion``'s own)."""
    if isinstance(key_points, OpenQuestion):
        misconceptions = key_points.misconceptions
        key_points = key_points.key_points
    hits, missed, flagged, matches = [], [], [], {}
    for kp in key_points:
        m = detect_point(kp, answer)
        if m is None:
            missed.append(kp)
        else:
            hits.append(kp)
            matches[kp.point] = m
    for mis in misconceptions:
        m = detect_misconception(mis, answer)
        if m is not None:
            flagged.append(mis)
            matches[mis.claim] = m
    return OpenGrade(hits=hits, missed=missed, flagged=flagged, matches=matches)


_IGNORED_SYMBOL = re.compile(r"[^\w\s\-/'\u2019\u2018.,;:!?()\[\]\"\u2010-\u2015]")


def phrase_problem(phrase: str) -> str | None:
    """Why a detection phrase cannot work as written, or None: it normalises to nothing, to a lone
    letter or small number, or to single characters only — which countless answers contain, often
    because the symbol that carried the meaning is dropped ("2×" is just "2", "b·k/e" just
    "b k e"; "T²" is fine: it reads "t squared")."""
    words = normalize(phrase)
    if not words:
        return "has no words the matcher can see"
    if re.fullmatch(r"\s*\d+:\d+\s*", phrase):
        return None  # N:M sparsity ("2:4"): two numbers side by side are specific enough
    digits = words[0].replace(".", "")
    lone = len(words) == 1 and (len(words[0]) == 1 or (digits.isdigit() and len(digits) <= 2))
    if lone or all(len(w) == 1 for w in words):
        symbols = sorted(set(_IGNORED_SYMBOL.findall(phrase)))
        dropped = f" (matching ignores {' '.join(symbols)})" if symbols else ""
        return f"reads as {' '.join(words)!r}{dropped}, which too many answers contain; write it in words"
    return None


def self_check(question: OpenQuestion) -> list[str]:
    """Problems an author should fix (for ``lint``): key points whose phrases do not match the
    question's own model answer, and misconceptions the model answer itself states."""
    g = grade_open(question, question.answer)
    out = [f"key_points: {k.point!r} is not detected in the model answer (phrases {k.phrases})"
           for k in g.missed]
    for where, items in (("key_points", question.key_points), ("misconceptions", question.misconceptions)):
        for item in items:
            out += [f"{where}: phrase {p!r} {why}" for p in item.phrases if (why := phrase_problem(p))]
    out += [f"misconceptions: the model answer states {m.claim!r} (matched {g.matches[m.claim].phrase!r})"
            for m in g.flagged]
    for i, text in enumerate(question.examples.good):
        g = grade_open(question, text)
        if g.flagged:
            out.append(f"examples.good[{i}]: flagged as {g.flagged[0].claim!r} "
                       f"(matched {g.matches[g.flagged[0].claim].phrase!r})")
        elif g.score < PASS_SCORE:
            out.append(f"examples.good[{i}]: scores {g.score:.2f}, missing "
                       + "; ".join(repr(k.point) for k in g.missed))
    for i, text in enumerate(question.examples.bad):
        if not grade_open(question, text).flagged:
            out.append(f"examples.bad[{i}]: no misconception is flagged")
    return out

"""Rubric patterns: a claim written as words, matched on meaning-bearing words in one sentence.

A pattern is a short string such as ``"cache grows linear sequence length"``. It is read like an
answer (``textnorm``: lemmas, numbers, small words dropped) and split into **slots**:

- a word, or words that spell a thesaurus term (``lexicon``): "grows" accepts "grow", "growing",
  and every term of its group ("scales", "increases"...);
- ``a|b|c``: any one of the words; ``(compute again|rerun|no loss)``: any one of the phrases (a
  negator inside an alternative is part of that phrase, like "no" in "no loss", and does not turn
  the claim around);
- ``@name``: any term of the thesaurus group ``name``; ``=word``: that word only, not its group;
- a figure may be one of alternatives (``(~2x|double)``); there are no optional slots (``?`` is
  refused: write a second pattern without the slot);
- ``~47B``, ``~93.4GB``, ``~2x``, ``~56%``: a figure within 5 % (``~13B@10%`` sets the tolerance);
  "47B", "46.7 billion", "forty-seven billion" all read 47e9, "93.4 GB" and "87 GiB" the same bytes;
- a negator ("not", "no", "never", "without") makes the pattern a negative claim.

It **matches** a sentence of the answer that is not a question when every slot is found there, in
any order, in one block (never across "but", "whereas", "while", "unlike"...), within
``4 * slots + 4`` content words. The match is **affirmed** when its polarity is the pattern's — the
number of negators whose reach covers a matched word is odd exactly when the pattern is negative —
and **reversed** otherwise: "memory bandwidth is not really the limit" reverses "memory bandwidth
limit", "it does not need calibration data" affirms "no calibration data".

A pattern needs at least two slots — a single jargon word never stands for a claim — unless it is
negative: "no calibration data" is a claim.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from inferview.practice import textnorm
from inferview.practice.lexicon import Lexicon

DEFAULT_TOLERANCE = 0.05
"""Relative tolerance of a figure slot without ``@``."""
MIN_SLOTS = 2
COORDINATORS = frozenset({"or", "and", "nor"})
"""Words that, between an error's first two words, make them a list rather than a claim."""
LIST_ITEMS = 4
LIST_WORDS = 2
HEDGES = frozenset({"near", "nearly", "almost", "close", "approximately", "roughly", "quasi"})
"""Words that turn "exact" or "lossless" after them into an approximation."""
"""Fewest slots a pattern may have."""
_MAX_COMBINATIONS = 4000


def window(slots: int) -> int:
    """How many content words a match of ``slots`` slots may span."""
    return 4 * slots + 4


class PatternError(ValueError):
    """A pattern that cannot work as written."""


@dataclass(frozen=True)
class Figure:
    """A number a slot asks for."""

    value: float
    kind: str | None
    tolerance: float


@dataclass(frozen=True)
class Slot:
    """One thing a match must find: any of its alternatives (each a run of keys), or a figure."""

    alternatives: tuple[tuple[str, ...], ...] = ()
    figure: Figure | None = None
    text: str = ""
    figures: tuple[Figure, ...] = ()
    """Figures among the alternatives (``(~2x|double)``): any of them, or of the words, fills it."""


@dataclass(frozen=True)
class Pattern:
    """A compiled pattern."""

    source: str
    slots: tuple[Slot, ...]
    negative: bool
    paired: bool = False
    """Its first two words are joined by "and"/"or" in the source ("fp16 and bf16 same range"):
    a claim about a pair, so a coordinator between them in the answer is no list."""


_ITEM = re.compile(r"\??\([^)]*\)\??|\S+")
_FIGURE = re.compile(r"^~(?P<num>\d+(?:\.\d+)?(?:e[-+]?\d+)?)\s*(?P<unit>[a-z%×]*)(?:@(?P<tol>\d+(?:\.\d+)?)%)?$")


def _figure(item: str) -> Figure:
    for char, decimal in textnorm.FRACTION_CHARS.items():
        item = item.replace(char, decimal)
    m = _FIGURE.match(item.lower())
    if not m:
        raise PatternError(f"figure {item!r} is not like ~47B, ~93.4GB, ~2x, ~56% or ~13B@10%")
    unit = m.group("unit") or None
    q = textnorm._quantity(m.group("num"), unit)
    if unit and unit not in textnorm.BYTE_UNITS and unit not in textnorm.SCALE_SUFFIX \
            and unit not in ("x", "×", "%", "percent"):
        raise PatternError(f"figure {item!r}: unknown unit {unit!r}")
    value, kind = q.readings[-1] if unit in ("b",) else q.readings[0]
    if not unit:
        kind = None
    tol = float(m.group("tol")) / 100 if m.group("tol") else DEFAULT_TOLERANCE
    return Figure(value, kind, tol)


def _content(text: str, lex: Lexicon, keep_negators: bool = False) -> tuple[list[str], int]:
    """Content lemmas of ``text`` and how many free negators it holds (``keep_negators``: they
    are words of the phrase, as in an alternative "(no loss|lossless)")."""
    doc = textnorm.read(text, lex.lemmas)
    kept = [t for t in doc.tokens if not t.stop or t.negator]
    lemmas = [t.lemma for t in kept]
    words, negators, i = [], 0, 0
    for key, length in lex.units(lemmas):
        if length == 1 and kept[i].negator and not keep_negators:
            negators += 1
        else:
            words.append(key)
        i += length
    return words, negators


def compile_pattern(source: str, lex: Lexicon) -> Pattern:
    """Compile one pattern string (raises :class:`PatternError`); cached per lexicon, since a topic's
    catalogue is compiled into each of its questions' rubrics."""
    cache = lex.__dict__.setdefault("_patterns", {})
    if source not in cache:
        try:
            cache[source] = _compile(source, lex)
        except PatternError as exc:
            cache[source] = exc
    found = cache[source]
    if isinstance(found, PatternError):
        raise found
    return found


def _compile(source: str, lex: Lexicon) -> Pattern:
    slots: list[Slot] = []
    negators = 0
    plain: list[str] = []

    def flush() -> None:
        nonlocal negators
        if plain:
            words, n = _content(" ".join(plain), lex)
            negators += n
            slots.extend(Slot(((w,),), text=w.lstrip("@")) for w in words)
            plain.clear()

    items = _ITEM.findall(source)
    for item in items:
        if item.startswith("?") or item.endswith("?"):
            raise PatternError(f"{item!r}: '?' does not make a slot optional; write a second "
                               "pattern without the slot")
        if item.startswith("~"):
            flush()
            slots.append(Slot(figure=_figure(item), text=item))
        elif item.startswith("=") and len(item) > 1:
            flush()
            words = [t.lemma for t in textnorm.read(item[1:], lex.lemmas).tokens]
            if not words:
                raise PatternError(f"{item!r} has no words the matcher can see")
            slots.append(Slot((tuple(words),), text=item))
        elif item.startswith("@"):
            flush()
            name = item[1:]
            if name not in lex.groups:
                raise PatternError(f"{item!r}: no thesaurus group {name!r}")
            slots.append(Slot((("@" + name,),), text=item))
        elif "|" in item or item.startswith("("):
            flush()
            alts, figures = [], []
            for alt in item.strip("()").split("|"):
                if alt.strip().startswith("~"):
                    try:
                        figures.append(_figure(alt.strip()))
                        continue
                    except PatternError:
                        alt = alt.strip()[1:]  # "~20 ms": a unit figures do not know reads as words
                if alt.startswith("="):  # that word only, not its thesaurus group
                    words = [t.lemma for t in textnorm.read(alt[1:], lex.lemmas).tokens]
                else:
                    words, _ = _content(alt, lex, keep_negators=True)
                if words:
                    alts.append(tuple(words))
            if not alts and not figures:
                raise PatternError(f"{item!r} has no words the matcher can see")
            slots.append(Slot(tuple(alts), text=item, figures=tuple(figures)))
        else:
            plain.append(item)
    flush()
    if len(slots) < MIN_SLOTS and not (slots and negators % 2 == 1):
        raise PatternError(f"{source!r} has {len(slots)} slot(s); a pattern needs at least "
                           f"{MIN_SLOTS} (a single term never stands for a claim)")
    paired = len(items) > 2 and items[1].lower() in COORDINATORS
    return Pattern(source, tuple(slots), negators % 2 == 1, paired)


class Reading:
    """An answer read once for every pattern of a rubric."""

    def __init__(self, text: str, lex: Lexicon) -> None:
        self.doc = textnorm.read(text, lex.lemmas)
        toks = self.doc.tokens
        self.index = [i for i, t in enumerate(toks) if not t.stop or t.negator]
        """Content position -> token index."""
        lemmas = [toks[i].lemma for i in self.index]
        self.keys = lex.tag(lemmas)
        for p in range(len(lemmas) - 1):
            # "less peaked" is "flatter": the word after "less" also means its antonym
            if lemmas[p] == "less" and lemmas[p + 1] != "than":
                self.keys[p + 1] += [("@" + lex.antonyms[k[1:]], n) for k, n in self.keys[p + 1]
                                     if k.startswith("@") and k[1:] in lex.antonyms]
            # "near-lossless", "almost exact": a hedged exact is not exact
            if lemmas[p] in HEDGES:
                self.keys[p + 1] = [(k, n) for k, n in self.keys[p + 1] if k != "@exact"] + [
                    ("@approximate", n) for k, n in self.keys[p + 1] if k == "@exact"]
        self.covered = textnorm.negation_scopes(toks)
        """Token index -> the negator whose reach covers it."""

    @cached_property
    def lists(self) -> frozenset[int]:
        """Sentences that are lists of short items ("KV cache, GQA, HBM bandwidth, linear growth"):
        at least LIST_ITEMS comma-separated items, most of at most LIST_WORDS content words.
        Words of different items are not a claim about each other."""
        sizes: dict[int, dict[int, int]] = {}
        for i in self.index:
            t = self.doc.tokens[i]
            sizes.setdefault(t.sentence, {}).setdefault(t.item, 0)
            sizes[t.sentence][t.item] += 1
        out = set()
        for sentence, segs in sizes.items():
            counts = sorted(segs.values())
            if len(counts) >= LIST_ITEMS and counts[len(counts) // 2] <= LIST_WORDS:
                out.add(sentence)
        return frozenset(out)

    @cached_property
    def by_sentence(self) -> dict[int, list[int]]:
        """Sentence -> its content positions (questions left out)."""
        out: dict[int, list[int]] = {}
        for p, i in enumerate(self.index):
            s = self.doc.tokens[i].sentence
            if s not in self.doc.questions:
                out.setdefault(s, []).append(p)
        return out

    @cached_property
    def starts(self) -> dict[str, list[int]]:
        """Key -> the content positions where it starts (to find a slot's words without scanning)."""
        out: dict[str, list[int]] = {}
        for p, keys in enumerate(self.keys):
            for key, _ in keys:
                out.setdefault(key, []).append(p)
        return out

    @cached_property
    def figures(self) -> list[int]:
        """Content positions that hold a quantity."""
        return [p for p, i in enumerate(self.index) if self.doc.tokens[i].quantity is not None]

    def slot_spans(self, slot: Slot, sentence: int) -> list[tuple[int, int]]:
        """Every ``(first, last)`` content-position span of ``sentence`` where ``slot`` is found
        (cached: a slot recurs across the patterns of a rubric)."""
        cache = self.__dict__.setdefault("_spans", {})
        key = (slot, sentence)
        if key not in cache:
            cache[key] = self._slot_spans(slot, self.by_sentence[sentence])
        return cache[key]

    def _slot_spans(self, slot: Slot, positions: Sequence[int]) -> list[tuple[int, int]]:
        spans = []
        toks = self.doc.tokens
        lo, hi = positions[0], positions[-1]
        figures = (slot.figure,) if slot.figure is not None else slot.figures
        pos_set = self._position_set(positions)
        for p in self.figures if figures else ():
            if lo <= p <= hi and p in pos_set:
                q = toks[self.index[p]].quantity
                if any(q.fits(f.value, f.kind, f.tolerance) for f in figures):
                    spans.append((p, p))
        if slot.figure is not None:
            return spans
        for alt in slot.alternatives:
            for p in self.starts.get(alt[0], ()) if alt else ():
                if p in pos_set:
                    end = self._run(alt, p, pos_set)
                    if end is not None:
                        spans.append((p, end))
        spans.sort()
        return spans

    def _position_set(self, positions: Sequence[int]) -> set[int]:
        cache = self.__dict__.setdefault("_position_sets", {})
        key = (positions[0], len(positions))
        if key not in cache:
            cache[key] = set(positions)
        return cache[key]

    def _run(self, alt: tuple[str, ...], p: int, pos_set: set[int]) -> int | None:
        if not alt:
            return p - 1
        if p not in pos_set:
            return None
        for key, length in self.keys[p]:
            if key == alt[0]:
                end = self._run(alt[1:], p + length, pos_set)
                if end is not None:
                    return end
        return None


@dataclass(frozen=True)
class Match:
    """Where a pattern matched."""

    pattern: str
    """The pattern's source."""
    first: int
    """Token index of its first matched word."""
    last: int
    """Token index of its last matched word."""
    words: str
    """The answer's words from the first matched word to the last."""
    affirmed: bool
    """The answer states the pattern's claim (rather than its reversal)."""
    sentence: int


def match(pattern: Pattern, reading: Reading, scope: str = "block", ordered: bool = False) -> list[Match]:
    """Every sentence where ``pattern`` matches: the affirmed match there if any, else a reversed one.
    ``scope`` is where all its words must lie: one ``sentence``, one ``block`` of it (no contrast
    between them), one ``segment`` (no comma, colon, dash or bracket either) or one ``clause`` (a
    segment, with a short lead-in such as "With MQA," joined to it). ``ordered`` asks
    for the slots in the pattern's order and within ``2 * slots + 2`` words: the tighter reading
    that errors are held to."""
    out = []
    toks = reading.doc.tokens
    w = 2 * len(pattern.slots) + 2 if ordered else window(len(pattern.slots))
    for sentence in reading.by_sentence:
        spans = [reading.slot_spans(slot, sentence) for slot in pattern.slots]
        if any(not s for s in spans):
            continue
        best: tuple[bool, int, tuple] | None = None
        count = 0
        for combo in itertools.product(*spans):
            count += 1
            if count > _MAX_COMBINATIONS:
                break
            lo = min(a for a, _ in combo)
            hi = max(b for _, b in combo)
            if hi - lo + 1 > w:
                continue
            if ordered and any(combo[k][0] <= combo[k - 1][1] for k in range(1, len(combo))):
                continue
            if ordered and len(combo) > 1 and not pattern.paired and any(
                    toks[i].surface in COORDINATORS
                    for i in range(reading.index[combo[0][1]] + 1, reading.index[combo[1][0]])):
                continue  # "MLA or a quantized cache": a list of subjects, not "MLA quantizes"
            if sentence in reading.lists:
                segs = {toks[reading.index[q]].item for a, b in combo for q in (a, b)}
                if max(segs) - min(segs) > 1:
                    continue  # items of a list: at most one item and the one before it
            if len({getattr(toks[reading.index[a]], scope) for a, _ in combo} |
                   {getattr(toks[reading.index[b]], scope) for _, b in combo}) > 1:
                continue
            cells = sorted(q for a, b in combo for q in range(a, b + 1))
            if len(cells) != len(set(cells)):
                continue  # two slots on one word
            tokens = [reading.index[q] for q in cells]
            inside = {i for i in tokens if toks[i].negator}  # "not an approximation" as one term
            negs = {reading.covered[i] for i in tokens if i in reading.covered} - inside
            # a positive claim has no negated word; a negative one an odd number of negators
            affirmed = (len(negs) % 2 == 1) if pattern.negative else not negs
            key = (affirmed, -(hi - lo), combo)
            if best is None or key[:2] > best[:2]:
                best = key
        if best is None:
            continue
        combo = best[2]
        first = reading.index[min(a for a, _ in combo)]
        last = reading.index[max(b for _, b in combo)]
        out.append(Match(pattern.source, first, last, reading.doc.words(first, last), best[0], sentence))
    return out


def reversals(pattern: Pattern, lex: Lexicon) -> list[Pattern]:
    """The pattern with one slot that names a group turned into that group's antonym, for each such
    slot: the claims that say the opposite ("cache grows" -> "cache shrinks")."""
    out = []
    for i, slot in enumerate(pattern.slots):
        if slot.figure is not None or slot.figures or len(slot.alternatives) != 1 \
                or len(slot.alternatives[0]) != 1:
            continue
        key = slot.alternatives[0][0]
        other = lex.antonyms.get(key.lstrip("@")) if key.startswith("@") else None
        if other is None:
            continue
        slots = list(pattern.slots)
        slots[i] = Slot((("@" + other,),), text="@" + other)
        out.append(Pattern(f"{pattern.source} (reversed: {slot.text} -> {other})", tuple(slots),
                           pattern.negative, pattern.paired))
    return out

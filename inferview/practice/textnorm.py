"""Reading a free-text answer into tokens that rubric patterns are matched against.

The same reading applies to an answer and to every pattern a bank author writes, so the two always
agree on what a word is. In order:

1. **Characters.** Lower case; curly quotes become ``'``; ``n^2``/``n²`` read "n squared", ``^3``/``³``
   "cubed"; hyphens and slashes split words ("KV-cache", "K/V"), except inside a number ("1/8").
2. **Contractions** are expanded: "can't" → "can not", "isn't" → "is not", "won't" → "will not",
   "it's" → "it is", "we'd" → "we would"; a possessive "'s" is dropped ("model's" → "model").
3. **Numbers.** Number words become digits ("one FLOP per byte" → "1 flop per byte", "forty-seven
   billion" → "47 billion"); thousands separators go ("4,096" → "4096"). A number with its scale
   and unit ("47B", "46.7 billion", "93.4 GB", "87 GiB", "2x", "56%") is also read as a
   :class:`Quantity`, so a pattern can ask for a figure within a tolerance.
4. **Lemmas** from ``simplemma`` ("caches", "cached", "caching" → "cache"; "larger" → "large"), with
   the thesaurus's own overrides for the comparatives and domain words it gets wrong.
5. **Structure.** Sentences end at ``. ! ? ;``, blank lines and list items; a sentence that ends in ``?`` is a
   question. Inside a sentence, *segments* end at ``, : ( ) -`` and dashes, and *blocks* end at a
   contrast ("but", "whereas", "while", "although", "though", "however", "yet", "unlike", "versus",
   "as opposed to"): a claim never spans a contrast.
6. **Small words** (articles, prepositions, pronouns, auxiliaries) are marked ``stop``; patterns
   ignore them, so "merged into" and "merged with" read the same.
7. **Negation.** "not", "no", "never", "without", "none", "nothing", "neither", "nor", "no longer",
   "rather than", "instead of" are negators; each covers the next few content words up to the end
   of its segment or a joining word ("and", "so", "which", "because"...). "Not only", "not just" and
   "no matter" are not negations.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

NEGATION_REACH = 5
"""How many content words after a negator it covers (within its segment)..."""
SHORT_REACH = {"without": 1, "no": 2, "none": 2, "nothing": 2, "lack": 1, "of": 1, "non": 1}
"""...except the negators that negate a noun phrase, not a clause: "without a cache you recompute
everything" negates the cache, not the recomputing."""

STOPWORDS: frozenset[str] = frozenset("""
a an the of to in into on onto at by for from with within as is are was were be been being am
it its this that these those there their they them we us you your our i me my he she his her
which who whom whose what and or also just really very quite do does did done has have had having
will would can could should may might shall about then thus so such some
here how when where why well basically actually pretty kind sort get gets got getting one's
via around along across upon whether either something anything
""".split())
"""Words patterns ignore ("the", "of", "into", "with", "is"...)."""

NEGATORS: frozenset[str] = frozenset({"not", "no", "never", "without", "none", "nothing",
                                      "neither", "nor", "nobody", "nowhere", "non"})
"""Single-word negators (contractions are expanded to "not" first; "non-deterministic" reads
"non deterministic", so "non" negates the one word after it)."""

_NOT_NEGATION = {("not", "only"), ("no", "matter")}
"""Pairs that start with a negator but do not negate what follows."""
_NEGATION_PAIRS = {("rather", "than"), ("instead", "of"), ("no", "longer"), ("lack", "of")}
"""Two-word negators; the pair's second word is the one that opens the scope."""

SCOPE_STOPS: frozenset[str] = frozenset({"and", "so", "which", "because", "since", "then",
                                         "therefore", "hence", "thus", "if", "until"})
"""Words that end a negation's reach ("doesn't approximate and gives the same output")."""

CONTRASTS: frozenset[str] = frozenset({"but", "whereas", "while", "although", "though", "however",
                                       "yet", "unlike", "versus", "vs", "instead", "rather"})
"""Words that start a new block: a claim never spans one."""

_CONTRACTIONS = [
    (re.compile(r"\bcan't\b|\bcannot\b"), "can not"),
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"\bshan't\b"), "shall not"),
    (re.compile(r"\bain't\b"), "is not"),
    (re.compile(r"n't\b"), " not"),
    (re.compile(r"'re\b"), " are"),
    (re.compile(r"'ve\b"), " have"),
    (re.compile(r"'ll\b"), " will"),
    (re.compile(r"'d\b"), " would"),
    (re.compile(r"'m\b"), " am"),
    (re.compile(r"\b(it|that|what|there|here|who|where|how|he|she)'s\b"), r"\1 is"),
    (re.compile(r"\blet's\b"), "let us"),
    (re.compile(r"'s\b"), ""),
    (re.compile(r"(?<=[a-z])s'(?=\s|$)"), "s"),
]

_UNITS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
          "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
          "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
          "nineteen": 19}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
         "eighty": 80, "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_FRACTIONS = {"half": 0.5, "quarter": 0.25, "third": 1 / 3}
SCALE_SUFFIX = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "million": 1e6, "b": 1e9,
                "bn": 1e9, "billion": 1e9, "g": 1e9, "t": 1e12, "trillion": 1e12}
"""Scale words and suffixes after a number ("47B", "46.7 billion", "128K")."""
BYTE_UNITS = {"b": 1, "byte": 1, "bytes": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
              "pb": 1e15, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
              "kilobyte": 1e3, "kilobytes": 1e3, "megabyte": 1e6, "megabytes": 1e6,
              "gigabyte": 1e9, "gigabytes": 1e9, "terabyte": 1e12, "terabytes": 1e12}
"""Byte units after a number ("93.4 GB", "87 GiB", "656 B")."""

_QUANTITY = re.compile(
    r"(?<![\w.])(?P<num>\d+(?:\.\d+)?(?:e[-+]?\d+)?)\s?"
    r"(?P<suffix>kib|mib|gib|tib|kb|mb|gb|tb|pb|bytes?|kilobytes?|megabytes?|gigabytes?|terabytes?"
    r"|thousand|million|billion|trillion|bn|mn|k|m|b|g|t|x|×|times|fold|%|percent)?(?![a-z])")


@dataclass(frozen=True)
class Quantity:
    """A number read from the text, with every value it can stand for ("656B" may be 656 bytes or
    656 billion)."""

    readings: tuple[tuple[float, str], ...]
    """(value, kind) pairs, kind one of ``count``, ``bytes``, ``ratio``, ``percent``."""

    def fits(self, value: float, kind: str | None, tolerance: float) -> bool:
        """Whether one reading is within ``tolerance`` (relative) of ``value`` and of ``kind``
        (``None`` accepts any kind)."""
        for v, k in self.readings:
            if kind is not None and k != kind and not (kind == "count" and k == "ratio"):
                continue
            if value == 0:
                if v == 0:
                    return True
            elif abs(v - value) <= tolerance * abs(value):
                return True
        return False


@dataclass
class Token:
    """One word of a text."""

    surface: str
    """The word as normalised (lower case, contractions expanded)."""
    lemma: str
    """Its lemma; numbers in a canonical form ("4096", "1.5")."""
    start: int
    """Character offset in the normalised text."""
    end: int
    sentence: int
    """Index of its sentence."""
    segment: int
    """Index of its segment (between commas, colons, dashes...) across the whole text."""
    block: int
    """Index of its block (between contrasts) across the whole text."""
    item: int = 0
    """Index of its comma-separated item across the whole text (what the list rule counts)."""
    clause: int = 0
    """Its segment, except that a short lead-in ("With MQA, ...", "In decode, ...") shares the
    clause of the segment after it: what errors are matched within."""
    stop: bool = False
    """A small word that patterns ignore."""
    negator: bool = False
    """This word opens a negation."""
    quantity: Quantity | None = None
    """The figure this word starts, if it is a number."""


@dataclass
class Doc:
    """A text read for matching."""

    text: str
    """The normalised text (what token offsets point into)."""
    original: str = ""
    """The text as written."""
    offsets: list[int] = field(default_factory=list)
    """For each character of ``text``, the offset of the character of ``original`` it came from."""
    tokens: list[Token] = field(default_factory=list)
    questions: frozenset[int] = frozenset()
    """Sentences that end with a question mark."""

    @property
    def content(self) -> list[int]:
        """Indices of the tokens that are not small words."""
        return [i for i, t in enumerate(self.tokens) if not t.stop]

    def words(self, lo: int, hi: int) -> str:
        """The text as written from token ``lo`` to token ``hi`` inclusive."""
        if not self.offsets:
            return self.text[self.tokens[lo].start:self.tokens[hi].end]
        a = self.offsets[self.tokens[lo].start]
        b = self.offsets[self.tokens[hi].end - 1] + 1
        return " ".join(self.original[a:b].split())


def _fmt(v: float) -> str:
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.6g}"


_WORD = re.compile(r"[a-z]+")


_GREEK = {"α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "θ": "theta",
          "λ": "lambda", "μ": "mu", "π": "pi", "σ": "sigma", "τ": "tau", "φ": "phi", "ω": "omega",
          "Σ": "sum", "Δ": "delta", "∑": "sum", "√": "sqrt"}
"""Letters that formulas use, read as words ("1/(1 - α)" is "1 1 alpha")."""


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _compiled(pattern: str) -> re.Pattern[str]:
    if pattern not in _PATTERNS:
        _PATTERNS[pattern] = re.compile(pattern)
    return _PATTERNS[pattern]


class _Tracked:
    """Text being normalised, with the original offset of every character (to quote the answer's
    own words back to the user)."""

    def __init__(self, text: str) -> None:
        self.text = ""
        self.map: list[int] = []
        for i, c in enumerate(text):
            low = c.lower()
            self.text += low
            self.map.extend([i] * len(low))
        self.end = len(text)

    def splice(self, edits: list[tuple[int, int, str]]) -> None:
        """Replace ``text[start:end]`` by each ``replacement`` (edits in order, not overlapping)."""
        out, omap, pos = [], [], 0
        for start, end, rep in edits:
            out.append(self.text[pos:start])
            omap.extend(self.map[pos:start])
            span = self.map[start:end] or [self.map[start] if start < len(self.map) else self.end]
            out.append(rep)
            omap.extend(span[min(k, len(span) - 1)] for k in range(len(rep)))
            pos = end
        out.append(self.text[pos:])
        omap.extend(self.map[pos:])
        self.text, self.map = "".join(out), omap

    def sub(self, pattern: re.Pattern[str] | str, repl: str | Callable[[re.Match[str]], str]) -> None:
        pat = _compiled(pattern) if isinstance(pattern, str) else pattern
        if isinstance(pattern, str) and len(pattern) == 1 and pattern not in self.text:
            return  # a one-character literal ("×", "α") that the text does not hold
        edits = [(m.start(), m.end(), m.expand(repl) if isinstance(repl, str) else repl(m))
                 for m in pat.finditer(self.text)]
        if edits:
            self.splice(edits)


_WORD = re.compile(r"[a-z]+")


def _number_words(text: str) -> list[tuple[int, int, str]]:
    """Edits turning runs of number words into digits ("forty-seven" -> "47", "two hundred and
    fifty six" -> "256")."""
    edits = []
    words = list(_WORD.finditer(text))
    i = 0
    while i < len(words):
        w = words[i].group(0)
        if w not in _UNITS and w not in _TENS:
            i += 1
            continue
        value, j, last = 0, i, None
        while j < len(words):
            u = words[j].group(0)
            gap = text[words[j - 1].end():words[j].start()] if j > i else ""
            if j > i and gap not in (" ", "-"):
                break
            if u in _UNITS and last != "unit":
                value += _UNITS[u]
                last = "unit"
            elif u in _TENS and last in (None, "hundred"):
                value += _TENS[u]
                last = "tens"
            elif u == "hundred" and last == "unit" and value < 10:
                value *= 100
                last = "hundred"
            elif (u == "and" and last == "hundred" and j + 1 < len(words)
                  and words[j + 1].group(0) in (*_UNITS, *_TENS)):
                last = "hundred"
            else:
                break
            j += 1
        edits.append((words[i].start(), words[j - 1].end(), str(value)))
        i = j
    return edits


def _characters(text: str) -> _Tracked:
    t = _Tracked(text)
    t.sub(r"[\u2018\u2019]", "'")
    t.sub(r"`", " ")
    t.sub(r"\be\.g\.|\beg\.", "eg")
    t.sub(r"\bi\.e\.|\bie\.", "ie")
    t.sub(r"\bo\(\s*(?:n|t|l|s)\s*(?:\^\s*2|\u00b2|\*\*\s*2|squared)\s*\)", " quadratic ")  # O(N^2)
    t.sub(r"\bo\(\s*(?:n|t|l|s)\s*\)", " linear ")                                 # O(N)
    t.sub(r"\bo\(\s*1\s*\)", " constant ")                                          # O(1)
    t.sub(r"\^\s*3(?!\.?[0-9])|\u00b3", " cubed")
    t.sub(r"\^\s*2(?!\.?[0-9])|\u00b2", " squared")
    t.sub(r"(?<=\d),(?=\d{3}\b)", "")          # 4,096 -> 4096
    t.sub(r"(?<=\d)_(?=\d{3}\b)", "")          # 1_000 -> 1000
    t.sub(r"[\u2010-\u2012]", "-")
    t.sub(r"\s*(?:->|=>|-->|\u2192|\u27f6|\u21d2)\s*", " leads to ")  # "X -> Y" is a claim, not a break
    t.sub(r"\b(\d+(?:\.\d+)?)\s*(?:-|\u2013|to)\s*(\d+(?:\.\d+)?)\s*(x|×)(?![a-z])", r"\1x to \2x")  # 5-10x
    t.sub(r"[\u2013\u2014\u2015]", " - ")  # dashes are segment breaks
    t.sub(r"(?<![\d\s])/|/(?![\d\s])", " / ")   # K/V -> K / V, keep 1/8
    t.sub(r"\b(on|off)[- ](chip|policy)\b", r"\1\2")  # on-chip, off-policy: "on"/"off" carry it
    t.sub(r"(?<=[a-z])\+(?=[a-z])", " and ")    # W+A is weights and activations
    t.sub(r"(?<=\w)-(?=\w)", " ")               # memory-bound -> memory bound
    t.sub(r"(?<=[\w)])\s*\*\s*(?=[\w(])", " × ")  # 2 * n_layers * d_head is a product
    t.sub(r"\u00d7", " × ")
    t.sub(r"\u2193", " reduce ")      # ↓
    t.sub(r"\u2191", " increase ")    # ↑
    t.sub(r"\u221d", " proportional to ")  # ∝
    t.sub(r"\u2248", " ~ ")
    t.sub(r"(?<=\d):(?=\d)", " ")  # 2:4 sparsity reads "2 4", and breaks no clause
    for char, decimal in FRACTION_CHARS.items():
        t.sub(char, f" {decimal} ")
    t.sub(r"\u2260|!=|=/=", " not equal ")
    t.sub(r"\u2264|<=", " at most ")
    t.sub(r"\u2265|>=", " at least ")
    t.sub(r"(?<![<>=-])<(?![<=])", " less than ")
    t.sub(r"(?<![<>=-])>(?![>=])", " more than ")
    t.sub(r"==", " equal ")
    for letter, name in _GREEK.items():
        t.sub(letter, f" {name} ")
    t.sub(r"\bw\.\s?p\.", "with probability")
    t.sub(r"\.{3,}|\u2026", " , ")  # an ellipsis is a pause, not the end of a sentence
    for pat, rep in _CONTRACTIONS:
        t.sub(pat, rep)
    t.splice(_number_words(t.text))
    t.sub(r"\b(a|1) (half|quarter|third)\b", lambda m: _fmt(_FRACTIONS[m.group(2)]))
    t.sub(r"\b(twice|double)\b(?= (?:as|the|that))", "2x")
    return t


FRACTION_CHARS: dict[str, str] = {"\u00bd": "0.5", "\u00bc": "0.25", "\u00be": "0.75", "\u2153": "0.333"}
"""Vulgar fractions and the decimals they read as (½ is 0.5)."""

_TOKEN = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?|[a-z0-9_]+|\S")
_SENTENCE_END = re.compile(r"[.!?;]")
_LINE_BREAK = re.compile(r"\n\s*\n|\n\s*(?:[-*•+]\s|\d+[.)]\s)")
"""A paragraph break, or a line that starts a list item: a sentence ends there. A single line break
inside flowing text (a wrapped line) is a space."""
_SEGMENT_END = {",", ":", "(", ")", "-", "[", "]", "\""}
_ABBREVIATIONS = {"eg", "ie", "vs", "etc", "approx", "cf", "al", "fig", "eq", "resp"}


@lru_cache(maxsize=1)
def _lemmatizer():
    import simplemma  # noqa: PLC0415 - ~0.4 s to load its English data; only when first grading

    return simplemma


@lru_cache(maxsize=65536)
def lemma(word: str) -> str:
    """The lemma of one lower-case word, by simplemma (words of two letters stay as they are)."""
    if not word.isalpha() or len(word) <= 2:
        return word
    sm = _lemmatizer()
    out = sm.lemmatize(word, lang="en").lower()
    if out == word and len(word) >= 4 and not sm.is_known(word, lang="en"):
        # jargon plurals the dictionary has never seen: gpus, matmuls, softmaxes, quantizers
        if word.endswith(("xes", "ches", "shes", "sses")):
            return word[:-2]
        if word.endswith("s") and not word.endswith(("ss", "is")):
            return word[:-1]
    return out if out.isalpha() else word


def _quantity(number: str, suffix: str | None) -> Quantity:
    v = float(number)
    if suffix in ("x", "×", "times", "fold"):
        return Quantity(((v, "ratio"),))
    if suffix in ("%", "percent"):
        return Quantity(((v, "percent"), (v / 100, "ratio")))
    readings: list[tuple[float, str]] = []
    if suffix in BYTE_UNITS:
        readings.append((v * BYTE_UNITS[suffix], "bytes"))
    if suffix in SCALE_SUFFIX:
        readings.append((v * SCALE_SUFFIX[suffix], "count"))
    if not suffix:
        readings += [(v, "count"), (v, "bytes")]  # a multiplier needs its x, times or fold
    return Quantity(tuple(readings))


def read(text: str, overrides: Mapping[str, str] | None = None) -> Doc:
    """Read ``text`` into a :class:`Doc` (the steps in the module docstring); ``overrides`` maps a
    word to its lemma before simplemma is asked."""
    overrides = overrides or {}
    tracked = _characters(text)
    norm = tracked.text
    quantities = {m.start(): _quantity(m.group("num"), m.group("suffix"))
                  for m in _QUANTITY.finditer(norm)}
    doc = Doc(norm, original=text, offsets=tracked.map)
    sentence = segment = block = item = 0
    questions: set[int] = set()
    labels: set[int] = set()  # segments that end with a colon
    raw = list(_TOKEN.finditer(norm))
    for idx, m in enumerate(raw):
        w = m.group(0)
        if idx and _LINE_BREAK.search(norm[raw[idx - 1].end():m.start()] + norm[m.start():m.start() + 1]):
            if doc.tokens and doc.tokens[-1].sentence == sentence:
                sentence += 1
                segment += 1
                block += 1
                item += 1
        if _SENTENCE_END.fullmatch(w):
            prev = raw[idx - 1].group(0) if idx else ""
            nxt = norm[m.end():m.end() + 1]
            if w == "." and prev in _ABBREVIATIONS:
                continue
            if w == "." and nxt and not nxt.isspace():
                continue  # "e.g." "1.5" are tokens already; "x.y" is no break
            if doc.tokens and doc.tokens[-1].sentence == sentence:
                if w == "?":
                    questions.add(sentence)
                sentence += 1
                segment += 1
                block += 1
                item += 1
            continue
        if w in _SEGMENT_END or not re.match(r"[a-z0-9_]", w):
            if w == ":" and doc.tokens and doc.tokens[-1].segment == segment:
                labels.add(segment)
            if w in _SEGMENT_END or w in ("•", "*"):
                segment += 1
            if w == ",":
                item += 1
            continue
        if w in CONTRASTS:
            block += 1
            segment += 1
        number = re.fullmatch(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?", w)
        lem = _fmt(float(w)) if number else overrides.get(w) or lemma(w)
        doc.tokens.append(Token(w, lem, m.start(), m.end(), sentence, segment, block,
                                stop=w in STOPWORDS or lem in STOPWORDS or w in CONTRASTS,
                                quantity=quantities.get(m.start()) if number else None, item=item))
    _mark_negators(doc.tokens)
    _mark_clauses(doc.tokens, labels)
    doc.questions = frozenset(questions)
    return doc


LEAD_IN = 4
"""A sentence's first segment of at most this many words joins the next one's clause..."""
LEAD_WORDS: frozenset[str] = frozenset({
    "with", "in", "for", "on", "at", "during", "under", "by", "from", "after", "before", "per",
    "when", "across", "within", "compared", "relative", "over", "through",
})
"""...when it is a prepositional lead-in ("With MQA,", "In decode,", "For Llama 2 70B,"), not a
clause of its own ("FA is exact, ..."), or a label before a colon ("MQA: no quality loss",
"Decode: compute-bound")."""


def _mark_clauses(tokens: list[Token], labels: set[int] = frozenset()) -> None:
    for t in tokens:
        t.clause = t.segment
    i = 0
    while i < len(tokens):
        sentence, seg = tokens[i].sentence, tokens[i].segment
        j = i
        while j < len(tokens) and tokens[j].segment == seg:
            j += 1
        lead = tokens[i:j]
        if (j < len(tokens) and tokens[j].sentence == sentence and len(lead) <= LEAD_IN
                and (lead[0].surface in LEAD_WORDS or seg in labels)
                and tokens[j].surface not in CONTRASTS
                and not any(t.negator or t.surface in CONTRASTS for t in lead)):
            for t in lead:
                t.clause = tokens[j].segment
        while j < len(tokens) and tokens[j].sentence == sentence:
            j += 1
        i = j


def _mark_negators(tokens: list[Token]) -> None:
    for i, t in enumerate(tokens):
        nxt = tokens[i + 1].surface if i + 1 < len(tokens) else ""
        prev = tokens[i - 1].surface if i else ""
        if t.surface in NEGATORS:
            if (t.surface, nxt) in _NOT_NEGATION or (t.surface, nxt) in _NEGATION_PAIRS:
                continue
            if t.surface == "no" and nxt in ("more", "less", "fewer") and i + 2 < len(tokens) \
                    and tokens[i + 2].surface == "than":
                continue  # "no more than 5 %" bounds a number, it negates nothing
            if (prev, t.surface) in _NEGATION_PAIRS:
                continue
            t.negator = True
        elif (prev, t.surface) in _NEGATION_PAIRS:
            t.negator = True
        if t.negator:
            t.stop = False


def negation_scopes(tokens: list[Token]) -> dict[int, int]:
    """Token index -> index of the negator that covers it (the nearest one)."""
    covered: dict[int, int] = {}
    for i, t in enumerate(tokens):
        if not t.negator:
            continue
        reach, limit = 0, SHORT_REACH.get(t.surface, NEGATION_REACH)
        for j in range(i + 1, len(tokens)):
            u = tokens[j]
            # "not because X" negates X: the reason, not a new clause
            opening = j == i + 1 and u.surface in ("because", "since")
            if u.segment != t.segment or (u.surface in SCOPE_STOPS and not opening) or u.negator:
                break
            covered[j] = i
            if not u.stop and u.surface not in ("any", "because", "since"):
                reach += 1
                if reach >= limit:
                    break
    return covered

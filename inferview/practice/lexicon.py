"""The domain thesaurus: groups of terms that mean the same thing in an answer.

A group has a name and its terms, e.g. ``hbm: [HBM, high-bandwidth memory, GPU DRAM, device
memory]``. Every term is read like answer text (``textnorm``), so "high bandwidth memories" is the
term "high-bandwidth memory". In an answer, each run of content words that spells a term is also
tagged with its group; in a pattern, a word or words that spell a term stand for the whole group
(so a pattern that says "absorb" accepts "absorption" and "folded into" when they share a group), and
``@name`` names a group outright.

The shared thesaurus is ``thesaurus.yaml`` beside this module; a bank may add groups of its own
(``synonyms:``), which apply to that bank's questions only. ``lemmas:`` in the thesaurus fixes words
the lemmatizer leaves alone ("bigger" -> "big"); ``antonyms:`` pairs groups of opposite meaning
(increase/decrease, exact/approximate, memory-bound/compute-bound), so that a key point's claim with
one of them turned around is recognised as its reversal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from inferview.practice import textnorm

THESAURUS_PATH = Path(__file__).with_name("thesaurus.yaml")


@dataclass(frozen=True)
class Group:
    """One group of interchangeable terms."""

    name: str
    """What patterns call it (``@name``)."""
    terms: tuple[str, ...]
    """Its terms as written."""


def term_key(term: str, lemmas: Mapping[str, str]) -> tuple[str, ...]:
    """The content lemmas that spell ``term`` (negators kept: "no calibration")."""
    doc = textnorm.read(term, lemmas)
    return tuple(t.lemma for t in doc.tokens if not t.stop or t.negator)


@dataclass
class Lexicon:
    """Groups compiled for tagging: term spellings -> group names."""

    groups: dict[str, Group] = field(default_factory=dict)
    lemmas: dict[str, str] = field(default_factory=dict)
    entries: dict[tuple[str, ...], set[str]] = field(default_factory=dict)
    """Spelling (content lemmas) -> names of the groups it belongs to."""
    longest: int = 1
    antonyms: dict[str, str] = field(default_factory=dict)
    """Group name -> the group that means its opposite (both ways)."""
    problems: list[str] = field(default_factory=list)
    """Terms that spell nothing, or that two groups share (for ``lint``)."""

    def add(self, name: str, terms: Sequence[str]) -> None:
        """Add a group (a group of the same name gains the terms)."""
        old = self.groups.get(name)
        self.groups[name] = Group(name, (*(old.terms if old else ()), *terms))
        for term in terms:
            key = term_key(term, self.lemmas)
            if not key:
                self.problems.append(f"group {name!r}: term {term!r} has no words the matcher can see")
                continue
            if len(key) == 1 and len(term.split()) > 1 and not any(c.isdigit() for c in term):
                self.problems.append(f"group {name!r}: term {term!r} reads as the single word "
                                     f"{key[0]!r} (its other words are small words), so every "
                                     f"{key[0]!r} would mean this group")
            owners = self.entries.setdefault(key, set())
            others = owners - {name}
            if others:
                self.problems.append(f"group {name!r}: term {term!r} is also in group "
                                     f"{sorted(others)[0]!r}")
            owners.add(name)
            self.longest = max(self.longest, len(key))

    def extended(self, groups: Mapping[str, Sequence[str]]) -> Lexicon:
        """A copy with more groups (a bank's own ``synonyms``)."""
        if not groups:
            return self
        out = Lexicon(dict(self.groups), dict(self.lemmas),
                      {k: set(v) for k, v in self.entries.items()}, self.longest, dict(self.antonyms),
                      list(self.problems))
        for name, terms in groups.items():
            out.add(name, terms)
        return out

    def tag(self, lemmas: Sequence[str]) -> list[list[tuple[str, int]]]:
        """For each position of a content-lemma sequence: (key, length) pairs that start there —
        the lemma itself (length 1) and every group whose term spells the words from there."""
        out: list[list[tuple[str, int]]] = []
        n = len(lemmas)
        for i in range(n):
            keys = [(lemmas[i], 1)]
            for length in range(1, min(self.longest, n - i) + 1):
                for g in self.entries.get(tuple(lemmas[i:i + length]), ()):
                    keys.append(("@" + g, length))
            out.append(keys)
        return out

    def units(self, lemmas: Sequence[str]) -> list[tuple[str, int]]:
        """A pattern's words as units: the longest group term at each point, else the lemma."""
        out = []
        i = 0
        while i < len(lemmas):
            for length in range(min(self.longest, len(lemmas) - i), 0, -1):
                owners = self.entries.get(tuple(lemmas[i:i + length]))
                if owners:
                    out.append(("@" + sorted(owners)[0], length))
                    i += length
                    break
            else:
                out.append((lemmas[i], 1))
                i += 1
        return out


def build(groups: Mapping[str, Iterable[str]], lemmas: Mapping[str, str] | None = None,
          antonyms: Iterable[Sequence[str]] = ()) -> Lexicon:
    """A lexicon from ``{name: [terms]}``, lemma overrides and pairs of opposite groups."""
    lex = Lexicon(lemmas=dict(lemmas or {}))
    for name, terms in groups.items():
        lex.add(name, list(terms))
    for pair in antonyms:
        if len(pair) != 2 or any(g not in lex.groups for g in pair):
            lex.problems.append(f"antonyms {list(pair)!r}: a pair of two defined groups is needed")
            continue
        a, b = pair
        lex.antonyms[a], lex.antonyms[b] = b, a
    return lex


@lru_cache(maxsize=1)
def shared() -> Lexicon:
    """The shared thesaurus (``thesaurus.yaml``)."""
    data = yaml.safe_load(THESAURUS_PATH.read_text(encoding="utf-8")) or {}
    return build(data.get("groups") or {}, data.get("lemmas") or {}, data.get("antonyms") or ())

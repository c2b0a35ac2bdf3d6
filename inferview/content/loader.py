"""Find, parse and validate content: built-in and user question banks and challenges.

Banks are ``*.yaml`` files in ``inferview/questions/`` and ``<data folder>/questions/``; challenges
are folders with a ``challenge.yaml`` in ``inferview/challenges/`` and ``<data folder>/challenges/``.
A malformed file never stops the rest from loading: every problem becomes a :class:`ContentError`
naming the file, the line and the field, and the item it concerns is skipped. Questions are
validated one by one, so a single bad question does not take its whole bank down.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError

from inferview import paths
from inferview.content.models import SLUG, Bank, ChallengeSpec, Misconception, Question, Topic

_QUESTION = TypeAdapter(Question)


class UnknownChallenge(KeyError):
    """No challenge with that id or folder; ``str()`` is the message for the user."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown challenge"


@dataclass(frozen=True)
class ContentError:
    """One problem in one content file."""

    path: Path
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


@dataclass
class LoadedBank:
    """A bank that loaded (possibly with some questions skipped)."""

    bank: Bank
    path: Path
    builtin: bool


@dataclass
class LoadedChallenge:
    """A challenge folder whose ``challenge.yaml`` validated."""

    spec: ChallengeSpec
    folder: Path
    builtin: bool

    @property
    def id(self) -> str:
        return self.spec.id

    def statement_text(self) -> str:
        """The statement (Markdown)."""
        return (self.folder / self.spec.statement).read_text(encoding="utf-8")

    def starter_text(self) -> str:
        """The starter file's source."""
        return (self.folder / self.spec.starter).read_text(encoding="utf-8")

    def solution_files(self, kind: str = "correct") -> list[Path]:
        """``solutions/correct/*.py`` (or ``wrong``), sorted."""
        return sorted((self.folder / "solutions" / kind).glob("*.py"))


@dataclass
class Library:
    """Everything that loaded, and everything that did not."""

    topics: dict[str, Topic] = field(default_factory=dict)
    banks: list[LoadedBank] = field(default_factory=list)
    questions: dict[str, Question] = field(default_factory=dict)
    question_bank: dict[str, str] = field(default_factory=dict)
    """Question id -> id of the bank it came from."""
    question_path: dict[str, Path] = field(default_factory=dict)
    """Question id -> the file it came from."""
    challenges: dict[str, LoadedChallenge] = field(default_factory=dict)
    errors: list[ContentError] = field(default_factory=list)
    catalogues: dict[str, list[Misconception]] = field(default_factory=dict)
    """Topic -> the common wrong claims of that topic (every bank's ``errors``)."""
    synonyms: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """Bank id -> that bank's own thesaurus groups."""

    def questions_for(self, topic: str) -> list[Question]:
        """The questions of one topic, in bank order."""
        return [q for q in self.questions.values() if q.topic == topic]

    def topic_title(self, topic: str) -> str:
        """Display title of a topic (its id if undefined)."""
        t = self.topics.get(topic)
        return t.title if t else topic

    def challenges_in_order(self) -> list[LoadedChallenge]:
        """Challenges as a learning path: easy before hard, and within a level in topic order
        (the KV cache before attention variants, flash attention, speculative decoding...)."""
        topics = {tid: i for i, tid in enumerate(self.topics)}
        rank = {"easy": 0, "medium": 1, "hard": 2}
        return sorted(self.challenges.values(),
                      key=lambda ch: (rank.get(ch.spec.difficulty, 1),
                                      topics.get(ch.spec.topic, len(topics)), ch.spec.title))


# ------------------------------------------------------------------------------------ YAML


_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: ~6x faster


class _LineLoader(_BaseLoader):
    """A safe loader that remembers the line of every mapping and sequence item."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> dict:
    mapping = yaml.SafeLoader.construct_mapping(loader, node, deep=True)
    lines = {}
    for key_node, value_node in node.value:
        lines[loader.construct_object(key_node, deep=True)] = value_node.start_mark.line + 1
    return _LineDict(mapping, lines, node.start_mark.line + 1)


class _LineDict(dict):
    """A dict that knows the line of each of its keys' values, and its own."""

    def __init__(self, data: dict, lines: dict, line: int) -> None:
        super().__init__(data)
        self.lines = lines
        self.line = line


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _plain(obj: Any) -> Any:
    """Strip the line bookkeeping (pydantic is happy either way; this keeps dumps clean)."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def _line_of(data: Any, loc: tuple) -> int | None:
    """The line of the deepest node along ``loc`` that we can find."""
    line = getattr(data, "line", None)
    node = data
    for part in loc:
        if isinstance(node, _LineDict) and part in node:
            line = node.lines.get(part, line)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            line = getattr(node, "line", line)
        else:
            break
    return line


def _field(prefix: str, loc: tuple) -> str:
    parts = [prefix] if prefix else []
    for p in loc:
        if isinstance(p, int):
            parts[-1:] = [f"{parts[-1]}[{p}]"] if parts else [f"[{p}]"]
        elif p in ("open", "choice", "numeric"):
            continue  # discriminated-union tag pydantic adds to the location
        else:
            parts.append(str(p))
    return ".".join(parts) or "(top level)"


def _validation_errors(path: Path, data: Any, exc: ValidationError, prefix: str = "",
                       base: tuple = ()) -> list[ContentError]:
    out = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        clean = tuple(p for p in loc if p not in ("open", "choice", "numeric"))
        out.append(ContentError(path, _line_of(data, base + clean), _field(prefix, clean), err["msg"]))
    return out


def read_yaml(path: Path) -> tuple[Any, list[ContentError]]:
    """Parse a YAML file keeping line numbers; syntax errors become ContentErrors."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, [ContentError(path, None, None, f"cannot read file: {exc}")]
    try:
        return yaml.load(text, Loader=_LineLoader), []  # noqa: S506 - _LineLoader is a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        return None, [ContentError(path, mark.line + 1 if mark else None, None, f"YAML syntax error: {problem}")]


# ------------------------------------------------------------------------------------ banks


def load_bank_file(path: Path) -> tuple[Bank | None, list[ContentError]]:
    """Load one bank; bad questions are skipped and reported, the rest load."""
    data, errors = read_yaml(path)
    if errors:
        return None, errors
    if not isinstance(data, dict):
        return None, [ContentError(path, 1, None, "a bank must be a mapping with 'bank', 'title' and 'questions'")]
    raw_questions = data.get("questions") or []
    if not isinstance(raw_questions, list):
        return None, [ContentError(path, _line_of(data, ("questions",)), "questions", "must be a list")]
    header = {k: v for k, v in data.items() if k != "questions"}
    try:
        bank = Bank.model_validate({**_plain(header), "questions": []})
    except ValidationError as exc:
        return None, _validation_errors(path, data, exc)
    good: list[Question] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_questions):
        try:
            q = _QUESTION.validate_python(_plain(raw))
        except ValidationError as exc:
            qid = raw.get("id") if isinstance(raw, dict) else None
            prefix = f"questions[{i}]" + (f" ({qid})" if qid else "")
            errors += _validation_errors(path, raw, exc, prefix=prefix)
            continue
        if q.id in seen:
            errors.append(ContentError(path, getattr(raw, "line", None), f"questions[{i}].id",
                                       f"duplicate question id {q.id!r} in this bank"))
            continue
        seen.add(q.id)
        good.append(q)
    return bank.model_copy(update={"questions": good}), errors


def _bank_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*.yaml") if not p.name.startswith("."))


# ------------------------------------------------------------------------------------ challenges


def load_challenge_folder(folder: Path, builtin: bool = False) -> tuple[LoadedChallenge | None, list[ContentError]]:
    """Load one challenge folder (its ``challenge.yaml``) and check its files exist."""
    path = folder / "challenge.yaml"
    data, errors = read_yaml(path)
    if errors:
        return None, errors
    if not isinstance(data, dict):
        return None, [ContentError(path, 1, None, "challenge.yaml must be a mapping")]
    try:
        spec = ChallengeSpec.model_validate(_plain(data))
    except ValidationError as exc:
        return None, _validation_errors(path, data, exc)
    if spec.id != folder.name:
        errors.append(ContentError(path, _line_of(data, ("id",)), "id",
                                   f"id {spec.id!r} must equal the folder name {folder.name!r}"))
    for key in ("statement", "starter", "checks"):
        name = getattr(spec, key)
        if not (folder / name).is_file():
            errors.append(ContentError(path, _line_of(data, (key,)), key, f"file {name!r} not found in {folder}"))
    if errors:
        return None, errors
    return LoadedChallenge(spec, folder, builtin), []


def _challenge_folders(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p.parent for p in root.glob("*/challenge.yaml"))


# ------------------------------------------------------------------------------------ library


def load_library(include_user: bool = True, *, extra_question_dirs: list[Path] | None = None,
                 extra_challenge_dirs: list[Path] | None = None) -> Library:
    """Load all built-in content, and the user's own unless ``include_user`` is false."""
    lib = Library()
    qdirs = [(paths.builtin_questions_dir(), True)]
    cdirs = [(paths.builtin_challenges_dir(), True)]
    if include_user:
        qdirs.append((paths.user_questions_dir(), False))
        cdirs.append((paths.user_challenges_dir(), False))
    qdirs += [(d, False) for d in extra_question_dirs or []]
    cdirs += [(d, False) for d in extra_challenge_dirs or []]

    for folder, builtin in qdirs:
        for path in _bank_files(folder):
            bank, errors = load_bank_file(path)
            lib.errors += errors
            if bank is None:
                continue
            same = next((b for b in lib.banks if b.bank.bank == bank.bank), None)
            if same is not None:
                lib.errors.append(ContentError(path, 1, "bank",
                                               f"bank id {bank.bank!r} is also used by {same.path}"))
            for t in bank.topics:
                lib.topics.setdefault(t.id, t)
            for topic, errs in bank.errors.items():
                lib.catalogues.setdefault(topic, []).extend(errs)
            if bank.synonyms:
                lib.synonyms[bank.bank] = bank.synonyms
            kept = []
            for q in bank.questions:
                if q.id in lib.questions:
                    lib.errors.append(ContentError(
                        path, None, f"question {q.id}",
                        f"id already used in bank {lib.question_bank[q.id]!r}; this one was skipped"))
                    continue
                lib.questions[q.id] = q
                lib.question_bank[q.id] = bank.bank
                lib.question_path[q.id] = path
                kept.append(q)
            lib.banks.append(LoadedBank(bank.model_copy(update={"questions": kept}), path, builtin))

    for root, builtin in cdirs:
        for folder in _challenge_folders(root):
            ch, errors = load_challenge_folder(folder, builtin)
            lib.errors += errors
            if ch is None:
                continue
            if ch.id in lib.challenges:
                lib.errors.append(ContentError(folder / "challenge.yaml", None, "id",
                                               f"challenge {ch.id!r} already exists; this one was skipped"))
                continue
            lib.challenges[ch.id] = ch
    return lib


def cross_reference_errors(lib: Library) -> list[ContentError]:
    """Problems between files: unknown topics, follow-ups and linked questions that do not exist."""
    errors: list[ContentError] = []
    import difflib

    for qid, q in lib.questions.items():
        path = lib.question_path.get(qid, Path("?"))
        if q.topic not in lib.topics:
            close = difflib.get_close_matches(q.topic, sorted(lib.topics), n=1)
            hint = f"did you mean {close[0]!r}? or " if close else ""
            errors.append(ContentError(path, None, f"question {qid}.topic",
                                       f"unknown topic {q.topic!r} ({hint}define it under 'topics:' "
                                       "in a bank)"))
        for f in q.follow_ups:
            if f not in lib.questions:
                errors.append(ContentError(path, None, f"question {qid}.follow_ups", f"no question with id {f!r}"))
        for i, kp in enumerate(getattr(q, "key_points", ())):
            if kp.probe is not None and (kp.probe not in lib.questions or kp.probe == qid):
                errors.append(ContentError(path, None, f"question {qid}.key_points[{i}].probe",
                                           f"no other question with id {kp.probe!r}"))
    for _cid, ch in lib.challenges.items():
        path = ch.folder / "challenge.yaml"
        if ch.spec.topic not in lib.topics:
            errors.append(ContentError(path, None, "topic", f"unknown topic {ch.spec.topic!r}"))
        for qid in ch.spec.questions:
            if qid not in lib.questions:
                errors.append(ContentError(path, None, "questions", f"no question with id {qid!r}"))
    return errors


def find_challenge(id_or_folder: str, library: Library | None = None) -> LoadedChallenge:
    """A challenge by id, or by the path of its folder (user content outside the data folder).

    Raises :class:`UnknownChallenge` (a ``KeyError``) whose ``str()`` lists the known ids."""
    candidate = Path(id_or_folder).expanduser()
    if (candidate / "challenge.yaml").is_file():
        ch, errors = load_challenge_folder(candidate.resolve())
        if ch is None:
            raise UnknownChallenge("; ".join(str(e) for e in errors))
        return ch
    if library is None and re.fullmatch(SLUG, id_or_folder):
        # one challenge by id: read its folder, not the whole library
        for root, builtin in ((paths.builtin_challenges_dir(), True), (paths.user_challenges_dir(), False)):
            folder = root / id_or_folder
            if (folder / "challenge.yaml").is_file():
                ch, errors = load_challenge_folder(folder, builtin)
                if ch is None:
                    raise UnknownChallenge(f"challenge {id_or_folder!r} is invalid: {errors[0]}")
                return ch
    lib = library or load_library()
    if id_or_folder in lib.challenges:
        return lib.challenges[id_or_folder]
    broken = [e for e in lib.errors if e.path.parent.name == id_or_folder]
    if broken:
        raise UnknownChallenge(f"challenge {id_or_folder!r} is invalid: {broken[0]}")
    if candidate.is_dir():
        raise UnknownChallenge(f"{id_or_folder} is a folder but not a challenge (no challenge.yaml "
                               "in it)")
    raise UnknownChallenge(unknown_challenge_message(id_or_folder, lib.challenges))


def unknown_challenge_message(name: str, known_ids: Iterable[str]) -> str:
    """``unknown challenge 'kv-cach'; did you mean 'kv-cache'? (known: ...)``."""
    import difflib

    known = sorted(known_ids)
    by_lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    hint = f"; did you mean {by_lower[close[0]]!r}?" if close else ""
    return f"unknown challenge {name!r}{hint} (known: {', '.join(known) or 'none'})"

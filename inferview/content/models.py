"""Typed schemas for the content: question banks (``questions/*.yaml``) and challenges
(``challenges/<id>/challenge.yaml``).

Content is data, the engine is code: every field is documented here, the JSON Schemas in
``inferview/content/schema/`` are generated from these models (``inferview lint --write-schema``),
and the loaders validate every file against them. Built-in and user content use the same models.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

SLUG = r"^[a-z0-9][a-z0-9\-]*[a-z0-9]$"
"""Ids and topics are lower-case slugs: ``kv-cache``, ``flash-attention-online-softmax``."""

Difficulty = Literal["easy", "medium", "hard"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)


# --------------------------------------------------------------------------------------------
# Question banks
# --------------------------------------------------------------------------------------------


class KeyPoint(_Model):
    """Something a strong answer must contain: one claim."""

    point: str = Field(min_length=3)
    """The claim as shown to the user after grading, e.g. "the cache grows linearly with sequence
    length"."""
    match: list[str] = Field(min_length=1, validation_alias=AliasChoices("match", "phrases"))
    """Patterns that detect the claim (any one is enough): the words that carry it, matched on
    lemmas within one sentence, in any order, with the thesaurus's synonyms, numbers read as
    figures and polarity respected ("cache grows linear sequence length", "not change output
    distribution", "~47B total"). The rules are in ``inferview.practice.patterns``; ``phrases`` is
    the old name of this field."""
    main: bool = False
    """The point the question is really after: an answer without it does not pass, whatever else
    it says (where a question asks for a choice, the point that rewards the choice)."""
    reversible: bool = True
    """Whether an answer that states this claim's opposite (negated) is flagged as an error; false
    for claims whose negation is also true in another context."""
    probe: str | None = None
    """The id of the question an interviewer asks next when an answer misses this point (a mock
    interview follows up with it); without it the mock picks a question on the missed concept."""


class Misconception(_Model):
    """A wrong claim an interviewer listens for."""

    claim: str = Field(min_length=3)
    """The wrong claim, e.g. "flash attention approximates attention"."""
    match: list[str] = Field(min_length=1, validation_alias=AliasChoices("match", "phrases"))
    """Patterns that detect the claim (any one is enough), as for key points; a match in a question,
    under negation, or after "if", "a common mistake is"... is not a claim the answer makes."""
    correction: str = Field(min_length=3)
    """One sentence saying why it is wrong, shown when the claim is flagged."""


class ChoiceOption(_Model):
    """One option of a ``choice`` question."""

    text: str = Field(min_length=1)
    """The option as shown (Markdown)."""
    correct: bool = False
    """Whether choosing this option is right."""
    why: str = ""
    """Explanation shown after grading: why this option is right or wrong."""


class _QuestionBase(_Model):
    id: str = Field(pattern=SLUG)
    """Unique id across all banks, e.g. ``kv-why-cache``."""
    topic: str = Field(pattern=SLUG)
    """Topic slug; built-in topics are listed in ``questions/topics.yaml``."""
    difficulty: Difficulty = "medium"
    """How hard an interviewer would consider the question."""
    prompt: str = Field(min_length=5)
    """The question as the interviewer asks it (Markdown). For ``numeric`` questions a template with
    ``{placeholders}`` filled from ``params`` and the model preset (``{model}``)."""
    answer: str = Field(min_length=5)
    """The model answer (Markdown). For ``numeric`` questions a template that may use ``{value}``
    (the computed answer, formatted with its unit) and any parameter."""
    source: str = Field(min_length=3)
    """Where the content comes from: a seed section ("seed: Inference interview guide — The KV
    Cache") or a paper ("Leviathan et al. 2023, Fast Inference from Transformers via Speculative
    Decoding")."""
    follow_ups: list[str] = []
    """Ids of the questions an interviewer would ask next."""
    tags: list[str] = []
    """Free-form tags; ``seed-worded`` marks a question worded in a seed document."""


class AnswerExamples(_Model):
    """Sample answers that pin down how an open question is graded (checked by lint and tests)."""

    good: list[str] = []
    """Correct answers in other words than the model answer, as strong candidates give them: each
    must be graded correct (score of at least 0.7, no misconception flagged)."""
    bad: list[str] = []
    """Answers that state a misconception in natural words: each must flag at least one."""
    vague: list[str] = []
    """Answers that name the topic's terms without the reasoning a key point asks for: each must
    stay below the pass score (a rubric that passes one rewards keyword lists)."""


class OpenQuestion(_QuestionBase):
    """Free-text question graded by key points and misconceptions."""

    kind: Literal["open"] = "open"
    """Question kind."""
    key_points: list[KeyPoint] = Field(min_length=1)
    """What a strong answer must contain."""
    misconceptions: list[Misconception] = []
    """Wrong statements to flag."""
    examples: AnswerExamples = AnswerExamples()
    """Sample good and bad answers: regression tests for the phrases."""


class ChoiceQuestion(_QuestionBase):
    """Multiple-choice question: one or several options are correct."""

    kind: Literal["choice"] = "choice"
    """Question kind."""
    options: list[ChoiceOption] = Field(min_length=2)
    """The options, in the order shown unless ``shuffle`` is true."""
    shuffle: bool = True
    """Whether options are shown in a random order."""

    @model_validator(mode="after")
    def _one_correct(self) -> ChoiceQuestion:
        if not any(o.correct for o in self.options):
            raise ValueError("a choice question needs at least one correct option")
        return self

    @property
    def multiple(self) -> bool:
        """More than one option is correct (the user must select all of them)."""
        return sum(o.correct for o in self.options) > 1


NumericUnit = Literal[
    "bytes", "bytes/token", "params", "flops", "flops/token", "flop/byte", "tokens", "ratio",
    "count", "seconds",
]


class NumericQuestion(_QuestionBase):
    """A numeric drill: a template over model presets whose answer is computed, never typed."""

    kind: Literal["numeric"] = "numeric"
    """Question kind."""
    quantity: str = Field(pattern=r"^[a-z_][a-z0-9_]*$")
    """Name of the reference formula that computes the answer, from
    ``inferview.reference.formulas.QUANTITIES`` (e.g. ``kv_cache_bytes``)."""
    unit: NumericUnit
    """Unit of the computed answer; the user may answer in any compatible unit ("40 GiB")."""
    params: dict[str, list[int | float | str]] = {}
    """Values each template parameter ranges over; ``model`` ranges over preset names. A rendered
    drill picks one value per parameter."""
    tolerance: float = Field(default=0.05, gt=0, lt=1)
    """Relative tolerance accepted, e.g. 0.05 for 5 %."""


Question = Annotated[OpenQuestion | ChoiceQuestion | NumericQuestion, Field(discriminator="kind")]


class Topic(_Model):
    """A topic that questions and challenges belong to."""

    id: str = Field(pattern=SLUG)
    """Topic slug, e.g. ``kv-cache``."""
    title: str
    """Display title, e.g. "The KV cache"."""
    summary: str = ""
    """One or two sentences shown on the Home screen."""
    group: str = ""
    """The "group by what they change" bucket: recompute less, store less, activate less, use fewer
    bits, have fewer weights, move less memory, ..."""


class Bank(_Model):
    """A question bank: one YAML file holding questions (and optionally topic definitions)."""

    bank: str = Field(pattern=SLUG)
    """Bank id, usually the file name without ``.yaml``."""
    title: str
    """Display title."""
    description: str = ""
    """What the bank covers."""
    topics: list[Topic] = []
    """Topics this bank defines (user banks may add their own)."""
    errors: dict[str, list[Misconception]] = {}
    """Catalogues of common wrong claims by topic: each applies to every open question of that
    topic, beside the question's own ``misconceptions``."""
    synonyms: dict[str, list[str]] = {}
    """Thesaurus groups of this bank's own (name -> terms), used for its questions and catalogues
    besides the shared thesaurus."""
    questions: list[Question] = []
    """The questions."""

    @field_validator("questions")
    @classmethod
    def _unique_ids(cls, qs: list) -> list:
        seen: set[str] = set()
        for q in qs:
            if q.id in seen:
                raise ValueError(f"duplicate question id {q.id!r} in this bank")
            seen.add(q.id)
        return qs


# --------------------------------------------------------------------------------------------
# Challenges
# --------------------------------------------------------------------------------------------


class EntryPoint(_Model):
    """A name the submission must define."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The Python name, e.g. ``KVCache``."""
    kind: Literal["function", "class"] = "function"
    """Whether the name is a function or a class."""
    signature: str = ""
    """The signature as shown to the user, e.g. ``(q, k, v, causal=False, sm_scale=None)``; the
    grader checks the parameter names listed here (for a class: of ``__init__``)."""
    methods: list[str] = []
    """For a class: the methods it must have, e.g. ``[update, reset]``."""


class ForbiddenApi(_Model):
    """An API the submission may not use."""

    pattern: str
    """Dotted name or attribute, e.g. ``torch.nn.functional.scaled_dot_product_attention``,
    ``torch.matmul``, ``@`` (the matrix-product operator) or ``softmax`` (any attribute of that
    name)."""
    reason: str = ""
    """Shown with the ``forbidden`` verdict."""
    runtime: bool = True
    """Also guard it while the submission's functions run (not only by static scan)."""


class Hint(_Model):
    """One step of the hints ladder."""

    text: str
    """The hint (Markdown), from a nudge to a near-solution."""


class ChallengeSpec(_Model):
    """``challenge.yaml``: everything about a challenge except its code."""

    id: str = Field(pattern=SLUG)
    """Challenge id, equal to its folder name, e.g. ``kv-cache``."""
    title: str
    """Display title."""
    topic: str = Field(pattern=SLUG)
    """Topic slug (see ``questions/topics.yaml``)."""
    difficulty: Difficulty = "medium"
    """How hard the challenge is."""
    time_budget_min: int = Field(default=30, ge=1, le=240)
    """Minutes a candidate would get for it in an interview (used to fit mock interviews)."""
    time_limit_s: float = Field(default=60, gt=0, le=1800)
    """Wall-clock limit for one grading run on CPU; the worker's whole process group is killed at it."""
    memory_limit_mb: int = Field(default=3072, ge=256)
    """Resident-memory limit for the worker."""
    statement: str = "statement.md"
    """File (in the challenge folder) holding the statement in Markdown, in an interviewer's voice."""
    starter: str = "starter.py"
    """File copied into the workspace by ``inferview start``."""
    checks: str = "checks.py"
    """Python module with the property checks (runs in the trusted supervisor)."""
    entry_points: list[EntryPoint] = Field(min_length=1)
    """Names the submission must define."""
    forbidden: list[ForbiddenApi] = []
    """APIs the submission may not use."""
    requires_triton: bool = False
    """The challenge needs a Triton kernel (on CPU graded with ``TRITON_INTERPRET=1``)."""
    device: Literal["cpu", "any", "cuda"] = "any"
    """Where it can be graded: ``any`` uses CUDA when present and CPU otherwise."""
    hints: list[Hint] = Field(min_length=3)
    """The hints ladder, revealed one at a time."""
    questions: list[str] = []
    """Ids of linked questions, scheduled for review when a check fails."""
    tags: list[str] = []
    """Free-form tags."""

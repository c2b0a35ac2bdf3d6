"""Planning a mock interview: an interviewer's story, sized to the time available.

Interviewers ask inference questions as a connected story rather than isolated trivia (seed:
"LLM Inference Interview Questions — Why Inference Gets Its Own Interview Category"): start from
"why is generation slow?", land on sequential decoding, then walk each fix — the KV cache, its memory
cost (estimate it), GQA/MLA, quantization, flash attention, speculative decoding — and round off with
the other levers and the "group by what they change" framing. A plan follows that order, takes the
follow-up chains the banks define, puts a numeric estimate where an interviewer would ask for one,
and fits one coding challenge into the time left. Plans are deterministic for a given seed.
"""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from inferview.content.loader import Library
from inferview.content.models import ChoiceQuestion, NumericQuestion, OpenQuestion

STORY: tuple[str, ...] = (
    "serving", "kv-cache", "attention-variants", "quantization", "flash-attention",
    "speculative-decoding", "moe", "pruning", "distillation", "framing",
)
"""Topics in the order an interviewer walks them."""

BUDGET_S = {"open": 240, "choice": 90, "numeric": 180}
"""Time allotted to a question of each kind, in seconds."""

NUMERIC_AFTER = {"kv-cache": "kv_cache_bytes", "attention-variants": "kv_cache_bytes", "moe": "moe_active_params",
                 "speculative-decoding": "spec_expected_tokens", "serving": "decode_arithmetic_intensity"}
"""Where an interviewer asks for an estimate, and which quantity."""

CHALLENGE_SHARE = 0.7
"""A coding challenge is planned only when its whole time budget fits in this share of the session
(a 30-minute mock fits a 20-minute challenge; a 15-minute one is questions only)."""

CORE_TOPICS = 6
"""The first topics of the story: where the conversation spends most of a short interview."""

_OPENER = re.compile(r"why is generation slow|generation (is )?slow|one token at a time", re.I)


@dataclass
class PlanItem:
    """One step of a mock interview."""

    kind: str
    """``question`` or ``challenge``."""
    ref: str
    """Question id or challenge id."""
    topic: str
    """Topic of the item."""
    budget_s: int
    """Time an interviewer would give it."""
    seed: int = 0
    """Seed for rendering a numeric drill (which preset and parameters)."""
    follow_up_of: str | None = None
    """The question this one follows up, if any."""
    probes: str = ""
    """The key point a previous answer missed that this question probes (an adaptive follow-up)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Plan:
    """The items of a session, in order."""

    items: list[PlanItem] = field(default_factory=list)
    note: str = ""
    """What the plan left out and why (a session too short for a coding item), for the user."""

    @property
    def total_budget_s(self) -> int:
        return sum(i.budget_s for i in self.items)


def _story_order(focus: str | None) -> list[str]:
    order = list(STORY)
    if focus and focus in order:
        # The focus topic comes right after the opening question, and again later for a second pass.
        order.remove(focus)
        order.insert(0, focus)
    return order


def _is_seed(q: Any) -> bool:
    return "seed-worded" in q.tags


def _opener(lib: Library, rng: random.Random) -> OpenQuestion | None:
    candidates = [q for q in lib.questions.values()
                  if isinstance(q, OpenQuestion) and q.topic in ("serving", "kv-cache") and _OPENER.search(q.prompt)]
    candidates.sort(key=lambda q: (q.topic != "serving", not _is_seed(q), q.id))
    return candidates[0] if candidates else None


def _pick_challenge(lib: Library, total_s: int, focus: str | None, rng: random.Random):
    challenges = [c for c in lib.challenges.values() if c.spec.device != "cuda"]
    if not challenges:
        return None
    cap = total_s * CHALLENGE_SHARE
    pool = [c for c in challenges if c.spec.time_budget_min * 60 <= cap]
    if not pool:
        return None
    if focus:
        focused = [c for c in pool if c.spec.topic == focus]
        pool = focused or pool
    # Prefer a challenge on the core of the story (cache, attention, precision, speculation), so
    # the code follows from what was just discussed; vary it from session to session.
    core = [c for c in pool if c.spec.topic in STORY[:CORE_TOPICS]]
    return rng.choice(sorted(core or pool, key=lambda c: c.id))


def _cover(lib: Library, topic: str, spare: float, add: Any, follow: Any, used: set[str],
           rng: random.Random) -> None:
    """Ask about one topic: its seed question, then an estimate and a follow-up while ``spare``
    seconds (time not needed by the topics still to come) allow; a quick choice question when
    there is no time for an open one."""
    qs = [q for q in lib.questions.values() if q.topic == topic and q.id not in used]
    opens = [q for q in qs if isinstance(q, OpenQuestion)]
    seeds = sorted([q for q in opens if _is_seed(q)] or opens, key=lambda q: q.id)
    choices = sorted((q for q in qs if isinstance(q, ChoiceQuestion)), key=lambda q: q.id)
    primary = rng.choice(seeds) if seeds else None
    if primary is None or not add(primary):
        if choices:
            add(rng.choice(choices))
        return
    quantity = NUMERIC_AFTER.get(topic)
    drills = sorted((q for q in lib.questions.values() if isinstance(q, NumericQuestion)
                     and quantity and q.quantity == quantity and q.id not in used), key=lambda q: q.id)
    if drills and spare >= BUDGET_S["numeric"] and add(rng.choice(drills)):
        spare -= BUDGET_S["numeric"]
    if spare >= BUDGET_S["open"]:
        follow(primary)


def no_coding_note(lib: Library, total_s: int) -> str:
    """Why a session of ``total_s`` seconds has no coding item."""
    budgets = [c.spec.time_budget_min for c in lib.challenges.values() if c.spec.device != "cuda"]
    if not budgets:
        return "No coding item: no challenge runs on this machine."
    need = min(budgets) / CHALLENGE_SHARE
    return (f"No coding item: the shortest challenge takes {min(budgets)} minutes, which needs a "
            f"session of at least {need:.0f} minutes. This one is questions only.")


def build_plan(lib: Library, minutes: float, focus: str | None = None, seed: int = 0,
               with_challenge: bool = True) -> Plan:
    """A story-ordered plan that fits ``minutes``: questions, follow-ups, estimates, one challenge."""
    rng = random.Random(seed)
    total = int(minutes * 60)
    plan = Plan()
    used: set[str] = set()

    challenge = _pick_challenge(lib, total, focus, rng) if with_challenge else None
    challenge_s = 0
    if challenge is not None:
        challenge_s = challenge.spec.time_budget_min * 60
    elif with_challenge:
        plan.note = no_coding_note(lib, total)
    left = total - challenge_s

    def add(q: Any, follow_up_of: str | None = None) -> bool:
        nonlocal left
        cost = BUDGET_S[q.kind]
        if q.id in used or cost > left + 30:
            return False
        used.add(q.id)
        plan.items.append(PlanItem("question", q.id, q.topic, cost, rng.randrange(2**31), follow_up_of))
        left -= cost
        return True

    def follow(q: Any) -> None:
        """Take one step down the follow-up chain, as an interviewer would."""
        for fid in q.follow_ups:
            nxt = lib.questions.get(fid)
            if nxt is not None and nxt.id not in used and not isinstance(nxt, NumericQuestion):
                if add(nxt, follow_up_of=q.id):
                    return

    opener = _opener(lib, rng)
    if opener is not None:
        add(opener)

    order = _story_order(focus)
    first = [t for t in order if opener is None or t != opener.topic or t == focus]
    # The first pass walks the story; how deep it goes into each topic depends on the time per topic,
    # so a short interview still reaches speculative decoding instead of stopping at the KV cache.
    core = first[:CORE_TOPICS]
    open_s = BUDGET_S["open"]
    if opener is not None and focus is None and left - open_s >= len(core) * open_s:
        follow(opener)
    for n, topic in enumerate(core):
        # Time beyond one question for every topic still to come: spent on estimates and follow-ups.
        spare = left - (len(core) - n) * open_s + (open_s if topic == focus else 0)
        _cover(lib, topic, spare, add, follow, used, rng)
    passes = ([[focus]] if focus else []) + [first[CORE_TOPICS:], order]
    for topics in passes:
        for topic in topics:
            if left < min(BUDGET_S.values()):
                break
            _cover(lib, topic, left, add, follow, used, rng)

    if challenge is not None:
        item = PlanItem("challenge", challenge.id, challenge.spec.topic, challenge_s, 0)
        # The coding exercise comes after the topic it belongs to has been discussed.
        items = plan.items
        first = next((i for i, it in enumerate(items) if it.topic == challenge.spec.topic), None)
        if first is None:
            pos = min(len(items), max(3, len(items) // 2))
        else:
            pos = first + 1
            while pos < len(items) and (items[pos].topic == challenge.spec.topic or items[pos].follow_up_of):
                pos += 1
        plan.items.insert(pos, item)
    return plan

"""Check bodies shared by the attention challenges (``gqa-attention``, ``tiled-attention``,
``flash-attention``): one implementation of each property, driven by an :class:`AttentionEntry`
that says how the challenge calls its entry point and builds its inputs.

A challenge keeps its own ``@check`` (the name, hint and strategy the user sees) and delegates the
body::

    ENTRY = AttentionEntry("gqa_attention", inputs=_inputs)

    @check("masked keys get no weight, however large their scores", hint="...")
    @given(case=gqa_cases(causal=True, decode=True))
    def masked_keys_huge_scores(ctx: Ctx, case) -> None:
        attention_checks.masked_keys_huge_scores(ctx, ENTRY, case)

A *case* is a dict with at least ``seq_q``, ``seq_k``, ``head_dim``, ``causal`` and ``seed``; the
challenge's ``inputs(ctx, case)`` turns it into ``(q, k, v)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from hypothesis import note
from inferview.graders import strategies as gs
from inferview.graders.api import Ctx, expect_attention_close

STALE_SEED_STEP = 7919
"""How far the second call of :func:`no_stale_results` moves the seed (a prime: new values)."""


@dataclass(frozen=True)
class AttentionEntry:
    """How one challenge calls ``name(q, k, v, causal=..., [sm_scale=...], **kwargs(case))``.

    ``inputs(ctx, case) -> (q, k, v)`` builds the tensors of a case; ``kwargs(case)`` adds the
    challenge's own keyword arguments (``tiled-attention``'s ``block_size``); ``after_call(ctx)``
    runs right after each call (``flash-attention`` checks there that the kernel did the work).
    """

    name: str
    inputs: Callable[[Ctx, dict], tuple[torch.Tensor, torch.Tensor, torch.Tensor]]
    kwargs: Callable[[dict], dict[str, Any]] = field(default=lambda case: {})
    after_call: Callable[[Ctx], None] | None = None


def call(ctx: Ctx, entry: AttentionEntry, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
         case: dict, *, sm_scale: float | None = None) -> Any:
    """Call the entry point once (``sm_scale`` is passed only when given) and return its result."""
    kwargs = {"causal": case["causal"], **entry.kwargs(case)}
    if sm_scale is not None:
        kwargs["sm_scale"] = sm_scale
    got = ctx.sub.call(entry.name, q, k, v, **kwargs)
    if entry.after_call is not None:
        entry.after_call(ctx)
    return got


def run(ctx: Ctx, entry: AttentionEntry, case: dict, *, sm_scale: float | None = None,
        tensors: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None) -> None:
    """Call the entry point on the case (or on ``tensors``) and apply the attention rule."""
    q, k, v = entry.inputs(ctx, case) if tensors is None else tensors
    got = call(ctx, entry, q, k, v, case, sm_scale=sm_scale)
    expect_attention_close(got, q, k, v, causal=case["causal"], sm_scale=sm_scale,
                           what=f"{entry.name} output")


def masked_keys_huge_scores(ctx: Ctx, entry: AttentionEntry, case: dict) -> None:
    """Causal, with the keys hidden from query 0 scoring above 1e4: they must get no weight.

    At least one key is hidden (``seq_k > seq_q``), and ``head_dim`` becomes 4 or 16 so that the
    scale is a power of two and the huge scores are exact in any summation order (see
    :func:`inferview.graders.strategies.hidden_keys_with_huge_scores`).
    """
    case = dict(case, causal=True, seq_k=max(case["seq_k"], case["seq_q"] + 1),
                head_dim=4 if case["head_dim"] < 16 else 16)
    q, k, v, text = gs.hidden_keys_with_huge_scores(*entry.inputs(ctx, case))
    note(f"seq_q = {case['seq_q']}, seq_k = {case['seq_k']}, head_dim = {case['head_dim']}; {text}")
    run(ctx, entry, case, tensors=(q, k, v))


def no_stale_results(ctx: Ctx, entry: AttentionEntry, case: dict) -> None:
    """Two calls with the same shapes and different values must both be right (no caching)."""
    run(ctx, entry, case)
    again = dict(case, seed=case["seed"] + STALE_SEED_STEP)
    note(f"then the same shapes with seed={again['seed']}")
    run(ctx, entry, again)


def custom_scale(ctx: Ctx, entry: AttentionEntry, case: dict, sm_scale: float) -> None:
    """An explicit ``sm_scale`` (``0.0`` included) is used as is."""
    note(f"sm_scale={sm_scale}")
    run(ctx, entry, case, sm_scale=sm_scale)

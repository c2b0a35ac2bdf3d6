"""Checks for ``tree-verify``: the tree attention mask, the position ids and greedy acceptance.

Ground truth: :mod:`inferview.reference.tree_verify` (Medusa's tree attention and its greedy
verification, restated in the statement). Every check is exact: masks, positions and tokens are
integers, and the logits are built on a grid of multiples of 1/8 no larger than 16 in magnitude,
exact in float16 and bfloat16 alike, so the argmax (and every tie) is the same in each dtype.
One check leaves the grid on purpose: float32 logits whose winner leads by 2^-10, which
rounding to float16 or bfloat16 turns into a tie.

Trees are drawn as parent lists (which Hypothesis shrinks towards chains and stars) with a seed
for the tokens and the target's choices; the counterexample shows the parents, tokens and greedy
tokens, so a failure reads as a small tree.
"""

from __future__ import annotations

import random

import torch
from hypothesis import example, given
from hypothesis import strategies as st
from inferview.graders import strategies as gs
from inferview.graders.api import Ctx, check, expect, expect_equal, expect_raises
from inferview.reference import tree_verify as ref

VOCAB = 32
"""Token ids 0..31: enough for distinct siblings in any drawn tree (a node has at most 23 children)."""


@st.composite
def parent_lists(draw: st.DrawFn, *, max_nodes: int = 24) -> list[int]:
    """A tree in topological order: chains, stars, shallow-random or deep-random."""
    n = draw(st.integers(1, max_nodes))
    kind = draw(st.sampled_from(["random", "chain", "star", "deep"]))
    parents = [-1]
    for i in range(1, n):
        if kind == "chain":
            parents.append(i - 1)
        elif kind == "star":
            parents.append(0)
        elif kind == "deep":
            parents.append(draw(st.integers(max(0, i - 2), i - 1)))
        else:
            parents.append(draw(st.integers(0, i - 1)))
    return parents


def _children(parents: list[int]) -> list[list[int]]:
    kids: list[list[int]] = [[] for _ in parents]
    for i, p in enumerate(parents[1:], start=1):
        kids[p].append(i)
    return kids


def _tokens(parents: list[int], seed: int) -> list[int]:
    """Tokens with distinct siblings."""
    rng = random.Random(seed)
    tokens = [rng.randrange(VOCAB)] + [0] * (len(parents) - 1)
    for kids in _children(parents):
        for c, t in zip(kids, rng.sample(range(VOCAB), len(kids)), strict=True):
            tokens[c] = t
    return tokens


def _greedy(parents: list[int], tokens: list[int], seed: int, match: float) -> list[int]:
    """The target's choice at every node: with probability ``match`` the token of one of its
    children (so that path goes on), otherwise a token none of its children has."""
    rng = random.Random(seed + 1)
    out = []
    for kids in _children(parents):
        child_tokens = {tokens[c] for c in kids}
        if kids and rng.random() < match:
            out.append(tokens[rng.choice(kids)])
        else:
            out.append(rng.choice([t for t in range(VOCAB) if t not in child_tokens]))
    return out


def _logits(greedy: list[int], seed: int, dtype: torch.dtype, device: str, *,
            ties: bool = False) -> torch.Tensor:
    """``(N, VOCAB)`` logits on the 1/8 grid whose argmax is ``greedy``; with ``ties`` a token
    with a higher id shares the largest value in every row that has one (the lower id must win)."""
    n = len(greedy)
    x = torch.round(gs.tensor((n, VOCAB), seed, scale=2.0).clamp(-8, 8) * 8) / 8
    for i, g in enumerate(greedy):
        top = float(x[i].max()) + 0.5
        x[i, g] = top
        if ties and g < VOCAB - 1:
            x[i, random.Random(seed + i).randrange(g + 1, VOCAB)] = top
    return x.to(dtype).to(device)


def _case(parents: list[int], tokens: list[int], greedy: list[int], ctx: Ctx) -> None:
    ctx.note(f"parents = {parents}")
    ctx.note(f"tokens  = {tokens}")
    ctx.note(f"greedy  = {greedy}  (argmax of each row of target_logits)")


def _verify(ctx: Ctx, parents: list[int], tokens: list[int], logits: torch.Tensor) -> None:
    """Call verify_tree and compare both results with the reference."""
    p = torch.tensor(parents, dtype=torch.int64, device=ctx.device)
    t = torch.tensor(tokens, dtype=torch.int64, device=ctx.device)
    out = ctx.sub.call("verify_tree", p, t, logits)
    expect(isinstance(out, (tuple, list)) and len(out) == 2,
           f"verify_tree must return (accepted_nodes, emitted), got {type(out).__name__}")
    want_nodes, want_emitted = ref.verify_tree(p.cpu(), t.cpu(), logits.cpu())
    expect_equal(out[0], want_nodes.to(ctx.device), what="accepted_nodes")
    expect_equal(out[1], want_emitted.to(ctx.device), what="emitted")


# ----------------------------------------------------------------------------------------------
# The mask and the positions
# ----------------------------------------------------------------------------------------------


@check("the mask shows each node the prefix, its ancestors and itself, nothing else",
       hint="Row i: True for every prefix column, then for node i and each ancestor (follow "
            "parents up to the root). A lower-triangular (causal) mask over the nodes lets a node "
            "see other branches; the parent alone is not enough either.")
@given(parents=parent_lists(), prefix_len=st.integers(0, 6))
@example(parents=[-1, 0, 0, 1, 2], prefix_len=2)
@example(parents=[-1, 0, 1, 2], prefix_len=0)
def mask_is_ancestors(ctx: Ctx, parents: list[int], prefix_len: int) -> None:
    ctx.note(f"parents = {parents}")
    p = torch.tensor(parents, dtype=torch.int64, device=ctx.device)
    got = ctx.sub.call("tree_attention_mask", p, prefix_len)
    want = ref.tree_attention_mask(p.cpu(), prefix_len)
    expect_equal(got, want.to(ctx.device), what="mask")


@check("position ids are prefix_len + depth",
       hint="A node's position is where it would sit if its path were decoded token by token: "
            "prefix_len + depth, the root at prefix_len. The node's index is not its position.")
@given(parents=parent_lists(), prefix_len=st.integers(0, 6))
@example(parents=[-1, 0, 0, 1, 1], prefix_len=3)
def positions_are_depths(ctx: Ctx, parents: list[int], prefix_len: int) -> None:
    ctx.note(f"parents = {parents}")
    p = torch.tensor(parents, dtype=torch.int64, device=ctx.device)
    got = ctx.sub.call("tree_position_ids", p, prefix_len)
    want = ref.tree_position_ids(p.cpu(), prefix_len)
    expect_equal(got, want.to(ctx.device), what="positions")


# ----------------------------------------------------------------------------------------------
# Acceptance
# ----------------------------------------------------------------------------------------------


@check("verify_tree accepts the longest path that matches the target's greedy tokens",
       hint="Node i matches when tokens[i] == argmax(target_logits[parents[i]]): the logits at "
            "the parent predict node i's token. Keep the deepest accepted node and the path to it "
            "(root excluded), then append the bonus argmax(target_logits[last]).")
@given(parents=parent_lists(), seed=gs.seeds(), match=st.sampled_from([0.5, 0.8, 1.0]),
       dtype=gs.dtypes())
@example(parents=[-1, 0, 0, 1], seed=0, match=1.0, dtype=torch.float32)
def accepts_longest_path(ctx: Ctx, parents: list[int], seed: int, match: float,
                         dtype: torch.dtype) -> None:
    tokens = _tokens(parents, seed)
    greedy = _greedy(parents, tokens, seed, match)
    _case(parents, tokens, greedy, ctx)
    _verify(ctx, parents, tokens, _logits(greedy, seed, dtype, ctx.device))


@check("a node is accepted only when its whole path is",
       hint="accepted[i] = accepted[parents[i]] and tokens[i] == greedy[parents[i]]: a node that "
            "matches its parent's prediction is worthless once an ancestor was rejected.")
@given(parents=parent_lists(), seed=gs.seeds(), pick=st.integers(0, 23))
@example(parents=[-1, 0, 1, 2], seed=0, pick=0)
def whole_path_must_match(ctx: Ctx, parents: list[int], seed: int, pick: int) -> None:
    tokens = _tokens(parents, seed)
    greedy = _greedy(parents, tokens, seed, 1.0)  # every node's prediction continues some child ...
    inner = [i for i, kids in enumerate(_children(parents)) if kids]
    if inner:  # ... except one, whose whole subtree must then be rejected
        brk = inner[pick % len(inner)]
        kids = {tokens[c] for c in _children(parents)[brk]}
        greedy[brk] = next(t for t in range(VOCAB) if t not in kids)
        ctx.note(f"node {brk}'s prediction matches none of its children")
    _case(parents, tokens, greedy, ctx)
    _verify(ctx, parents, tokens, _logits(greedy, seed, torch.float32, ctx.device))


@check("verify_tree emits the bonus token after the last accepted node",
       hint="emitted = tokens[accepted_nodes] + [greedy[last]], with last = 0 (the root) when no "
            "child matches: even a step with nothing accepted emits one token.")
@given(parents=parent_lists(max_nodes=8), seed=gs.seeds(), match=st.sampled_from([0.0, 1.0]))
@example(parents=[-1], seed=0, match=0.0)
@example(parents=[-1, 0, 1], seed=0, match=1.0)
@example(parents=[-1, 0, 0], seed=1, match=0.0)
def bonus_token(ctx: Ctx, parents: list[int], seed: int, match: float) -> None:
    tokens = _tokens(parents, seed)
    greedy = _greedy(parents, tokens, seed, match)  # nothing accepted, or a leaf reached
    _case(parents, tokens, greedy, ctx)
    _verify(ctx, parents, tokens, _logits(greedy, seed, torch.float32, ctx.device))


@check("greedy ties go to the lowest token id",
       hint="torch.argmax returns the first of several equal maxima, the lowest token id; "
            "flipping the vocabulary or keeping the last maximum picks the highest.")
@given(parents=parent_lists(max_nodes=12), seed=gs.seeds(), dtype=gs.dtypes())
@example(parents=[-1, 0, 1], seed=0, dtype=torch.float32)
def argmax_ties(ctx: Ctx, parents: list[int], seed: int, dtype: torch.dtype) -> None:
    tokens = _tokens(parents, seed)
    greedy = _greedy(parents, tokens, seed, 0.9)
    _case(parents, tokens, greedy, ctx)
    ctx.note("every row's largest logit is shared by a token with a higher id")
    _verify(ctx, parents, tokens, _logits(greedy, seed, dtype, ctx.device, ties=True))


NEAR_TOP = 12.0
"""The runner-up logit of :func:`near_ties`, above every grid value of :func:`_logits` (at most 8)."""
NEAR_GAP = 2.0 ** -10
"""The winner's margin over the runner-up: exact in float32, below half a float16 ulp at 12
(2^-8) and a bfloat16 one (2^-5), so rounding the logits to either makes a tie that the lower id,
the runner-up, then wins."""


@check("float32 logits are compared in float32, not rounded to half precision", max_examples=10,
       hint="Take the argmax of the logits as given: a float32 row whose two largest values differ "
            "by less than float16's or bfloat16's precision ties once rounded to it, and the "
            "lower token id then wins the tie in place of the true maximum.")
@given(parents=parent_lists(max_nodes=12), seed=gs.seeds())
@example(parents=[-1, 0, 1], seed=0)
def float32_margins(ctx: Ctx, parents: list[int], seed: int) -> None:
    tokens = _tokens(parents, seed)
    greedy = _greedy(parents, tokens, seed, 1.0)
    _case(parents, tokens, greedy, ctx)
    ctx.note(f"every row's largest logit beats a lower token id's by only 2^-10 (at {NEAR_TOP})")
    x = _logits(greedy, seed, torch.float32, "cpu")
    rng = random.Random(seed + 2)
    for i, g in enumerate(greedy):
        if g > 0:
            x[i, rng.randrange(g)] = NEAR_TOP
            x[i, g] = NEAR_TOP + NEAR_GAP
    _verify(ctx, parents, tokens, x.to(ctx.device))


@st.composite
def twin_branches(draw: st.DrawFn) -> tuple[list[int], list[int], list[int]]:
    """A stem from the root, then two sibling branches starting with the same token, both
    matching the target for ``len_a`` and ``len_b`` more nodes; the nodes of the two branches are
    numbered in an interleaved order drawn too, so either branch may hold the lower indices."""
    stem = draw(st.integers(0, 2))
    len_a, len_b = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    order = draw(st.permutations(["a"] * len_a + ["b"] * len_b))
    parents, tokens, greedy = [-1], [1], []
    for _ in range(stem):
        parents.append(len(parents) - 1)
        tokens.append(2 + len(tokens))
    twin_parent = len(parents) - 1
    heads = []
    for _ in range(2):  # the twins: same parent, same token
        heads.append(len(parents))
        parents.append(twin_parent)
        tokens.append(20)
    tip = {"a": heads[0], "b": heads[1]}
    depth_tok = {"a": 21, "b": 21}
    for branch in order:
        parents.append(tip[branch])
        tokens.append(depth_tok[branch])
        tip[branch] = len(parents) - 1
        depth_tok[branch] += 1
    kids = _children(parents)
    for i in range(len(parents)):
        # each node predicts its (only, or twin) child's token; leaves predict token 0
        greedy.append(tokens[kids[i][0]] if kids[i] else 0)
    return parents, tokens, greedy


@check("two siblings with the same token: the deepest accepted node wins, then the lowest index",
       hint="Mark every accepted node first, then pick the deepest, the lowest index among "
            "equally deep ones. Walking down through the first matching child misses a deeper "
            "twin branch; a depth-first search that keeps the first path found can end on a "
            "higher index.")
@given(case=twin_branches())
@example(case=([-1, 0, 0, 1, 2], [1, 20, 20, 21, 21], [20, 21, 21, 0, 0]))
@example(case=([-1, 0, 0, 2], [1, 20, 20, 21], [20, 0, 21, 0]))
@example(case=([-1, 0, 0, 2, 1], [1, 20, 20, 21, 21], [20, 21, 21, 0, 0]))
def twin_siblings(ctx: Ctx, case: tuple[list[int], list[int], list[int]]) -> None:
    parents, tokens, greedy = case
    _case(parents, tokens, greedy, ctx)
    _verify(ctx, parents, tokens, _logits(greedy, 0, torch.float32, ctx.device))


# ----------------------------------------------------------------------------------------------
# Malformed trees
# ----------------------------------------------------------------------------------------------

MALFORMED = {
    "root is not -1": [0, 0, 1],
    "a node is its own parent": [-1, 0, 2],
    "a parent after its child": [-1, 2, 0],
    "a second root": [-1, 0, -1],
}


@check("malformed parents raise ValueError",
       hint="Validate first: parents is 1-D and non-empty, parents[0] == -1 and "
            "0 <= parents[i] < i for every i >= 1.")
def malformed(ctx: Ctx) -> None:
    cases = {k: torch.tensor(v, dtype=torch.int64, device=ctx.device) for k, v in MALFORMED.items()}
    cases["empty"] = torch.zeros(0, dtype=torch.int64, device=ctx.device)
    cases["2-D"] = torch.tensor([[-1, 0]], dtype=torch.int64, device=ctx.device)
    for what, p in cases.items():
        tokens = torch.zeros(p.shape[-1] if p.dim() else 1, dtype=torch.int64, device=ctx.device)
        logits = torch.zeros(tokens.shape[0], 4, device=ctx.device)
        for name, args in (("tree_attention_mask", (p, 1)), ("tree_position_ids", (p, 1)),
                           ("verify_tree", (p, tokens, logits))):
            with expect_raises(ctx, "ValueError", what=f"{name} with parents {p.tolist()} ({what})"):
                ctx.sub.call(name, *args)

"""Tests for ``inferview.reference.tree_verify`` against brute force over every path, and the
property that gives the mask its meaning: attention with the tree mask and the depth positions
scores every node exactly as decoding its own path one sequence at a time would."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from inferview.reference import tree_verify as tv


@st.composite
def trees(draw, max_nodes: int = 12) -> list[int]:
    n = draw(st.integers(1, max_nodes))
    return [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]


def _path(parents: list[int], node: int) -> list[int]:
    out = []
    while node != -1:
        out.append(node)
        node = parents[node]
    return out[::-1]


def test_statement_example() -> None:
    parents = torch.tensor([-1, 0, 0, 1])
    tokens = torch.tensor([5, 7, 8, 9])
    logits = torch.zeros(4, 10)
    for i, g in enumerate([7, 9, 0, 4]):
        logits[i, g] = 1.0
    nodes, emitted = tv.verify_tree(parents, tokens, logits)
    assert nodes.tolist() == [1, 3] and emitted.tolist() == [7, 9, 4]
    assert nodes.dtype == emitted.dtype == torch.int64


def test_mask_and_positions_of_a_small_tree() -> None:
    parents = torch.tensor([-1, 0, 0, 1])
    mask = tv.tree_attention_mask(parents, 2)
    assert mask.dtype == torch.bool and mask.shape == (4, 6)
    assert mask.int().tolist() == [[1, 1, 1, 0, 0, 0],
                                   [1, 1, 1, 1, 0, 0],
                                   [1, 1, 1, 0, 1, 0],
                                   [1, 1, 1, 1, 0, 1]]
    assert tv.tree_position_ids(parents, 2).tolist() == [2, 3, 3, 4]


@given(parents=trees(), prefix=st.integers(0, 4))
def test_mask_rows_are_paths(parents: list[int], prefix: int) -> None:
    mask = tv.tree_attention_mask(torch.tensor(parents), prefix)
    pos = tv.tree_position_ids(torch.tensor(parents), prefix)
    for i in range(len(parents)):
        want = [True] * prefix + [j in _path(parents, i) for j in range(len(parents))]
        assert mask[i].tolist() == want
        assert int(pos[i]) == prefix + len(_path(parents, i)) - 1


@given(parents=trees(), seed=st.integers(0, 2**16), vocab=st.integers(2, 4))
def test_verify_matches_brute_force(parents: list[int], seed: int, vocab: int) -> None:
    g = torch.Generator().manual_seed(seed)
    n = len(parents)
    tokens = torch.randint(0, vocab, (n,), generator=g)  # small vocab: duplicates and long paths
    logits = torch.randint(0, 3, (n, vocab), generator=g).float()  # many argmax ties
    greedy = [min(j for j in range(vocab) if logits[i, j] == logits[i].max()) for i in range(n)]
    best = None
    for node in range(n):
        path = _path(parents, node)
        if all(int(tokens[c]) == greedy[p] for p, c in zip(path, path[1:], strict=False)):
            key = (-len(path), node)
            best = key if best is None or key < best else best
    last = best[1]
    want_nodes = _path(parents, last)[1:]
    nodes, emitted = tv.verify_tree(torch.tensor(parents), tokens, logits)
    assert nodes.tolist() == want_nodes
    assert emitted.tolist() == [int(tokens[i]) for i in want_nodes] + [greedy[last]]


@settings(max_examples=20)
@given(parents=trees(max_nodes=8), prefix=st.integers(0, 3), seed=st.integers(0, 2**16))
def test_tree_attention_equals_decoding_each_path(parents: list[int], prefix: int, seed: int) -> None:
    """One attention layer with rotary-free scores plus a learned position table: scoring the tree
    with the mask and the positions gives every node the output it gets at the end of its path
    run as an ordinary causal sequence."""
    g = torch.Generator().manual_seed(seed)
    d, vocab, max_pos = 8, 16, 16
    emb = torch.randn(vocab, d, generator=g, dtype=torch.float64)
    pos_emb = torch.randn(max_pos, d, generator=g, dtype=torch.float64)
    n = len(parents)
    prefix_tokens = torch.randint(0, vocab, (prefix,), generator=g)
    tokens = torch.randint(0, vocab, (n,), generator=g)

    def attend(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        s = (x @ x.T / math.sqrt(d)).masked_fill(~mask, float("-inf"))
        return torch.softmax(s, -1) @ x

    seq = torch.cat([prefix_tokens, tokens])
    pos = torch.cat([torch.arange(prefix), tv.tree_position_ids(torch.tensor(parents), prefix)])
    x = emb[seq] + pos_emb[pos]
    tree_mask = tv.tree_attention_mask(torch.tensor(parents), prefix)
    full = torch.cat([torch.tril(torch.ones(prefix, prefix + n, dtype=torch.bool)), tree_mask])
    out = attend(x, full)[prefix:]
    for i in range(n):
        path = _path(parents, i)
        s = torch.cat([prefix_tokens, tokens[path]])
        xs = emb[s] + pos_emb[torch.arange(len(s))]
        ref = attend(xs, torch.tril(torch.ones(len(s), len(s), dtype=torch.bool)))[-1]
        torch.testing.assert_close(out[i], ref)


@pytest.mark.parametrize("parents", [[], [0], [-1, 1], [-1, 0, -1], [-1, 2, 0]])
def test_malformed_trees_raise(parents: list[int]) -> None:
    p = torch.tensor(parents, dtype=torch.int64)
    with pytest.raises(ValueError):
        tv.tree_attention_mask(p, 0)
    with pytest.raises(ValueError):
        tv.tree_position_ids(p, 0)
    with pytest.raises(ValueError):
        tv.verify_tree(p, torch.zeros(len(parents), dtype=torch.int64), torch.zeros(len(parents), 3))

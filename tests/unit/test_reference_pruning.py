"""Tests for ``inferview.reference.pruning``."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from inferview.reference import pruning as pr


@given(rows=st.integers(1, 6), groups=st.integers(1, 6), seed=st.integers(0, 2**16),
       ties=st.booleans())
def test_2_4_keeps_two_largest_per_group(rows, groups, seed, ties):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(rows, 4 * groups, generator=g)
    if ties:
        w = torch.randint(-2, 3, w.shape, generator=g).float()  # many equal magnitudes
    pw, mask = pr.prune_2_4(w)
    assert mask.dtype == torch.bool and mask.shape == w.shape
    assert bool((mask.reshape(rows, groups, 4).sum(-1) == 2).all())
    assert pr.is_2_4_sparse(mask) and pr.is_2_4_sparse(pw)
    assert torch.equal(pw, torch.where(mask, w, torch.zeros_like(w)))
    for r in range(rows):
        for c in range(groups):
            vals = [abs(float(v)) for v in w[r, 4 * c : 4 * c + 4]]
            want = sorted(range(4), key=lambda j: (-vals[j], j))[:2]  # ties -> lower index
            assert sorted(want) == [j for j in range(4) if bool(mask[r, 4 * c + j])]


def test_2_4_tie_break_and_dimension() -> None:
    w = torch.tensor([[1.0, -1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]])
    _, mask = pr.prune_2_4(w)
    assert mask.tolist() == [[True, True, False, False, True, True, False, False]]
    with pytest.raises(ValueError):
        pr.prune_2_4(torch.zeros(2, 6))
    # groups run along the input (last) dimension, not down the columns
    w = torch.arange(16.0).reshape(4, 4)
    _, mask = pr.prune_2_4(w)
    assert mask[:, 2:].all() and not mask[:, :2].any()


def test_is_2_4_sparse() -> None:
    assert pr.is_2_4_sparse(torch.tensor([[1.0, 0, 0, 2, 0, 0, 0, 0]]))
    assert not pr.is_2_4_sparse(torch.tensor([[1.0, 1, 1, 0]]))
    assert not pr.is_2_4_sparse(torch.tensor([[1.0, 0, 0]]))
    # a group that straddles two groups of 4 is not what counts: [0,1,1,0 | 1,1,0,0] is fine
    assert pr.is_2_4_sparse(torch.tensor([[0.0, 1, 1, 0, 1, 1, 0, 0]]))


@given(rows=st.integers(1, 4), groups=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_compress_roundtrip(rows, groups, seed):
    w = torch.randn(rows, 4 * groups, generator=torch.Generator().manual_seed(seed))
    w[0, :4] = 0.0  # an all-zero group stores explicit zeros
    pw, _ = pr.prune_2_4(w)
    vals, pos = pr.compress_2_4(pw)
    assert vals.shape == pos.shape == (rows, 2 * groups)
    assert int(pos.min()) >= 0 and int(pos.max()) <= 3
    assert torch.equal(pr.decompress_2_4(vals, pos), pw)


@given(n=st.integers(1, 64), sparsity=st.floats(0, 1), seed=st.integers(0, 999))
def test_unstructured_prunes_the_smallest(n, sparsity, seed):
    w = torch.randn(n, generator=torch.Generator().manual_seed(seed)).reshape(1, n)
    pw, keep = pr.prune_unstructured(w, sparsity)
    n_pruned = int(sparsity * n)
    assert int((~keep).sum()) == n_pruned
    if 0 < n_pruned < n:
        assert float(w.abs()[~keep].max()) <= float(w.abs()[keep].min())
    assert pw.shape == w.shape  # same dense shape: same GEMM cost


def test_sparse_bytes() -> None:
    # 4096 x 4096 fp16: half the values (16 MiB) + 2-bit metadata per kept value (2 MiB)
    assert pr.sparse_bytes_2_4(4096, 4096, 2) == 4096 * 4096 + 4096 * 4096 // 8


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_matches_cpu() -> None:
    w = torch.randint(-2, 3, (64, 128), generator=torch.Generator().manual_seed(0)).half()
    pw, mask = pr.prune_2_4(w)
    pwc, maskc = pr.prune_2_4(w.cuda())
    assert maskc.is_cuda and torch.equal(maskc.cpu(), mask) and torch.equal(pwc.cpu(), pw)
    assert pr.is_2_4_sparse(pwc)
    vals, pos = pr.compress_2_4(pwc)
    assert torch.equal(pr.decompress_2_4(vals, pos).cpu(), pw)

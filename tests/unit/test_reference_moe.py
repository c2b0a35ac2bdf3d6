"""Tests for ``inferview.reference.moe`` against naive loops."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from inferview.reference import moe


def _logits(t: int, e: int, seed: int, scale: float = 2.0) -> torch.Tensor:
    return torch.randn(t, e, generator=torch.Generator().manual_seed(seed)) * scale


@given(t=st.integers(1, 8), e=st.integers(2, 8), data=st.data(), seed=st.integers(0, 2**16))
def test_route_renormalised_and_equals_topk_then_softmax(t, e, data, seed):
    k = data.draw(st.integers(1, e))
    x = _logits(t, e, seed)
    w, idx = moe.route(x, k)
    assert w.shape == idx.shape == (t, k) and idx.dtype == torch.int64
    torch.testing.assert_close(w.sum(-1), torch.ones(t))
    w2, idx2 = moe.route_topk_then_softmax(x, k)
    assert torch.equal(idx, idx2)
    torch.testing.assert_close(w, w2)
    # naive: per token, the k largest probabilities, renormalised
    p = torch.softmax(x.double(), -1)
    for i in range(t):
        order = sorted(range(e), key=lambda j: (-float(p[i, j]), j))[:k]
        assert idx[i].tolist() == order
        kept = p[i, order]
        torch.testing.assert_close(w[i].double(), kept / kept.sum())


def test_ties_go_to_the_lower_expert() -> None:
    w, idx = moe.route(torch.tensor([[1.0, 3.0, 3.0, 3.0]]), 2)
    assert idx.tolist() == [[1, 2]]
    torch.testing.assert_close(w, torch.tensor([[0.5, 0.5]]))
    wn, _ = moe.route_no_renorm(torch.zeros(1, 4), 2)
    torch.testing.assert_close(wn, torch.tensor([[0.25, 0.25]]))


def test_expert_capacity_formula() -> None:
    assert moe.expert_capacity(10, 4, 2, 1.0) == 5
    assert moe.expert_capacity(10, 4, 1, 1.25) == math.ceil(12.5 / 4)
    assert moe.expert_capacity(7, 3, 2, 1.0) == 5


@given(t=st.integers(1, 12), e=st.integers(1, 5), k=st.integers(1, 3), cap=st.integers(0, 6),
       seed=st.integers(0, 2**16), priority=st.sampled_from(["token", "slot"]))
def test_apply_capacity_matches_a_queue(t, e, k, cap, seed, priority):
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, e, (t, k), generator=g)
    keep = moe.apply_capacity(idx, e, cap, priority)
    want = torch.zeros(t, k, dtype=torch.bool)
    used = [0] * e
    order = ([(i, s) for i in range(t) for s in range(k)] if priority == "token"
             else [(i, s) for s in range(k) for i in range(t)])
    for i, s in order:
        ex = int(idx[i, s])
        if used[ex] < cap:
            want[i, s] = True
            used[ex] += 1
    assert torch.equal(keep, want)


@given(t_per=st.integers(1, 4), e=st.integers(1, 8), k=st.integers(1, 3))
def test_load_balancing_loss_is_one_when_uniform(t_per, e, k):
    k = min(k, e)
    t = t_per * e
    logits = torch.zeros(t, e)  # P_i = 1/E
    idx = (torch.arange(t * k) % e).reshape(t, k)  # every expert gets t*k/E assignments
    torch.testing.assert_close(moe.load_balancing_loss(logits, idx, e), torch.tensor(1.0))


def test_load_balancing_loss_collapse_and_naive() -> None:
    e, t = 4, 6
    logits = torch.full((t, e), -30.0)
    logits[:, 0] = 30.0
    idx = torch.zeros(t, 1, dtype=torch.long)
    torch.testing.assert_close(moe.load_balancing_loss(logits, idx, e), torch.tensor(float(e)))
    x = _logits(t, e, 1)
    w, idx = moe.route(x, 2)
    p = torch.softmax(x.double(), -1)
    naive = e * sum((idx == i).sum().item() / (t * 2) * p[:, i].mean().item() for i in range(e))
    assert math.isclose(float(moe.load_balancing_loss(x, idx, e)), naive, rel_tol=1e-5)
    # gradient flows through P only
    x.requires_grad_(True)
    moe.load_balancing_loss(x, idx, e).backward()
    assert x.grad is not None and float(x.grad.abs().sum()) > 0


def test_router_z_loss() -> None:
    x = _logits(5, 3, 2)
    want = sum(math.log(sum(math.exp(float(v)) for v in row)) ** 2 for row in x) / 5
    assert math.isclose(float(moe.router_z_loss(x)), want, rel_tol=1e-5)
    assert math.isfinite(float(moe.router_z_loss(torch.full((2, 4), 1e4))))


@pytest.mark.parametrize("cf", [None, 1.0, 0.5])
def test_moe_forward_matches_dense_loop(cf) -> None:
    w = moe.MoEWeights.random(d_model=8, d_ff=16, num_experts=4, seed=0)
    x = torch.randn(10, 8, generator=torch.Generator().manual_seed(1))
    out = moe.moe_forward(x, w, k=2, capacity_factor=cf)
    want = torch.zeros_like(x)
    for i in range(10):
        for s in range(2):
            if bool(out.keep[i, s]):
                want[i] += out.weights[i, s] * moe.expert_forward(x[i : i + 1], w, int(out.experts[i, s]))[0]
    torch.testing.assert_close(out.y, want)
    if cf == 0.5:
        cap = moe.expert_capacity(10, 4, 2, 0.5)
        assert int(out.keep.sum()) <= 4 * cap
        assert all(int(((out.experts == e) & out.keep).sum()) <= cap for e in range(4))
    assert out.aux_loss.ndim == 0 and 0.0 < float(out.aux_loss) <= 4.0
    assert out.z_loss.ndim == 0 and math.isfinite(float(out.z_loss))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_matches_cpu() -> None:
    x = torch.round(_logits(64, 8, 0) * 64) / 64
    w, idx = moe.route(x, 2)
    wc, idxc = moe.route(x.cuda(), 2)
    assert torch.equal(idxc.cpu(), idx)
    torch.testing.assert_close(wc.cpu(), w)
    cap = moe.expert_capacity(64, 8, 2, 1.0)
    assert torch.equal(moe.apply_capacity(idx.cuda(), 8, cap).cpu(), moe.apply_capacity(idx, 8, cap))
    torch.testing.assert_close(moe.load_balancing_loss(x.cuda(), idx.cuda(), 8).cpu(),
                               moe.load_balancing_loss(x, idx, 8))
    weights = moe.MoEWeights.random(16, 32, 8, seed=0)
    weights_c = moe.MoEWeights.random(16, 32, 8, seed=0, device="cuda")
    xs = torch.randn(64, 16, generator=torch.Generator().manual_seed(2))
    out, out_c = moe.moe_forward(xs, weights, 2, 1.0), moe.moe_forward(xs.cuda(), weights_c, 2, 1.0)
    torch.testing.assert_close(out_c.y.cpu(), out.y, rtol=1e-4, atol=1e-5)

"""Speculative decoding: the closed-form theory, the verification step against its exact laws, the
decode loop against the target model's sequence law, and the power of the two challenges' checks.

Statistical assertions use fixed seeds and a threshold of 1e-4 on chi-square p-values (the stated
false-failure rate were the seeds random); wrong samplers are required to score below 1e-10.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from hypothesis import given
from hypothesis import strategies as st
from inferview.graders.api import CheckFailed, Ctx
from inferview.graders.stats import chi_square_gof, ks_uniform
from inferview.reference import speculative_theory as th
from inferview.reference.speculative import (
    TinyLM,
    acceptance_rate,
    autoregressive_generate,
    emitted_tokens,
    mixed_pair,
    num_accepted_law,
    outcome_distribution,
    position_distributions,
    sample_categorical,
    sequence_distribution,
    speculative_bench,
    speculative_generate,
    speculative_verify,
)

from inferview.paths import builtin_challenges_dir

ALPHA = 1e-4


def _probs(shape, seed, zero_frac=0.0):
    g = torch.Generator().manual_seed(seed)
    w = torch.rand(shape, generator=g, dtype=torch.float64) + 0.05
    if zero_frac:
        z = torch.rand(shape, generator=g, dtype=torch.float64) < zero_frac
        keep = torch.zeros(shape, dtype=torch.bool).scatter_(-1, w.argmax(-1, keepdim=True), True)
        w = torch.where(z & ~keep, 0.0, w)
    return w / w.sum(-1, keepdim=True)


def _run(q, p, rows, seed, step=speculative_verify):
    """Context-independent q (G, V), p (G+1, V): sample drafts, verify ``rows`` rows."""
    g = torch.Generator().manual_seed(seed)
    gamma, vocab = q.shape
    qb = q.expand(rows, gamma, vocab).contiguous()
    pb = p.expand(rows, gamma + 1, vocab).contiguous()
    x = sample_categorical(qb.reshape(-1, vocab), g).reshape(rows, gamma)
    n, y = step(x, qb, pb, g)
    return x, n, y


# ------------------------------------------------------------------------------------------------
# Theory (Leviathan et al. 2023)
# ------------------------------------------------------------------------------------------------


def test_expected_tokens_hand_values_and_limits():
    assert th.expected_tokens_per_step(0.5, 2) == pytest.approx(1.75)  # 1 + .5 + .25
    assert th.expected_tokens_per_step(0.8, 4) == pytest.approx(3.3616)
    assert th.expected_tokens_per_step(1.0, 5) == 6.0  # every draft accepted, plus the bonus
    assert th.expected_tokens_per_step(0.0, 5) == 1.0  # plain decoding
    assert th.expected_tokens_per_step(0.7, 0) == 1.0
    # continuity at alpha -> 1
    assert th.expected_tokens_per_step(1 - 1e-9, 5) == pytest.approx(6.0, rel=1e-6)


def test_walltime_improvement_theorem_3_8_values():
    assert th.walltime_improvement(0.8, 4, 0.05) == pytest.approx(3.3616 / 1.2)
    assert th.walltime_improvement(0.6, 3, 0.0) == th.expected_tokens_per_step(0.6, 3)
    assert th.walltime_improvement(0.0, 3, 0.1) == pytest.approx(1 / 1.3)  # all drafts wasted
    assert th.walltime_improvement(0.5, 0, 0.3) == 1.0


def test_cost_factor_theorem_3_11():
    # (1 - a)(g c + g + 1) / (1 - a^(g+1))
    a, g, c = 0.7, 3, 0.02
    want = (1 - a) * (g * c + g + 1) / (1 - a ** (g + 1))
    assert th.expected_cost_factor(a, g, c) == pytest.approx(want)
    assert th.expected_cost_factor(1.0, 4, 0.0) == 1.0  # nothing wasted
    assert th.expected_cost_factor(0.0, 4, 0.0) == 5.0  # target runs on 5 positions per token


@given(alpha=st.floats(0, 1), c=st.floats(0, 1))
def test_optimal_gamma_and_corollary_3_9(alpha, c):
    best = th.optimal_gamma(alpha, c, max_gamma=32)
    values = [th.walltime_improvement(alpha, g, c) for g in range(33)]
    assert values[best] >= max(values) * (1 - 1e-9)
    bound = th.best_improvement_lower_bound(alpha, c)
    if alpha > c:
        assert values[best] >= bound * (1 - 1e-12)
        if bound > 1 + 1e-9:  # a gain that is not lost in rounding
            assert best >= 1
        assert th.walltime_improvement(alpha, 1, c) == pytest.approx(bound)
    else:
        assert bound is None
        assert best == 0  # each extra alpha^k <= c, so no gamma beats plain decoding


def test_optimal_gamma_hand_value():
    assert th.optimal_gamma(0.8, 0.05) == 8
    assert th.optimal_gamma(0.9, 0.0, max_gamma=10) == 10  # free drafts: propose as many as allowed


@given(alphas=st.lists(st.floats(0, 1), min_size=0, max_size=6))
def test_num_accepted_distribution_is_a_law_with_product_survival(alphas):
    law = th.num_accepted_distribution(alphas)
    assert len(law) == len(alphas) + 1
    assert math.fsum(law) == pytest.approx(1.0)
    for i in range(len(alphas) + 1):
        assert math.fsum(law[i:]) == pytest.approx(math.prod(alphas[:i]), abs=1e-12)
    mean = math.fsum(k * w for k, w in enumerate(law)) + 1
    assert th.expected_tokens_per_step_positional(alphas) == pytest.approx(mean)
    if alphas and len(set(alphas)) == 1:
        assert mean == pytest.approx(th.expected_tokens_per_step(alphas[0], len(alphas)))


def test_acceptance_rate_is_one_minus_total_variation():
    p, q = [0.5, 0.3, 0.2, 0.0], [0.1, 0.3, 0.3, 0.3]
    assert th.acceptance_rate(p, q) == pytest.approx(0.6)
    assert th.total_variation(p, q) == pytest.approx(0.4)
    assert th.acceptance_rate(p, p) == pytest.approx(1.0)
    t = acceptance_rate(torch.tensor(p), torch.tensor(q))
    assert float(t) == pytest.approx(0.6)


@pytest.mark.parametrize("call", [
    lambda: th.expected_tokens_per_step(1.5, 2),
    lambda: th.expected_tokens_per_step(0.5, -1),
    lambda: th.expected_tokens_per_step(float("nan"), 2),
    lambda: th.walltime_improvement(0.5, 2, -0.1),
    lambda: th.acceptance_rate([0.5, 0.5], [1.0]),
    lambda: th.acceptance_rate([0.5, 0.6], [0.5, 0.5]),
])
def test_theory_rejects_bad_inputs(call):
    with pytest.raises(ValueError):
        call()


# ------------------------------------------------------------------------------------------------
# The verification step against its exact laws
# ------------------------------------------------------------------------------------------------


def test_each_position_emits_exactly_the_target():
    q, p = _probs((3, 7), 1, 0.3), _probs((4, 7), 2, 0.3)
    torch.testing.assert_close(position_distributions(q, p), p)


def test_outcome_law_marginals():
    q, p = _probs((2, 4), 3, 0.25), _probs((3, 4), 4, 0.25)
    law = outcome_distribution(q, p)
    assert math.fsum(law.values()) == pytest.approx(1.0)
    by_n = np.zeros(3)
    for seq, w in law.items():
        by_n[len(seq) - 1] += w
    np.testing.assert_allclose(by_n, num_accepted_law(q, p).numpy(), atol=1e-12)
    for j in range(3):  # the token at j, over outcomes reaching j, follows p_j
        marg = np.zeros(4)
        for seq, w in law.items():
            if len(seq) > j:
                marg[seq[j]] += w
        np.testing.assert_allclose(marg / marg.sum(), p[j].numpy(), atol=1e-12)


def test_verify_matches_the_exact_outcome_law():
    q, p = _probs((2, 3), 5, 0.0), _probs((3, 3), 6, 0.0)
    x, n, y = _run(q, p, 30_000, seed=7)
    law = outcome_distribution(q, p)
    keys = list(law)
    index = {k: i for i, k in enumerate(keys)}
    e = emitted_tokens(x, n, y).tolist()
    counts = np.zeros(len(keys))
    for row in e:
        counts[index[tuple(t for t in row if t >= 0)]] += 1
    assert chi_square_gof(counts, [law[k] for k in keys]).p_value > ALPHA


def test_first_token_and_acceptance_counts_follow_theory():
    p, q = mixed_pair(0.7, 8, torch.Generator().manual_seed(0))
    qg, pg = q.expand(4, 8).clone(), p.expand(5, 8).clone()
    x, n, y = _run(qg, pg, 20_000, seed=11)
    e = emitted_tokens(x, n, y)
    assert chi_square_gof(np.bincount(e[:, 0], minlength=8), p.numpy()).p_value > ALPHA
    law = th.num_accepted_distribution([0.7] * 4)
    assert chi_square_gof(np.bincount(n, minlength=5), law).p_value > ALPHA
    np.testing.assert_allclose(num_accepted_law(qg, pg).numpy(), law, atol=1e-12)


def test_verify_edge_cases_are_exact():
    p = _probs((16, 4, 6), 8, 0.4)
    g = torch.Generator().manual_seed(0)
    x = sample_categorical(p[:, :3].reshape(-1, 6), g).reshape(16, 3)
    n, y = speculative_verify(x, p[:, :3], p, g)  # draft == target
    assert (n == 3).all()
    assert (p[torch.arange(16), 3, y] > 0).all()
    half = torch.arange(6) < 3  # disjoint supports
    pt = torch.where(half, p, 0.0)
    pt = pt / pt.sum(-1, keepdim=True)
    qt = torch.where(half, 0.0, _probs((16, 3, 6), 9))
    qt = qt / qt.sum(-1, keepdim=True)
    x = sample_categorical(qt.reshape(-1, 6), g).reshape(16, 3)
    n, y = speculative_verify(x, qt, pt, g)
    assert (n == 0).all() and (y < 3).all()
    assert n.dtype == y.dtype == torch.int64


@given(seed=st.integers(0, 10_000), gamma=st.integers(1, 4), vocab=st.integers(2, 9))
def test_verify_never_emits_a_zero_probability_token(seed, gamma, vocab):
    q, p = _probs((64, gamma, vocab), seed, 0.5), _probs((64, gamma + 1, vocab), seed + 1, 0.5)
    g = torch.Generator().manual_seed(seed)
    x = sample_categorical(q.reshape(-1, vocab), g).reshape(64, gamma)
    n, y = speculative_verify(x, q, p, g)
    e = emitted_tokens(x, n, y)
    for j in range(gamma + 1):
        rows = (e[:, j] >= 0).nonzero().flatten()
        assert (p[rows, j, e[rows, j]] > 0).all()


def test_verify_is_reproducible_and_uses_only_the_generator():
    q, p = _probs((64, 3, 5), 1), _probs((64, 4, 5), 2)
    x = sample_categorical(q.reshape(-1, 5), torch.Generator().manual_seed(0)).reshape(64, 3)
    a = speculative_verify(x, q, p, torch.Generator().manual_seed(5))
    torch.manual_seed(123)  # the global RNG must not matter
    b = speculative_verify(x, q, p, torch.Generator().manual_seed(5))
    c = speculative_verify(x, q, p, torch.Generator().manual_seed(6))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not (torch.equal(a[0], c[0]) and torch.equal(a[1], c[1]))


# ------------------------------------------------------------------------------------------------
# The decode loop
# ------------------------------------------------------------------------------------------------


def test_speculative_decoding_samples_the_target_models_sequence_law():
    target = TinyLM.random(vocab=6, order=2, seed=0)
    draft = target.perturbed(noise=1.0, seed=1)
    prompt = torch.tensor([[2, 4]]).repeat(6000, 1)
    res = speculative_generate(target, draft, prompt, max_new_tokens=5, gamma=3,
                               generator=torch.Generator().manual_seed(3))
    assert res.tokens.shape == (6000, 7)
    assert torch.equal(res.tokens[:, :2], prompt)
    joint = sequence_distribution(target, [2, 4], 2).reshape(-1)  # first two new tokens
    idx = res.tokens[:, 2] * 6 + res.tokens[:, 3]
    assert chi_square_gof(np.bincount(idx, minlength=36), joint.numpy()).p_value > ALPHA
    last = sequence_distribution(target, [2, 4], 5).sum(dim=(0, 1, 2, 3))  # the 5th new token
    assert chi_square_gof(np.bincount(res.tokens[:, 6], minlength=6), last.numpy()).p_value > ALPHA
    # and the draft model's law is visibly different, so the test has teeth
    wrong = sequence_distribution(draft, [2, 4], 2).reshape(-1)
    assert chi_square_gof(np.bincount(idx, minlength=36), wrong.numpy()).p_value < 1e-10
    assert 1.0 < res.tokens_per_step < 4.0 and 0.0 < res.acceptance < 1.0


def test_decode_loop_with_an_exact_draft_accepts_everything():
    target = TinyLM.random(vocab=8, seed=4)
    prompt = torch.zeros(10, 2, dtype=torch.int64)
    res = speculative_generate(target, target, prompt, max_new_tokens=8, gamma=3,
                               generator=torch.Generator().manual_seed(0))
    assert res.acceptance == 1.0
    assert (res.steps == 2).all()  # 4 tokens per step, 8 tokens
    plain = autoregressive_generate(target, prompt, 8, torch.Generator().manual_seed(0))
    assert plain.shape == res.tokens.shape


def test_decode_loop_acceptance_matches_its_per_step_theory():
    # With a context-free (order-1, constant-prompt) first step, the first step's acceptance of
    # position 0 is beta = sum min(p, q) at the prompt's distribution.
    target = TinyLM.random(vocab=8, order=1, seed=5)
    draft = target.perturbed(0.8, seed=6)
    prompt = torch.full((20_000, 1), 3, dtype=torch.int64)
    res = speculative_generate(target, draft, prompt, max_new_tokens=1, gamma=1,
                               generator=torch.Generator().manual_seed(1))
    pos = torch.zeros(1, 1, dtype=torch.int64)
    beta = float(acceptance_rate(target.probs_at(prompt[:1], pos)[0, 0],
                                 draft.probs_at(prompt[:1], pos)[0, 0]))
    k = int(res.accepted.sum())
    sd = math.sqrt(20_000 * beta * (1 - beta))
    assert abs(k - 20_000 * beta) < 5 * sd


def test_bench_rows_agree_with_eq_1():
    rows = speculative_bench("cpu", alphas=(0.5, 0.9), gammas=(1, 4), batch=4096)
    assert len(rows) == 4
    for r in rows:
        assert {"alpha", "gamma", "tokens_per_step", "tokens_per_step_theory", "walltime_factor",
                "walltime_factor_theory", "verify_ms", "cost_ratio"} <= set(r)
        # tokens/step = 1 + n, n in [0, gamma]; 6 standard deviations of the batch mean
        law = th.num_accepted_distribution([r["alpha"]] * r["gamma"])
        var = sum(k * k * w for k, w in enumerate(law)) - (r["tokens_per_step_theory"] - 1) ** 2
        assert abs(r["tokens_per_step"] - r["tokens_per_step_theory"]) < 6 * math.sqrt(var / 4096)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_verify_on_cuda_matches_theory():
    p, q = mixed_pair(0.8, 16, torch.Generator().manual_seed(0))
    qb = q.cuda().expand(50_000, 3, 16).contiguous()
    pb = p.cuda().expand(50_000, 4, 16).contiguous()
    g = torch.Generator(device="cuda").manual_seed(0)
    x = sample_categorical(qb.reshape(-1, 16), g).reshape(50_000, 3)
    n, y = speculative_verify(x, qb, pb, g)
    assert n.device.type == "cuda"
    law = th.num_accepted_distribution([0.8] * 3)
    assert chi_square_gof(np.bincount(n.cpu(), minlength=4), law).p_value > ALPHA
    e = emitted_tokens(x, n, y).cpu()
    assert chi_square_gof(np.bincount(e[:, 0], minlength=16), p.numpy()).p_value > ALPHA
    assert speculative_bench("cuda", alphas=(0.8,), gammas=(4,))[0]["device"] == "cuda"


# ------------------------------------------------------------------------------------------------
# The challenges' checks: power against every wrong solution, calibration for the correct ones
# ------------------------------------------------------------------------------------------------


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"_spec_{abs(hash(str(path)))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _LocalSub:
    """Calls the solution in this process (the engine's worker is tested elsewhere)."""

    def __init__(self, mod, helpers=None):
        self.mod, self.helpers = mod, helpers

    def has(self, name):
        return hasattr(self.mod, name)

    def call(self, name, *args, **kwargs):
        out = []
        for a in args:
            if type(a).__name__ == "WorkerFunction":
                a = getattr(self.helpers, a.name)
            elif isinstance(a, torch.Tensor):
                a = a.clone()
            out.append(a)
        return getattr(self.mod, name)(*out, **kwargs)


SAMPLING = builtin_challenges_dir() / "speculative-sampling"
VERIFIER = builtin_challenges_dir() / "speculative-verifier"


def _checks_by_name(folder: Path):
    mod = _load(folder / "checks.py")
    fns = [f for f in vars(mod).values() if hasattr(f, "_inferview_check")]
    return mod, {f._inferview_check.name: f for f in fns}


def _expected(folder: Path) -> dict:
    return yaml.safe_load((folder / "solutions" / "expected.yaml").read_text())


@pytest.mark.parametrize("name", sorted(_expected(SAMPLING)))
def test_sampling_wrong_solution_fails_its_targeted_check(name):
    _, checks = _checks_by_name(SAMPLING)
    want = _expected(SAMPLING)[name]
    sub = _LocalSub(_load(SAMPLING / "solutions" / "wrong" / name))
    for seed in (1, 2):
        with pytest.raises(CheckFailed):
            checks[want["check"]](Ctx(sub, "cpu", seed, None, SAMPLING))


@pytest.mark.parametrize("name", ["vectorised.py", "per_row_loop.py"])
def test_sampling_correct_solutions_pass_the_statistical_checks(name):
    _, checks = _checks_by_name(SAMPLING)
    sub = _LocalSub(_load(SAMPLING / "solutions" / "correct" / name))
    for title in ("the first emitted token follows the target distribution",
                  "tokens at later positions follow the target, given the prefix was accepted",
                  "the number of accepted tokens follows the theory",
                  "the same generator state gives the same result"):
        checks[title](Ctx(sub, "cpu", 5, None, SAMPLING))


def test_sampling_statistical_checks_have_overwhelming_power():
    """The p-values of the statistic that targets each distribution bug, over two seeds, are far
    below the checks' 1e-7 threshold (mod.ALPHA)."""
    mod, _ = _checks_by_name(SAMPLING)
    q, p = mod.STAT_Q, mod.STAT_P
    gamma = q.shape[0]
    for name in ("residual_not_normalised.py", "bonus_wrong_position.py", "shared_uniform.py",
                 "deterministic_acceptance.py", "inverted_ratio.py", "resample_from_target.py",
                 "accepted_count_not_prefix.py", "first_rejection_argmax.py", "residual_abs.py"):
        step = _load(SAMPLING / "solutions" / "wrong" / name).speculative_verify
        for seed in (1, 2):
            x, n, y = _run(q, p, mod.STAT_ROWS, seed, step=step)
            e = emitted_tokens(x, n, y)
            pos = [mod.position_pvalue(e, j, p[j])[0] * (gamma + 1) for j in range(gamma + 1)]
            acc = chi_square_gof(np.bincount(n, minlength=gamma + 1),
                                 num_accepted_law(q, p).numpy()).p_value
            assert mod.ALPHA >= 1e-7 and min(min(pos), acc) < 1e-10, (name, seed, pos, acc)


def test_verifier_helpers_correct_step_is_the_reference():
    helpers = _load(VERIFIER / "worker_helpers.py")
    q, p = _probs((64, 3, 6), 1, 0.3), _probs((64, 4, 6), 2, 0.3)
    x = sample_categorical(q.reshape(-1, 6), torch.Generator().manual_seed(0)).reshape(64, 3)
    a = helpers.correct_step(x, q, p, torch.Generator().manual_seed(9))
    b = speculative_verify(x, q, p, torch.Generator().manual_seed(9))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


@pytest.mark.parametrize("verifier", ["per_position_chisquare.py", "conditional_gtest.py"])
def test_reference_verifiers_detect_every_wrong_step(verifier):
    mod, _ = _checks_by_name(VERIFIER)
    helpers = _load(VERIFIER / "worker_helpers.py")
    fn = _load(VERIFIER / "solutions" / "correct" / verifier).preserves_distribution
    case = mod.MAIN
    for step in helpers.WRONG_STEPS:
        for seed in (1, 2, 3):
            pv = fn(getattr(helpers, step), case["target"], case["draft"], mod.NUM_SAMPLES,
                    torch.Generator().manual_seed(seed))
            assert pv < 1e-12, (verifier, step, seed, pv)


@pytest.mark.parametrize("verifier", ["per_position_chisquare.py", "conditional_gtest.py"])
def test_reference_verifiers_are_calibrated_under_the_correct_step(verifier):
    mod, _ = _checks_by_name(VERIFIER)
    helpers = _load(VERIFIER / "worker_helpers.py")
    fn = _load(VERIFIER / "solutions" / "correct" / verifier).preserves_distribution
    pvals = []
    for i in range(30):
        case = list(mod.CASES.values())[i % 3]
        pvals.append(fn(helpers.correct_step, case["target"], case["draft"], mod.NUM_SAMPLES,
                        torch.Generator().manual_seed(1000 + i)))
    assert all(0.0 <= v <= 1.0 for v in pvals)
    assert sum(v < 0.01 for v in pvals) <= 2
    if verifier == "conditional_gtest.py":  # a single omnibus statistic: p-values ~ U(0, 1)
        assert ks_uniform(pvals) > 1e-3


# reads_step_identity.py is caught only because the worker hands steps over anonymously; the
# solutions meta-test grades it through the real worker.
@pytest.mark.parametrize("name", sorted(n for n in _expected(VERIFIER) if n != "reads_step_identity.py"))
def test_verifier_wrong_solution_fails_its_targeted_check(name):
    _, checks = _checks_by_name(VERIFIER)
    want = _expected(VERIFIER)[name]
    sub = _LocalSub(_load(VERIFIER / "solutions" / "wrong" / name),
                    _load(VERIFIER / "worker_helpers.py"))
    with pytest.raises(CheckFailed):
        checks[want["check"]](Ctx(sub, "cpu", 1, None, VERIFIER))

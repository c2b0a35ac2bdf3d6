"""Checks for ``sampling``: the kept set exactly, the probabilities closely, the draws statistically.

Ground truth: :mod:`inferview.reference.sampler` (Hugging Face transformers' warper order:
temperature, top-k, top-p, min-p; ties as the statement fixes them), computed in float64.

Exactness. Which tokens are kept is compared exactly. That is fair to a float32 solution because the
grader keeps ``top_p`` and ``min_p`` at least ``MARGIN`` away from every threshold they are compared
with (:func:`inferview.reference.sampler.decision_margins`; a parameter too close is moved, never the
logits): a candidate's float32 softmax and cumulative sums are off by at most about
``vocab * eps32 = 16 * 1.2e-7 = 2e-6``, fifty times less than ``MARGIN``. Exact ties come from logits
on a 1/4 grid: equal logits give bit-equal probabilities in any precision, so the tie rules are
tested on true ties, never on near-misses.

Probabilities are compared with ``rtol = 1e-4``: the logits are normal with standard deviation 2
(so within +-10 in practice) and the temperature at least 0.5, so the scaled logits satisfy
``|z| <= 20`` and a float32 softmax carries a relative error of about ``|z| * eps32 = 2.4e-6`` from
rounding ``z`` alone, plus a few ulps from renormalising: 1e-4 is forty times that, while a missing
or wrong renormalisation moves a probability by a percent or more. The large-logit check shifts
those logits by +30 or -40 at temperature 0.25, so ``|z| <= 192``: rounding ``z_i`` and ``z_max``
(half an ulp each) moves ``p_i / p_max`` by at most ``192 * eps32 = 2.3e-5`` relative, a quarter of
``rtol`` and of ``MARGIN``.

False-failure rates: the exact checks never fail a correct solution. The statistical check fails a
correct solution with probability at most ``1e-7`` per run (three chi-square tests, each at
``1e-7 / 3``); the reproducibility check's chance of two different generator states giving identical
results on 512 rows of at least two kept tokens each is below ``0.7^512 < 1e-79``.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import torch
from hypothesis import example, given, note
from hypothesis import strategies as st
from inferview.graders import strategies as gs
from inferview.graders.api import CheckFailed, Ctx, check, expect, expect_close, expect_raises
from inferview.graders.stats import chi_square_gof
from inferview.reference import sampler as ref

MARGIN = 1e-4
"""Smallest distance allowed between ``top_p`` (or ``min_p``, relatively) and a threshold."""

RTOL, ATOL = 1e-4, 1e-7
"""Tolerance on the returned probabilities (argued in the module docstring)."""

ALPHA = 1e-7
"""False-failure rate of the statistical check per run."""

STAT_ROWS = 20_000
"""Draws per setting in the statistical check."""

LARGE_T = 0.25
LARGE_OFFSETS = (30.0, -40.0)
"""Temperature and logit shifts of the large-logit check: ``|z| <= (40 + 8) / 0.25 = 192``."""

STAT_LOGITS = [2.0, 1.5, 1.5, 1.0, 0.5, 0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -math.inf]
"""One row of 12 logits with a tie and a masked token, for the statistical check."""

STAT_SETTINGS = [  # (temperature, top_k, top_p, min_p): top-k and top-p; top-p alone; min-p alone
    (0.7, 6, 0.9, 0.05),
    (1.5, 0, 0.8, 0.0),
    (1.0, 0, 1.0, 0.1),
]


# ----------------------------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn, *, max_batch: int = 4, max_vocab: int = 16) -> dict:
    """Logit shape and seed, and sampling parameters (``top_p``/``min_p`` moved off thresholds
    later, by :func:`_safe`)."""
    vocab = draw(st.integers(2, max_vocab))
    return {
        "batch": draw(st.integers(1, max_batch)),
        "vocab": vocab,
        "seed": draw(gs.seeds()),
        "temperature": draw(st.sampled_from([1.0, 0.5, 0.7, 1.3, 2.0])),
        "top_k": draw(st.integers(0, vocab + 2)),
        "top_p": draw(st.sampled_from([1.0]) | st.integers(5, 99).map(lambda n: n / 100)),
        "min_p": draw(st.sampled_from([0.0, 0.02, 0.05, 0.1, 0.2, 0.5])),
    }


def _logits(case: dict, *, masked: float = 0.0) -> torch.Tensor:
    """Logits on a 1/4 grid (ties are exact), normal with standard deviation 2; with ``masked``,
    that share of entries is ``-inf`` (never a whole row)."""
    x = gs.tensor((case["batch"], case["vocab"]), case["seed"], scale=2.0)
    x = torch.round(x * 4) / 4
    if masked:
        g = torch.Generator().manual_seed(case["seed"] + 1)
        drop = torch.rand(x.shape, generator=g) < masked
        drop[:, 0] = False
        x = x.masked_fill(drop, -math.inf)
    return x


def _safe(x: torch.Tensor, t: float, k: int, top_p: float, min_p: float) -> tuple[float, float]:
    """``(top_p, min_p)`` moved, if needed, until both are at least ``MARGIN`` from a threshold."""
    steps = [0.0, 0.0137, -0.0173, 0.0291, -0.0311, 0.0457, -0.0533, 0.0719]
    if top_p < 1:
        for d in steps:
            cand = min(max(top_p + d, 0.02), 0.99)
            if ref.decision_margins(x, t, k, cand, 0.0).top_p >= MARGIN:
                top_p = cand
                break
    if 0 < min_p < 1:
        for d in steps:
            cand = min(max(min_p * (1 + 2 * d), 0.005), 0.95)
            if ref.decision_margins(x, t, k, top_p, cand).min_p >= MARGIN:
                min_p = cand
                break
    return top_p, min_p


def _params(case: dict, x: torch.Tensor) -> dict:
    t, k = case["temperature"], case["top_k"]
    top_p, min_p = _safe(x, t, k, case["top_p"], case["min_p"])
    p = {"temperature": t, "top_k": k, "top_p": top_p, "min_p": min_p}
    note(f"filter_probs(logits, {', '.join(f'{n}={v!r}' for n, v in p.items())})")
    return p


def _fmt(row: torch.Tensor) -> str:
    return "[" + ", ".join(f"{float(v):.4g}" for v in row) + "]"


def _filter(ctx: Ctx, x: torch.Tensor, params: dict) -> torch.Tensor:
    """Call ``filter_probs`` and check its structure; returns the result on the CPU."""
    got = ctx.sub.call("filter_probs", x.to(ctx.device), **params)
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"filter_probs must return a tensor, got {type(got).__name__}")
    expect(tuple(got.shape) == tuple(x.shape),
           f"filter_probs: expected shape {tuple(x.shape)}, got {tuple(got.shape)}")
    expect(got.dtype == torch.float32, f"filter_probs: expected dtype torch.float32, got {got.dtype}")
    expect(got.device.type == torch.device(ctx.device).type,
           f"filter_probs: expected a tensor on {ctx.device}, got one on {got.device.type}")
    return got.cpu()


def _compare(got: torch.Tensor, x: torch.Tensor, params: dict, what: str = "filter_probs") -> None:
    """The kept set exactly, then the probabilities within ``RTOL``/``ATOL``."""
    want = ref.filter_probs_f64(x.cpu(), **params)
    if not bool(torch.isfinite(got).all()):
        r = int((~torch.isfinite(got)).any(-1).nonzero()[0])
        raise CheckFailed(f"{what}: row {r} holds NaN or Inf: {_fmt(got[r])}\n  logits: {_fmt(x[r])}")
    bad = ((got > 0) != (want > 0)).any(-1).nonzero().flatten()
    if bad.numel():
        r = int(bad[0])
        kept_got = (got[r] > 0).nonzero().flatten().tolist()
        kept_want = (want[r] > 0).nonzero().flatten().tolist()
        raise CheckFailed(
            f"{what}: row {r} keeps tokens {kept_got}, expected {kept_want}\n"
            f"  logits:   {_fmt(x[r].float())}\n  got:      {_fmt(got[r])}\n"
            f"  expected: {_fmt(want[r])}")
    expect_close(got, want.float(), what=what, rtol=RTOL, atol=ATOL)


# ----------------------------------------------------------------------------------------------
# filter_probs
# ----------------------------------------------------------------------------------------------


@check("filter_probs returns a (batch, vocab) float32 distribution", max_examples=8,
       hint="Return probabilities, not logits: float32, the logits' shape, each row summing to 1, "
            "exactly 0 on every removed token.")
@given(case=cases())
def structure(ctx: Ctx, case: dict) -> None:
    x = _logits(case)
    got = _filter(ctx, x, _params(case, x))
    sums = got.double().sum(-1)
    bad = ((sums - 1).abs() > 1e-5).nonzero().flatten()
    if bad.numel() or bool((got < 0).any()):
        r = int(bad[0]) if bad.numel() else int((got < 0).any(-1).nonzero()[0])
        raise CheckFailed(f"row {r} is not a distribution (sum {float(sums[r]):.6g}): {_fmt(got[r])}")


@check("filter_probs keeps what temperature, top-k, top-p and min-p keep, in that order",
       hint="Divide by the temperature first; top-p works on the distribution renormalised over "
            "top-k's survivors, and min-p compares with the most probable token's probability "
            "(p_i >= min_p * p_max), not with min_p alone. Renormalise after each step.")
@given(case=cases())
# top-p after top-k: renormalised over the top 3 the 3rd token has 0.91 of mass above it (> 0.9)
@example(case={"batch": 1, "vocab": 5, "seed": 0, "temperature": 1.0, "top_k": 3, "top_p": 0.9,
               "min_p": 0.0, "logits": [3.0, 2.0, 1.0, 0.0, -1.0]})
# temperature before top-p: at T = 0.5 the 3rd token is cut by top_p = 0.9, at T = 1 it is kept
@example(case={"batch": 1, "vocab": 4, "seed": 0, "temperature": 0.5, "top_k": 0, "top_p": 0.9,
               "min_p": 0.0, "logits": [2.0, 1.0, 0.0, -1.0]})
# min-p is relative: p_max = 0.39, so min_p = 0.5 keeps every p >= 0.196 (three tokens)
@example(case={"batch": 1, "vocab": 4, "seed": 0, "temperature": 1.0, "top_k": 0, "top_p": 1.0,
               "min_p": 0.5, "logits": [1.0, 0.75, 0.5, -0.75]})
# min-p after top-p: run first, min_p = 0.3 would leave two tokens and top-p would see them alone
@example(case={"batch": 1, "vocab": 6, "seed": 0, "temperature": 1.0, "top_k": 0, "top_p": 0.8,
               "min_p": 0.3, "logits": [2.0, 1.5, 1.0, 0.5, 0.0, -1.0]})
def documented_order(ctx: Ctx, case: dict) -> None:
    x = torch.tensor([case["logits"]]) if "logits" in case else _logits(case)
    params = _params(case, x)
    _compare(_filter(ctx, x, params), x, params)


def _tie_case(vocab: int, seed: int) -> tuple[torch.Tensor, int]:
    """A row whose values 1..vocab-1 hold a run of equal logits, and the position where it starts."""
    g = torch.Generator().manual_seed(seed)
    run = int(torch.randint(2, max(3, vocab - 1), (1,), generator=g))
    start = int(torch.randint(1, max(2, vocab - run + 1), (1,), generator=g))
    run = min(run, vocab - start)
    x = -torch.arange(vocab, dtype=torch.float32) * 0.5 + 3.0  # descending, distinct
    x[start:start + run] = x[start]
    return x[torch.randperm(vocab, generator=g)].unsqueeze(0), start


@check("top-k keeps every token tied with the k-th largest logit", max_examples=10,
       hint="Keep z >= (the k-th largest z), a threshold on values. torch.topk's indices keep "
            "exactly k tokens and drop arbitrary members of a tie.")
@given(vocab=st.integers(4, 12), seed=gs.seeds())
@example(vocab=5, seed=0)
def top_k_ties(ctx: Ctx, vocab: int, seed: int) -> None:
    x, start = _tie_case(vocab, seed)
    params = {"temperature": 1.0, "top_k": start + 1, "top_p": 1.0, "min_p": 0.0}
    note(f"logits = {x.tolist()}; top_k = {start + 1} lands on the first member of a tie")
    _compare(_filter(ctx, x, params), x, params)


@check("top-p keeps every token tied with the last one it keeps", max_examples=10,
       hint="Token i stays when the mass of the tokens strictly more probable than i is below "
            "top_p. A running cumsum over a sorted order gives tied tokens different sums: use "
            "the sum at the first member of each run of equal values.")
@given(vocab=st.integers(4, 12), seed=gs.seeds())
@example(vocab=5, seed=0)
def top_p_ties(ctx: Ctx, vocab: int, seed: int) -> None:
    x, start = _tie_case(vocab, seed)
    p = torch.sort(torch.softmax(x.double(), -1)[0], descending=True).values
    above, tied = float(p[:start].sum()), float(p[start])  # mass before the run; one member's p
    top_p = above + tied / 2  # inside the tied run's cumulative span
    params = {"temperature": 1.0, "top_k": 0, "top_p": top_p, "min_p": 0.0}
    note(f"logits = {x.tolist()}; top_p = {top_p:.4f} falls inside a run of tied tokens")
    _compare(_filter(ctx, x, params), x, params)


@check("top_p = 1 and min_p = 0 remove nothing; min_p = 1 keeps only the most probable",
       max_examples=8,
       hint="top_p = 1 turns top-p off: do not rely on a float32 cumulative sum reaching exactly "
            "1. min_p = 1 keeps the tokens with p_i >= p_max, i.e. the top token and its ties; "
            "compare with >=, not >.")
@given(vocab=st.integers(3, 12), seed=gs.seeds())
@example(vocab=4, seed=0)
def edge_values(ctx: Ctx, vocab: int, seed: int) -> None:
    x = torch.round(gs.tensor((2, vocab), seed, scale=2.0) * 4) / 4
    x[:, 0] = x[:, 1] = x.max() + 1  # a tie at the top
    x[:, 2] = x.max() - 30  # probability about 1e-13: far below a float32 sum's rounding of 1
    note(f"logits = {x.tolist()}")
    for params in ({"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0},
                   {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 1.0}):
        _compare(_filter(ctx, x, params), x, params,
                 what=f"filter_probs(top_p={params['top_p']}, min_p={params['min_p']})")


@check("temperature 0 is greedy, ties going to the lowest index", max_examples=8,
       hint="Do not divide by zero: with temperature == 0 put probability 1 on the first index "
            "of the largest logit (torch.argmax picks the first).")
@given(case=cases())
@example(case={"batch": 2, "vocab": 4, "seed": 3, "temperature": 0.0, "top_k": 0, "top_p": 1.0,
               "min_p": 0.0})
def greedy(ctx: Ctx, case: dict) -> None:
    x = _logits(case)
    x[:, -1] = x.max(-1).values  # the last index ties the maximum: the earlier one must win
    params = {"temperature": 0.0, "top_k": case["top_k"], "top_p": case["top_p"],
              "min_p": case["min_p"]}
    note(f"filter_probs(logits, temperature=0.0, top_k={case['top_k']}, ...)")
    _compare(_filter(ctx, x, params), x, params)


@check("masked (-inf) logits are never kept", max_examples=12,
       hint="A -inf logit has probability 0 at every step; with top_k larger than the number of "
            "finite logits, keep all the finite ones.")
@given(case=cases())
def masked_logits(ctx: Ctx, case: dict) -> None:
    x = _logits(case, masked=0.4)
    params = _params(case, x)
    _compare(_filter(ctx, x, params), x, params)


@check("float16 and bfloat16 logits are computed in float32", max_examples=8,
       hint="Convert the logits to float32 before anything else; a softmax in bfloat16 is off by "
            "about 1 %. The result is float32 whatever the input dtype.")
@given(case=cases(), dtype=st.sampled_from([torch.bfloat16, torch.float16]))
def half_logits(ctx: Ctx, case: dict, dtype: torch.dtype) -> None:
    x = _logits(case).to(dtype)  # the 1/4 grid within +-16 is exact in both
    params = _params(case, x.float())
    _compare(_filter(ctx, x, params), x, params)


@check("large logits at a low temperature stay finite", max_examples=8,
       hint="Subtract the row's largest kept z before exp (torch.softmax does): at temperature "
            "0.25 a logit of 30 becomes z = 120, and exp(120) overflows float32 (exp(-160) "
            "underflows to 0), so exp(z) / sum(exp(z)) gives NaN.")
@given(case=cases(), offset=st.sampled_from([LARGE_OFFSETS[0], LARGE_OFFSETS[1]]))
@example(case={"batch": 2, "vocab": 6, "seed": 0, "temperature": LARGE_T, "top_k": 0,
               "top_p": 1.0, "min_p": 0.0}, offset=LARGE_OFFSETS[0])
def large_logits(ctx: Ctx, case: dict, offset: float) -> None:
    """The usual logits shifted by ``offset`` (real models' top logits are in the tens), at
    temperature ``LARGE_T``: a row's largest ``z`` is then about 120 or -160 (beyond 88.7 or -103
    unless the row's largest logit is more than 7 standard deviations out), outside float32's
    ``exp`` range."""
    case = dict(case, temperature=LARGE_T)
    x = _logits(case, masked=0.2) + offset
    params = _params(case, x)
    _compare(_filter(ctx, x, params), x, params)


@check("invalid parameters raise ValueError", max_examples=1,
       hint="Validate first, at temperature 0 too: temperature >= 0, top_k >= 0, "
            "0 < top_p <= 1, 0 <= min_p <= 1.")
def invalid_parameters(ctx: Ctx) -> None:
    x = torch.zeros(1, 4, device=ctx.device)
    bad = [{"temperature": -0.5}, {"top_k": -1}, {"top_p": 0.0}, {"top_p": 1.5},
           {"min_p": -0.1}, {"min_p": 1.5},
           # greedy decoding validates too, before it takes its shortcut
           {"temperature": 0.0, "top_k": -1}, {"temperature": 0.0, "top_p": 0.0},
           {"temperature": 0.0, "min_p": 1.5}]
    for kwargs in bad:
        args = ", ".join(f"{k}={v}" for k, v in kwargs.items())
        with expect_raises(ctx, "ValueError", what=f"filter_probs(logits, {args})"):
            ctx.sub.call("filter_probs", x, **kwargs)
        with expect_raises(ctx, "ValueError", what=f"sample(logits, generator, {args})"):
            ctx.sub.call("sample", x, ctx.generator(), **kwargs)


# ----------------------------------------------------------------------------------------------
# sample
# ----------------------------------------------------------------------------------------------


def _gen_for(ctx: Ctx, x: torch.Tensor, salt: int = 0) -> torch.Generator:
    """A generator seeded from the run's seed and the inputs, so a shrunk example replays."""
    digest = hashlib.sha256(x.float().numpy().tobytes()).digest()
    return ctx.generator(seed=(ctx.seed * 1_000_003 + salt + int.from_bytes(digest[:7], "little")) % 2**62)


def _sample(ctx: Ctx, x: torch.Tensor, gen: torch.Generator, params: dict) -> torch.Tensor:
    got = ctx.sub.call("sample", x.to(ctx.device), gen, **params)
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"sample must return a tensor, got {type(got).__name__}")
    expect(tuple(got.shape) == (x.shape[0],), f"sample: expected shape ({x.shape[0]},), got {tuple(got.shape)}")
    expect(got.dtype == torch.int64, f"sample: expected dtype torch.int64, got {got.dtype}")
    expect(got.device.type == torch.device(ctx.device).type,
           f"sample: expected a tensor on {ctx.device}, got one on {got.device.type}")
    got = got.cpu()
    bad = ((got < 0) | (got >= x.shape[1])).nonzero().flatten()
    if bad.numel():
        raise CheckFailed(f"sample: row {int(bad[0])} holds token {int(got[bad[0]])}, outside [0, {x.shape[1]})")
    return got


@check("sample returns one kept token per row", max_examples=12,
       hint="Sample from filter_probs's distribution, row by row: "
            "torch.multinomial(probs, 1, generator=generator).")
@given(case=cases(max_batch=8))
def sample_kept(ctx: Ctx, case: dict) -> None:
    case = dict(case, batch=case["batch"] * 8)
    x = _logits(case, masked=0.2)
    params = _params(case, x)
    y = _sample(ctx, x, _gen_for(ctx, x), params)
    want = ref.filter_probs_f64(x, **params)
    bad = (want[torch.arange(x.shape[0]), y] == 0).nonzero().flatten()
    if bad.numel():
        r = int(bad[0])
        raise CheckFailed(f"row {r}: sample returned token {int(y[r])}, which the filters remove\n"
                          f"  logits:         {_fmt(x[r])}\n  filtered probs: {_fmt(want[r])}")


@check("sample at temperature 0 returns the argmax", max_examples=6,
       hint="Greedy decoding draws nothing: return the first index of the largest logit.")
@given(case=cases(max_batch=8))
def sample_greedy(ctx: Ctx, case: dict) -> None:
    x = _logits(case)
    x[:, -1] = x.max(-1).values
    y = _sample(ctx, x, _gen_for(ctx, x), {"temperature": 0.0})
    want = x.argmax(-1)
    if not torch.equal(y, want):
        r = int((y != want).nonzero()[0])
        raise CheckFailed(f"row {r}: temperature 0 must return token {int(want[r])} (the first "
                          f"largest logit), got {int(y[r])}; logits {_fmt(x[r])}")


@check("sampled tokens follow the filtered distribution",
       hint="Draw from the renormalised filtered probabilities, once per row, with the generator: "
            "do not apply the temperature twice, and a Gumbel-max draw needs -log(-log(u)) noise.")
def sample_distribution(ctx: Ctx) -> None:
    """Pearson chi-square of 20 000 draws against ``filter_probs`` for each of three settings;
    fails when a p-value is below 1e-7 / 3 (Bonferroni), a false-failure rate of at most 1e-7."""
    x = torch.tensor([STAT_LOGITS]).expand(STAT_ROWS, len(STAT_LOGITS)).contiguous()
    for i, (t, k, top_p, min_p) in enumerate(STAT_SETTINGS):
        params = {"temperature": t, "top_k": k, "top_p": top_p, "min_p": min_p}
        y = _sample(ctx, x, ctx.generator(seed=(ctx.seed * 7919 + 101 + i) % 2**62), params)
        want = ref.filter_probs_f64(x[:1], **params)[0]
        counts = np.bincount(y.numpy(), minlength=len(STAT_LOGITS)).astype(np.float64)
        pv = chi_square_gof(counts, want.numpy()).p_value
        if pv < ALPHA / len(STAT_SETTINGS):
            raise CheckFailed(
                f"with {params} the {STAT_ROWS} draws do not follow filter_probs (chi-square "
                f"p = {pv:.2e} < {ALPHA / len(STAT_SETTINGS):.1e})\n"
                f"  observed: {_fmt(torch.from_numpy(counts / STAT_ROWS))}\n  expected: {_fmt(want)}")


@check("the same generator state gives the same tokens",
       hint="Pass generator=generator to every torch.rand / torch.multinomial / exponential_ call; "
            "never use the global RNG and never build a generator of your own.")
def reproducible(ctx: Ctx) -> None:
    """Two calls with generators in the same state must agree; another seed, the same seed
    advanced by one draw, and a second call with the same generator must differ somewhere (512 rows
    of five kept tokens: identical results by chance have probability below 0.7^512)."""
    x = torch.tensor([STAT_LOGITS]).expand(512, len(STAT_LOGITS)).contiguous()
    params = {"temperature": 1.5, "top_k": 0, "top_p": 0.8, "min_p": 0.0}
    seed = (ctx.seed * 7919 + 17) % 2**62
    y1 = _sample(ctx, x, ctx.generator(seed=seed), params)
    y2 = _sample(ctx, x, ctx.generator(seed=seed), params)
    if not torch.equal(y1, y2):
        raise CheckFailed(f"two calls with generators in the same state (seed {seed}) differ in "
                          f"{int((y1 != y2).sum())} of 512 rows: every draw must come from generator")
    if torch.equal(y1, _sample(ctx, x, ctx.generator(seed=seed + 1), params)):
        raise CheckFailed("generators in different states gave identical tokens on 512 rows: the "
                          "draws do not come from generator")
    advanced = ctx.generator(seed=seed)
    torch.rand(1, generator=advanced, device=advanced.device)
    if torch.equal(y1, _sample(ctx, x, advanced, params)):
        raise CheckFailed("a generator seeded like the first call's but advanced by one draw gave "
                          "identical tokens: continue from the generator's state, do not reseed "
                          "from its initial_seed()")
    # the caller's generator advances: two calls with one generator draw different tokens (a
    # solution drawing from a private copy of its state would repeat every draw at the next step)
    shared = ctx.generator(seed=seed)
    if torch.equal(_sample(ctx, x, shared, params), _sample(ctx, x, shared, params)):
        raise CheckFailed("two calls with the same generator gave identical tokens on 512 rows: "
                          "each call must draw from the generator it is given and so advance it "
                          "(not from a copy of its state)")

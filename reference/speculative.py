"""Speculative sampling: the verification step, its exact laws, a decode loop, and a benchmark.

Sources:
- Leviathan, Kalman & Matias 2023, *Fast Inference from Transformers via Speculative Decoding*
  (arXiv:2211.17192), Algorithm 1 and Appendix A.1 (the output is distributed exactly as the
  target's).
- Chen et al. 2023, *Accelerating Large Language Model Decoding with Speculative Sampling*
  (arXiv:2302.01318), Algorithm 2 (the same rule, "modified rejection sampling").
- The layout of the verification step, with the math rule beside each line, follows gpt-fast's
  ``speculative_decode`` (pytorch-labs/gpt-fast, ``generate.py``).

Notation: ``q`` is the draft model's distribution, ``p`` the target's. Draft token ``x_i ~ q_i`` is
accepted with probability ``min(1, p_i(x_i) / q_i(x_i))``; at the first rejection the step emits one
token from the residual ``norm(max(0, p_i - q_i))`` and stops; when all ``gamma`` draft tokens are
accepted it emits a bonus token from ``p_gamma``. Either way every emitted token, given the tokens
before it, is distributed as ``p``: ``min(p, q) + max(0, p - q) = p``.

The closed-form theory (expected tokens per step, walltime factor) is torch-free and lives in
:mod:`inferview.reference.speculative_theory`.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from inferview.reference import speculative_theory as theory
from torch import Tensor

__all__ = [
    "SpeculativeDecodeResult",
    "TinyLM",
    "acceptance_rate",
    "autoregressive_generate",
    "emitted_tokens",
    "mixed_pair",
    "num_accepted_law",
    "outcome_distribution",
    "position_distributions",
    "sample_categorical",
    "sequence_distribution",
    "speculative_bench",
    "speculative_generate",
    "speculative_verify",
]


# ----------------------------------------------------------------------------------------------
# Sampling
# ----------------------------------------------------------------------------------------------


def _sample_with_uniform(weights: Tensor, u: Tensor) -> Tensor:
    """Inverse-CDF sampling: row ``b`` draws from ``weights[b] / weights[b].sum()`` using ``u[b]``.

    ``weights``: (B, V), non-negative, each row with a positive sum; ``u``: (B,) in [0, 1).
    A token of weight 0 is never returned, whatever the rounding.
    """
    cdf = weights.cumsum(-1)  # cdf: (B, V), non-decreasing
    total = cdf[:, -1:]  # total: (B, 1)
    idx = torch.searchsorted(cdf, u.unsqueeze(-1).to(cdf.dtype) * total, right=True)  # first cdf > u*total
    idx = idx.squeeze(-1)  # (B,)
    vocab = weights.shape[-1]
    last_positive = vocab - 1 - (weights > 0).flip(-1).to(torch.int64).argmax(-1)  # (B,)
    return torch.minimum(idx, last_positive)  # guards u*total rounding up to total


def sample_categorical(probs: Tensor, generator: torch.Generator) -> Tensor:
    """One draw per row from ``probs`` (B, V) (rows need not be normalised); returns (B,) int64.

    Uses exactly one uniform per row from ``generator``.
    """
    u = torch.rand(probs.shape[0], generator=generator, device=probs.device, dtype=torch.float64)
    return _sample_with_uniform(probs.to(torch.float64), u)


# ----------------------------------------------------------------------------------------------
# The verification step
# ----------------------------------------------------------------------------------------------


def speculative_verify(
    draft_tokens: Tensor, draft_probs: Tensor, target_probs: Tensor, generator: torch.Generator
) -> tuple[Tensor, Tensor]:
    """Accept a prefix of the draft tokens and emit one more token, batched over rows.

    ``draft_tokens`` (B, G) int64, sampled from ``draft_probs`` (B, G, V); ``target_probs``
    (B, G + 1, V) are the target's distributions at the same positions plus one more. Returns
    ``(num_accepted, next_token)``, both (B,) int64. Draws ``B * G`` uniforms for the acceptance
    tests and then ``B`` for the emitted token, all from ``generator``, whatever the outcome.
    """
    if draft_tokens.dim() != 2 or draft_probs.dim() != 3 or target_probs.dim() != 3:
        raise ValueError("expected draft_tokens (B, G), draft_probs (B, G, V), target_probs (B, G+1, V)")
    batch, gamma = draft_tokens.shape
    vocab = draft_probs.shape[-1]
    if draft_probs.shape != (batch, gamma, vocab) or target_probs.shape != (batch, gamma + 1, vocab):
        raise ValueError(
            f"shape mismatch: draft_tokens {tuple(draft_tokens.shape)}, draft_probs "
            f"{tuple(draft_probs.shape)}, target_probs {tuple(target_probs.shape)}"
        )
    device = draft_probs.device
    q = draft_probs.to(torch.float64)  # q: (B, G, V)
    p = target_probs.to(torch.float64)  # p: (B, G+1, V)
    x = draft_tokens.to(torch.int64).unsqueeze(-1)  # x: (B, G, 1)

    q_x = q.gather(-1, x).squeeze(-1)  # q_i(x_i): (B, G)
    p_x = p[:, :gamma].gather(-1, x).squeeze(-1)  # p_i(x_i): (B, G)
    r = torch.rand((batch, gamma), generator=generator, device=device, dtype=torch.float64)  # r_i ~ U[0, 1)
    accept = r * q_x < p_x  # accept x_i  <=>  r_i < p_i(x_i) / q_i(x_i)   (no division by q)
    num_accepted = accept.to(torch.int64).cumprod(-1).sum(-1)  # n = length of the accepted prefix: (B,)

    q_ext = torch.cat([q, q.new_zeros(batch, 1, vocab)], dim=1)  # q_G := 0, so the residual at G is p_G
    rows = torch.arange(batch, device=device)
    p_n = p[rows, num_accepted]  # p_n: (B, V), the target at the first rejection (or at G)
    q_n = q_ext[rows, num_accepted]  # q_n: (B, V)
    residual = (p_n - q_n).clamp_min(0.0)  # p'(x) = max(0, p_n(x) - q_n(x))
    # A rejection implies p_n(x_n) < q_n(x_n), so p' has positive mass; keep p_n if rounding ate it.
    residual = torch.where(residual.sum(-1, keepdim=True) > 0, residual, p_n)
    u = torch.rand(batch, generator=generator, device=device, dtype=torch.float64)  # one more uniform
    next_token = _sample_with_uniform(residual, u)  # x ~ norm(p'), the bonus token when n == G
    return num_accepted, next_token


def acceptance_rate(p: Tensor, q: Tensor) -> Tensor:
    """``beta = sum_x min(p(x), q(x)) = 1 - TV(p, q)`` over the last dimension (Corollary 3.7).

    ``p`` is the target's distribution and ``q`` the draft's, same shape ``(..., V)``; returns
    ``(...)``: the probability that one draft token is accepted.
    """
    return torch.minimum(p, q).sum(-1)


# ----------------------------------------------------------------------------------------------
# Exact laws for context-independent distributions (one p_i, q_i per draft position)
# ----------------------------------------------------------------------------------------------


def position_distributions(draft_probs: Tensor, target_probs: Tensor) -> Tensor:
    """Law of the token emitted at position ``j`` given that the step reaches ``j`` (``n >= j``).

    ``draft_probs`` (G, V), ``target_probs`` (G + 1, V); returns (G + 1, V). Built from the two
    ways a token is emitted: accepted draft (``min(p_j, q_j)``) or resampled at a rejection
    (``P(reject) * norm(max(0, p_j - q_j)) = max(0, p_j - q_j)``). The sum is ``p_j``: this
    function exists to show that identity, and tests check it.
    """
    p = target_probs.to(torch.float64)  # p: (G+1, V)
    q = torch.cat([draft_probs.to(torch.float64), p.new_zeros(1, p.shape[-1])])  # q_G := 0
    return torch.minimum(p, q) + (p - q).clamp_min(0.0)


def num_accepted_law(draft_probs: Tensor, target_probs: Tensor) -> Tensor:
    """Exact law of ``num_accepted`` (G + 1,) for context-independent draft and target.

    ``P(n >= i) = prod_{j < i} beta_j`` with ``beta_j = sum_x min(p_j(x), q_j(x))``.
    """
    gamma = draft_probs.shape[0]
    betas = acceptance_rate(target_probs[:gamma].to(torch.float64), draft_probs.to(torch.float64))
    law = theory.num_accepted_distribution([min(1.0, float(b)) for b in betas])
    return torch.tensor(law, dtype=torch.float64)


def outcome_distribution(draft_probs: Tensor, target_probs: Tensor) -> dict[tuple[int, ...], float]:
    """Exact law of the emitted tuple ``(x_0, ..., x_{n-1}, y)`` for context-independent inputs.

    ``P(n = k, x, y) = prod_{i<k} min(p_i, q_i)(x_i) * max(0, p_k - q_k)(y)`` for ``k < G`` and
    ``prod_{i<G} min(p_i, q_i)(x_i) * p_G(y)`` for ``k = G``. The tuple's length is ``n + 1``.
    Enumerates ``V^G`` prefixes, so it refuses inputs with more than a million.
    """
    gamma, vocab = draft_probs.shape
    if vocab**gamma > 1_000_000:
        raise ValueError(f"vocab^gamma = {vocab}^{gamma} is too large to enumerate")
    p = target_probs.to(torch.float64).tolist()
    q = draft_probs.to(torch.float64).tolist()
    accept = [[min(a, b) for a, b in zip(p[i], q[i], strict=True)] for i in range(gamma)]
    resid = [[max(0.0, a - b) for a, b in zip(p[i], q[i], strict=True)] for i in range(gamma)]
    resid.append(list(p[gamma]))  # the bonus token
    out: dict[tuple[int, ...], float] = {}
    for k in range(gamma + 1):
        for prefix in itertools.product(range(vocab), repeat=k):
            w = math.prod(accept[i][t] for i, t in enumerate(prefix))
            if w == 0.0:
                continue
            for y in range(vocab):
                if resid[k][y] > 0.0:
                    out[prefix + (y,)] = w * resid[k][y]
    return out


def emitted_tokens(draft_tokens: Tensor, num_accepted: Tensor, next_token: Tensor) -> Tensor:
    """The tokens one step emits, (B, G + 1) int64, padded with -1 after the ``n + 1`` emitted.

    Position ``j < n`` holds the accepted draft token, position ``n`` the resampled or bonus token.
    """
    batch, gamma = draft_tokens.shape
    pos = torch.arange(gamma + 1, device=draft_tokens.device)  # (G+1,)
    n = num_accepted.to(torch.int64).unsqueeze(-1)  # (B, 1)
    padded = torch.cat([draft_tokens.to(torch.int64), draft_tokens.new_zeros(batch, 1)], dim=1)
    out = torch.where(pos < n, padded, torch.full_like(padded, -1))  # accepted prefix
    return torch.where(pos == n, next_token.to(torch.int64).unsqueeze(-1), out)  # + the next token


def mixed_pair(alpha: float, vocab: int, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """A target ``p`` and a draft ``q`` over ``vocab`` tokens with ``sum min(p, q) = alpha`` exactly.

    ``p`` lives on the first half of the vocabulary, ``q = alpha p + (1 - alpha) r`` with ``r`` on
    the second half, so ``min(p, q) = alpha p``. Returns ``(p, q)``, each (V,) float64.
    """
    if vocab < 2:
        raise ValueError("vocab must be at least 2")
    half = vocab // 2
    w = torch.rand(vocab, generator=generator, dtype=torch.float64) + 0.5  # (V,), bounded away from 0
    p = torch.zeros(vocab, dtype=torch.float64)
    p[:half] = w[:half] / w[:half].sum()
    r = torch.zeros(vocab, dtype=torch.float64)
    r[half:] = w[half:] / w[half:].sum()
    return p, alpha * p + (1.0 - alpha) * r


# ----------------------------------------------------------------------------------------------
# Two tiny deterministic language models and the decode loop
# ----------------------------------------------------------------------------------------------


@dataclass
class TinyLM:
    """A fixed random n-gram language model: ``logits(next) = sum_k tables[k][token at t - k]``.

    ``tables`` (order, V, V); ``order = 2`` makes the next token depend on the last two tokens.
    Cheap, deterministic, and its exact sequence law is computable, which is what the decode-loop
    tests need.
    """

    tables: Tensor
    """Logit tables, (order, V, V)."""
    temperature: float = 1.0
    """Softmax temperature."""

    @classmethod
    def random(cls, vocab: int = 32, order: int = 2, seed: int = 0, scale: float = 2.0) -> TinyLM:
        """A model with i.i.d. normal logits of standard deviation ``scale``."""
        g = torch.Generator().manual_seed(seed)
        return cls(torch.randn(order, vocab, vocab, generator=g, dtype=torch.float64) * scale)

    def perturbed(self, noise: float, seed: int = 1) -> TinyLM:
        """A draft model: the same tables plus normal noise (a larger ``noise``, a lower acceptance)."""
        g = torch.Generator().manual_seed(seed)
        eps = torch.randn(self.tables.shape, generator=g, dtype=torch.float64) * noise
        return TinyLM(self.tables + eps.to(self.tables.device), self.temperature)

    def to(self, device: str | torch.device) -> TinyLM:
        """The same model on ``device``."""
        return TinyLM(self.tables.to(device), self.temperature)

    @property
    def vocab(self) -> int:
        """Vocabulary size ``V``."""
        return self.tables.shape[-1]

    def probs_at(self, tokens: Tensor, positions: Tensor) -> Tensor:
        """Next-token distributions after ``tokens[b, positions[b, k]]``: (B, K, V) float64.

        ``tokens`` (B, T) int64; ``positions`` (B, K). Context before position 0 is clamped to it.
        """
        logits = torch.zeros(*positions.shape, self.vocab, dtype=torch.float64, device=tokens.device)
        for k in range(self.tables.shape[0]):
            ctx = tokens.gather(1, (positions - k).clamp_min(0))  # token at t - k: (B, K)
            logits = logits + self.tables[k][ctx]  # (B, K, V)
        return torch.softmax(logits / self.temperature, dim=-1)


@dataclass
class SpeculativeDecodeResult:
    """What :func:`speculative_generate` returns; every tensor is per row (B,) unless noted."""

    tokens: Tensor
    """Prompt followed by exactly ``max_new_tokens`` generated tokens, (B, T0 + max_new_tokens)."""
    steps: Tensor
    """Speculative steps taken = target-model calls."""
    accepted: Tensor
    """Draft tokens accepted, summed over steps."""
    gamma: int
    """Draft tokens proposed per step."""

    @property
    def tokens_per_step(self) -> float:
        """Mean tokens emitted per step over the batch (accepted drafts plus one per step)."""
        return float((self.accepted + self.steps).sum() / self.steps.sum())

    @property
    def acceptance(self) -> float:
        """Fraction of proposed draft tokens that were accepted."""
        return float(self.accepted.sum() / (self.steps.sum() * self.gamma))


def speculative_generate(
    target: TinyLM, draft: TinyLM, prompt: Tensor, max_new_tokens: int, gamma: int,
    generator: torch.Generator,
) -> SpeculativeDecodeResult:
    """Speculative decoding (Leviathan et al. 2023, Algorithm 1) for a batch of prompts.

    ``prompt`` (B, T0) int64. Each step, for every unfinished row: the draft proposes ``gamma``
    tokens autoregressively, the target scores all ``gamma + 1`` positions at once, and
    :func:`speculative_verify` keeps a prefix plus one token. Rows advance at their own pace.
    """
    batch, t0 = prompt.shape
    total = t0 + max_new_tokens
    device = prompt.device
    buf = torch.zeros(batch, total + gamma + 1, dtype=torch.int64, device=device)  # tokens + slack
    buf[:, :t0] = prompt
    length = torch.full((batch,), t0, dtype=torch.int64, device=device)  # (B,)
    steps = torch.zeros(batch, dtype=torch.int64, device=device)
    accepted = torch.zeros(batch, dtype=torch.int64, device=device)
    offsets = torch.arange(gamma + 1, device=device)  # (G+1,)
    while True:
        rows = (length < total).nonzero().squeeze(-1)  # unfinished rows: (R,)
        if rows.numel() == 0:
            break
        sub, start = buf[rows], length[rows]  # sub: (R, L), start: (R,)
        qs = []
        for i in range(gamma):  # the draft proposes autoregressively
            q_i = draft.probs_at(sub, (start - 1 + i).unsqueeze(-1))[:, 0]  # q_i: (R, V)
            sub[torch.arange(rows.numel(), device=device), start + i] = sample_categorical(q_i, generator)
            qs.append(q_i)
        draft_probs = torch.stack(qs, dim=1) if qs else sub.new_zeros(rows.numel(), 0, target.vocab).double()
        draft_tokens = sub.gather(1, start.unsqueeze(-1) + offsets[:gamma])  # (R, G)
        target_probs = target.probs_at(sub, start.unsqueeze(-1) - 1 + offsets)  # one pass: (R, G+1, V)
        n, nxt = speculative_verify(draft_tokens, draft_probs, target_probs, generator)
        sub[torch.arange(rows.numel(), device=device), start + n] = nxt  # overwrite the rejected draft
        buf[rows] = sub
        length[rows] = start + n + 1
        steps[rows] += 1
        accepted[rows] += n
    return SpeculativeDecodeResult(buf[:, :total].clone(), steps, accepted, gamma)


def autoregressive_generate(
    model: TinyLM, prompt: Tensor, max_new_tokens: int, generator: torch.Generator
) -> Tensor:
    """Plain sampling, one token per model call: (B, T0 + max_new_tokens) int64."""
    batch, t0 = prompt.shape
    buf = torch.zeros(batch, t0 + max_new_tokens, dtype=torch.int64, device=prompt.device)
    buf[:, :t0] = prompt
    for t in range(t0, t0 + max_new_tokens):
        pos = torch.full((batch, 1), t - 1, dtype=torch.int64, device=prompt.device)
        buf[:, t] = sample_categorical(model.probs_at(buf, pos)[:, 0], generator)
    return buf


def sequence_distribution(model: TinyLM, prompt: Sequence[int], length: int) -> Tensor:
    """Exact joint law of the next ``length`` tokens after ``prompt``: shape ``(V,) * length``."""
    vocab = model.vocab
    seqs = torch.tensor([list(prompt)], dtype=torch.int64)  # (1, T0)
    law = torch.ones(1, dtype=torch.float64)  # law: (V^l,) over the sequences so far
    for _ in range(length):
        pos = torch.full((seqs.shape[0], 1), seqs.shape[1] - 1, dtype=torch.int64)
        nxt = model.probs_at(seqs, pos)[:, 0].cpu()  # (V^l, V)
        law = (law.unsqueeze(-1) * nxt).reshape(-1)  # (V^(l+1),)
        seqs = torch.cat(
            [seqs.repeat_interleave(vocab, 0), torch.arange(vocab).repeat(seqs.shape[0]).unsqueeze(-1)], 1
        )
    return law.reshape((vocab,) * length)


# ----------------------------------------------------------------------------------------------
# Benchmark
# ----------------------------------------------------------------------------------------------


def speculative_bench(
    device: str | torch.device = "cpu", alphas: Sequence[float] = (0.6, 0.8, 0.9),
    gammas: Sequence[int] = (1, 2, 4, 8), cost_ratio: float = 0.05, batch: int = 8192,
    vocab: int = 64, seed: int = 0,
) -> list[dict]:
    """Measured tokens per step against Eq. 1, and the walltime factor (Theorem 3.8).

    For each ``(alpha, gamma)``: a draft/target pair with acceptance rate exactly ``alpha`` at every
    position (:func:`mixed_pair`), one batched :func:`speculative_verify` call over ``batch`` rows.
    The walltime factor divides the measured tokens per step by ``gamma * c + 1`` with a simulated
    cost ratio ``c`` (draft run time / target run time). ``verify_ms`` is the measured time of the
    verification step itself on ``device``.
    """
    device = torch.device(device)
    gen = torch.Generator(device=device).manual_seed(seed)
    rows: list[dict] = []
    for alpha in alphas:
        p, q = mixed_pair(alpha, vocab, torch.Generator().manual_seed(seed))
        for gamma in gammas:
            q_b = q.to(device).expand(batch, gamma, vocab).contiguous()  # (B, G, V)
            p_b = p.to(device).expand(batch, gamma + 1, vocab).contiguous()  # (B, G+1, V)
            draft = sample_categorical(q_b.reshape(-1, vocab), gen).reshape(batch, gamma)  # (B, G)
            speculative_verify(draft, q_b, p_b, gen)  # warm-up
            times = []
            for _ in range(3):
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                t = time.perf_counter()
                n, _ = speculative_verify(draft, q_b, p_b, gen)
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                times.append(time.perf_counter() - t)
            measured = float((n.double() + 1).mean())
            rows.append({
                "name": f"speculative verify alpha={alpha:g} gamma={gamma}",
                "device": device.type,
                "alpha": alpha,
                "gamma": gamma,
                "batch": batch,
                "cost_ratio": cost_ratio,
                "tokens_per_step": measured,
                "tokens_per_step_theory": theory.expected_tokens_per_step(alpha, gamma),
                "walltime_factor": measured / (gamma * cost_ratio + 1.0),
                "walltime_factor_theory": theory.walltime_improvement(alpha, gamma, cost_ratio),
                "verify_ms": 1e3 * sorted(times)[1],
            })
    return rows

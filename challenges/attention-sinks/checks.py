"""Checks for the attention-sinks challenge: which tokens a StreamingLLM cache keeps (directed
cases, then Hypothesis stateful testing against the reference cache as the model), the keys rotated
at their cache slots, attention of the newest tokens at slot positions, rejected calls, dtypes,
copies and bounded memory."""

from __future__ import annotations

import hypothesis
import torch
from hypothesis import HealthCheck, Phase, example, given, note, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import engine as hengine
from hypothesis.stateful import (
    RuleBasedStateMachine,
    get_state_machine_test,
    invariant,
    precondition,
    rule,
)
from inferview.graders import strategies as gs
from inferview.graders import tolerances
from inferview.graders.api import CheckFailed, Ctx, check, expect_equal, expect_raises, expect_shape
from inferview.reference.sink_cache import SinkCache

F64 = torch.float64
STATEFUL_SHRINK_SECONDS = 6.0
"""Shrinking budget of each state machine in the stateful check (the engine caps @given checks)."""

LARGE_QUERY_SCALE = 100.0
"""Query scale of the large-score check: with N(0, 1) keys a score is N(0, scale^2), so the largest
of a few reaches the hundreds, far past float32's exp overflow (~89)."""


@st.composite
def configs(draw, *, min_sinks: int = 0):
    """``(num_sinks, window, num_heads, head_dim)``, with at least ``min_sinks`` sinks."""
    s = draw(st.integers(min_sinks, 4))
    return s, draw(st.integers(1, 6)), draw(st.integers(1, 3)), draw(st.sampled_from([4, 8, 16]))


def _kv(cfg, t: int, seed: int, device: str, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    _, _, h, d = cfg
    return gs.tensor((h, t, d), seed, dtype, device), gs.tensor((h, t, d), seed + 1, dtype, device)


def _new(ctx: Ctx, cfg, dtype=torch.float32, theta: float = 10000.0):
    s, w, h, d = cfg
    return (ctx.sub.new("SinkCache", s, w, h, d, rope_theta=theta, dtype=dtype, device=ctx.device),
            SinkCache(s, w, h, d, rope_theta=theta, dtype=dtype))


def _close(got, exact: torch.Tensor, baseline: torch.Tensor, what: str, slack=None) -> None:
    """``err(got) <= 2 * err(baseline) + slack`` against float64, ``baseline`` being the reference
    computed by PyTorch in the cache's precision; ``slack`` defaults to that dtype's allowance
    ``atol + rtol * max|exact|`` at the result's scale."""
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"{what} must be a tensor, got {type(got).__name__}")
    expect_shape(got, tuple(exact.shape), what)
    expect_equal(got.dtype, baseline.dtype, what=f"dtype of {what}")
    if exact.numel() == 0:
        return
    err_base = tolerances.max_abs_error(baseline, exact)
    if slack is None:
        rtol, atol = tolerances.for_dtype(baseline.dtype)
        slack = atol + rtol * float(exact.abs().max())
    err = tolerances.max_abs_error(got, exact)
    allowed = tolerances.ATTENTION_FACTOR * err_base + slack
    if not err <= allowed:  # NaN fails
        diff = (got.detach().cpu().double() - exact.cpu()).abs().nan_to_num(float("inf"))
        idx = tuple(int(i) for i in torch.unravel_index(diff.flatten().argmax(), exact.shape))
        raise CheckFailed(f"{what}: max error {err:.3g} against float64 (a PyTorch computation in "
                          f"{str(baseline.dtype).replace('torch.', '')} has {err_base:.3g}; allowed "
                          f"{allowed:.3g}); worst at {idx}: expected {exact.cpu()[idx].item():.6g}, got "
                          f"{got.detach().cpu()[idx].item():.6g}")


def _same_tokens(sub, model: SinkCache, when: str, counts: bool = True) -> None:
    if counts:
        expect_equal(sub.get("num_seen"), model.num_seen, what=f"num_seen {when}")
        expect_equal(sub.get("num_cached"), model.num_cached, what=f"num_cached {when}")
    got = sub.call("token_ids")
    if not isinstance(got, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in got):
        raise CheckFailed(f"token_ids() must be a list of ints, got {got!r} {when}")
    expect_equal(got, model.token_ids(), what=f"token_ids() {when} (sinks {model.num_sinks}, window "
                 f"{model.window})")


def _same_values(ctx: Ctx, sub, model: SinkCache, when: str) -> None:
    expect_equal(sub.call("values"), model.values().to(ctx.device), what=f"values() {when}")


def _same_keys(sub, model: SinkCache, when: str) -> None:
    exact = model.keys(F64)
    _close(sub.call("keys"), exact, model.keys(), f"keys() {when} (rotated at slots 0..{model.num_cached - 1})")


def _attend_slack(model: SinkCache, q: torch.Tensor, exact: torch.Tensor) -> float:
    """The attention rule's slack (:func:`inferview.graders.tolerances.attention_slack`) for the
    rotated queries and keys, with the largest visible score computed in float64."""
    n, tq = model.num_cached, q.shape[1]
    from inferview.reference.sink_cache import rope_half

    qr = rope_half(q.cpu(), torch.arange(n - tq, n), model.rope_theta, F64)
    s = (qr @ model.keys(F64).cpu().transpose(-1, -2)).abs() / model.head_dim ** 0.5
    hidden = torch.arange(n)[None, :] > torch.arange(n - tq, n)[:, None]
    max_v = float(model.values().abs().max()) if n else 0.0
    return float(tolerances.attention_slack(exact, torch.float32, max_score=float(s.masked_fill(hidden, 0).max()),
                                            max_value=max_v))


def _same_attention(ctx: Ctx, sub, model: SinkCache, tq: int, seed: int, when: str,
                    scale: float = 1.0) -> None:
    q = gs.tensor((model.num_heads, tq, model.head_dim), seed, model.dtype, ctx.device, scale=scale)
    exact = model.attend(q.cpu(), F64)
    got = sub.call("attend", q)
    _close(got, exact, model.attend(q.cpu()), f"attend(q of {tq} token(s)) {when}",
           _attend_slack(model, q, exact) if model.dtype == torch.float32 else None)


def _stream(ctx: Ctx, cfg, chunks: list[int], seed: int, *, keys: bool = False, dtype=torch.float32):
    """Append the chunks to both caches, comparing tokens and values after each (and keys)."""
    sub, model = _new(ctx, cfg, dtype)
    _same_tokens(sub, model, "of an empty cache")
    for i, t in enumerate(chunks):
        k, v = _kv(cfg, t, seed + 2 * i, ctx.device, dtype)
        sub.call("append", k, v)
        model.append(k.cpu(), v.cpu())
        _same_tokens(sub, model, f"after appends of {chunks[:i + 1]} tokens")
    when = f"after appends of {chunks} tokens"
    _same_values(ctx, sub, model, when)
    if keys:
        _same_keys(sub, model, when)
    return sub, model


@check("the cache keeps the first num_sinks tokens and the newest window", max_examples=6,
       hint="After n tokens: tokens 0..min(n, S)-1, then tokens max(S, n - W)..n-1, in stream order.")
@given(cfg=configs(), chunks=st.lists(st.integers(1, 3), min_size=1, max_size=6), seed=gs.seeds())
@example(cfg=(4, 4, 1, 4), chunks=[1] * 10, seed=0)
def keeps_sinks_and_window(ctx: Ctx, cfg, chunks: list[int], seed: int) -> None:
    note(f"num_sinks={cfg[0]}, window={cfg[1]}, num_heads={cfg[2]}, head_dim={cfg[3]}; appends of {chunks}")
    _stream(ctx, cfg, chunks, seed)


@check("chunks that straddle the sinks or outgrow the window", max_examples=5,
       hint="The sinks are the first S tokens of the stream, even when the first chunk is shorter "
            "than S; a chunk longer than the window keeps only its newest W tokens (after topping up "
            "the sinks).")
@given(cfg=configs(min_sinks=2), first=st.integers(1, 3),
       big=st.integers(7, 14), seed=gs.seeds())
@example(cfg=(3, 2, 1, 4), first=1, big=9, seed=0)
def ragged_chunks(ctx: Ctx, cfg, first: int, big: int, seed: int) -> None:
    note(f"num_sinks={cfg[0]}, window={cfg[1]}; a chunk of {first}, then {big}, then 1, then {big}")
    _stream(ctx, cfg, [first, big, 1, big], seed)


@check("keys are rotated at their cache slots, not their stream positions", max_examples=6,
       hint="Cache keys before RoPE and rotate them at 0..num_cached-1 when keys() runs: slots shift "
            "as the window slides, so a key rotated when it was appended keeps a stale position.")
@given(cfg=configs(), chunks=st.lists(st.integers(1, 5), min_size=2, max_size=5), seed=gs.seeds())
@example(cfg=(1, 2, 1, 4), chunks=[2, 1, 1], seed=0)
def keys_at_slots(ctx: Ctx, cfg, chunks: list[int], seed: int) -> None:
    note(f"num_sinks={cfg[0]}, window={cfg[1]}, num_heads={cfg[2]}, head_dim={cfg[3]}; appends of {chunks}")
    _stream(ctx, cfg, chunks, seed, keys=True)


@check("a custom rope_theta is used", max_examples=4, hint="The angle of pair i at position p is "
       "p * rope_theta ** (-2i / head_dim).")
@given(cfg=configs(), theta=st.sampled_from([100.0, 500000.0]), seed=gs.seeds())
def custom_theta(ctx: Ctx, cfg, theta: float, seed: int) -> None:
    note(f"num_sinks={cfg[0]}, window={cfg[1]}, head_dim={cfg[3]}, rope_theta={theta:g}")
    sub, model = _new(ctx, cfg, theta=theta)
    k, v = _kv(cfg, cfg[0] + cfg[1] + 2, seed, ctx.device)
    sub.call("append", k, v)
    model.append(k.cpu(), v.cpu())
    _same_keys(sub, model, f"with rope_theta={theta:g}")


@check("a decode step attends at slot positions", max_examples=6,
       hint="The newest token sits in the last slot: rotate its query at num_cached - 1, not at "
            "its position in the stream (num_seen - 1), and let it see every cached token.")
@given(cfg=configs(), chunks=st.lists(st.integers(1, 6), min_size=1, max_size=5), seed=gs.seeds())
@example(cfg=(4, 4, 1, 4), chunks=[9, 1], seed=0)
def decode_attention(ctx: Ctx, cfg, chunks: list[int], seed: int) -> None:
    note(f"num_sinks={cfg[0]}, window={cfg[1]}, num_heads={cfg[2]}, head_dim={cfg[3]}; appends of {chunks}, "
         f"then attend with one query")
    sub, model = _stream(ctx, cfg, chunks, seed)
    _same_attention(ctx, sub, model, 1, seed + 99, f"after appends of {chunks}")


@check("a chunk's queries are causal within the cache", max_examples=6,
       hint="Query i of t_q is the token in slot num_cached - t_q + i: it sees slots 0..that one, "
            "and its RoPE position is that slot.")
@given(cfg=configs(), chunks=st.lists(st.integers(1, 6), min_size=1, max_size=4), tq=st.integers(2, 6),
       seed=gs.seeds())
def chunk_attention(ctx: Ctx, cfg, chunks: list[int], tq: int, seed: int) -> None:
    tq = min(tq, cfg[1])
    note(f"num_sinks={cfg[0]}, window={cfg[1]}, num_heads={cfg[2]}, head_dim={cfg[3]}; appends of {chunks}, "
         f"then a chunk of {tq} and attend with its {tq} queries")
    sub, model = _stream(ctx, cfg, [*chunks, tq], seed)
    _same_attention(ctx, sub, model, tq, seed + 99, f"after appends of {[*chunks, tq]}")


@check("a chunk longer than the window attends before any eviction", max_examples=3,
       hint="Until a token is evicted (num_seen <= num_sinks + window) every token is cached, so "
            "any t_q up to num_cached is allowed, more than the window included; the t_q <= window "
            "limit starts with the first eviction.")
@given(cfg=configs(min_sinks=1), seed=gs.seeds())
def long_chunk_before_eviction(ctx: Ctx, cfg, seed: int) -> None:
    tq = cfg[0] + cfg[1]  # a full cache, nothing evicted: t_q > window is still valid
    note(f"num_sinks={cfg[0]}, window={cfg[1]}, num_heads={cfg[2]}, head_dim={cfg[3]}; one chunk of "
         f"{tq} and attend with its {tq} queries")
    sub, model = _stream(ctx, cfg, [tq], seed)
    _same_attention(ctx, sub, model, tq, seed + 99, f"after appends of {[tq]}")


@check("attention stays finite for large scores", max_examples=3,
       hint="Subtract each row's maximum before exp (torch.softmax does): exp of a score above ~89 "
            "is inf in float32, and sink tokens are exactly where very large scores appear.")
@given(cfg=configs(), chunks=st.lists(st.integers(1, 6), min_size=1, max_size=3), seed=gs.seeds())
def large_scores(ctx: Ctx, cfg, chunks: list[int], seed: int) -> None:
    note(f"num_sinks={cfg[0]}, window={cfg[1]}, num_heads={cfg[2]}, head_dim={cfg[3]}; appends of {chunks}, "
         f"then attend with one query x{LARGE_QUERY_SCALE:g} (scores of a few hundred)")
    sub, model = _stream(ctx, cfg, chunks, seed)
    _same_attention(ctx, sub, model, 1, seed + 99, f"after appends of {chunks} (query x{LARGE_QUERY_SCALE:g})",
                    scale=LARGE_QUERY_SCALE)


@check("float16 and bfloat16 caches keep their dtype", max_examples=4,
       hint="Store keys and values in the constructor's dtype; keys() and attend return it too "
            "(compute attention in float32 and cast back).")
@given(cfg=configs(), dtype=st.sampled_from([torch.float16, torch.bfloat16]),
       chunks=st.lists(st.integers(1, 6), min_size=1, max_size=3), seed=gs.seeds())
def half_precision(ctx: Ctx, cfg, dtype: torch.dtype, chunks: list[int], seed: int) -> None:
    note(f"dtype={str(dtype).replace('torch.', '')}, num_sinks={cfg[0]}, window={cfg[1]}; appends of {chunks}")
    sub, model = _stream(ctx, cfg, chunks, seed, keys=True, dtype=dtype)
    _same_attention(ctx, sub, model, 1, seed + 99, f"after appends of {chunks}")


@check("rejected calls raise ValueError and change nothing", max_examples=3,
       hint="Validate every shape (3-D, num_heads, head_dim, at least one token, k and v alike) and "
            "t_q (the newest t_q tokens must all be cached) before touching any state.")
@given(cfg=configs(), fill=st.integers(1, 12), seed=gs.seeds())
def rejected_calls(ctx: Ctx, cfg, fill: int, seed: int) -> None:
    s, w, h, d = cfg
    note(f"num_sinks={s}, window={w}, num_heads={h}, head_dim={d}; {fill} tokens, then bad calls")
    sub, model = _stream(ctx, cfg, [fill], seed)
    ok = gs.tensor((h, 1, d), seed + 5, device=ctx.device)
    bad = [
        (f"k with {h + 1} heads", gs.tensor((h + 1, 1, d), seed, device=ctx.device), None),
        (f"k with head_dim {d + 2}", gs.tensor((h, 1, d + 2), seed, device=ctx.device), None),
        ("k and v with no tokens", gs.tensor((h, 0, d), seed, device=ctx.device), None),
        ("a 2-D k and v", gs.tensor((h, d), seed, device=ctx.device), None),
        ("k of 2 tokens and v of 1", gs.tensor((h, 2, d), seed, device=ctx.device), ok),
        (f"v with {h + 1} heads (k is right)", ok, gs.tensor((h + 1, 1, d), seed, device=ctx.device)),
    ]
    for what, k, v in bad:
        with expect_raises(ctx, "ValueError", what=f"append of {what}"):
            sub.call("append", k, k if v is None else v)
    evicted = model.num_seen > s + w
    too_many = (w + 1) if evicted else model.num_cached + 1
    for what, q in ((f"{too_many} queries ({model.num_seen} tokens seen, {model.num_cached} cached, window {w})",
                     gs.tensor((h, too_many, d), seed, device=ctx.device)),
                    ("no queries", gs.tensor((h, 0, d), seed, device=ctx.device)),
                    (f"q with {h + 1} heads", gs.tensor((h + 1, 1, d), seed, device=ctx.device))):
        with expect_raises(ctx, "ValueError", what=f"attend with {what}"):
            sub.call("attend", q)
    _same_tokens(sub, model, "after the rejected calls")
    _same_values(ctx, sub, model, "after the rejected calls")
    _same_keys(sub, model, "after the rejected calls")


@check("keys(), values() and attend return new tensors", max_examples=3,
       hint="Return copies (.clone(), or tensors built by cat/index_select): a view into the cache's "
            "own buffers lets the caller change the cache by writing into the result.")
@given(cfg=configs(), fill=st.integers(1, 12), seed=gs.seeds())
def returns_copies(ctx: Ctx, cfg, fill: int, seed: int) -> None:
    note(f"num_sinks={cfg[0]}, window={cfg[1]}; {fill} tokens")
    sub, _ = _stream(ctx, cfg, [fill], seed)
    for method, args in (("keys", ()), ("values", ()), ("attend", (gs.tensor((cfg[2], 1, cfg[3]), seed, device=ctx.device),))):
        sub.call(method, *args)
        aliases = ctx.sub.last_call_stats().get("aliases") or []
        if aliases:
            raise CheckFailed(f"{method}() returned {' and '.join(aliases)} sharing memory with the cache "
                              f"({fill} tokens): the statement asks for new tensors")


@check("memory stays bounded over a long stream",
       hint="Drop evicted tokens: the cache never needs more than num_sinks + window tokens, plus the "
            "chunk being appended. Do not keep the whole stream and slice it.")
def bounded_memory(ctx: Ctx) -> None:
    cfg, seed = (2, 4, 2, 8), ctx.seed % 2**16
    s, w, h, d = cfg
    ctx.note(f"num_sinks={s}, window={w}, num_heads={h}, head_dim={d}; 200 tokens in chunks of 1 to 7")
    sub, model = _new(ctx, cfg)
    sizes = [1 + (seed + 3 * i) % 7 for i in range(200)]
    total = 0
    for i, t in enumerate(sizes):
        if total >= 200:
            break
        k, v = _kv(cfg, t, seed + i, ctx.device)
        sub.call("append", k, v)
        model.append(k.cpu(), v.cpu())
        total += t
        largest = int(ctx.sub.last_call_stats().get("max_numel") or 0)
        limit = h * (s + w + t) * d
        if largest > limit:
            raise CheckFailed(f"append #{i + 1} ({t} tokens, {total} seen) built a tensor of {largest} elements; "
                              f"the cache plus the chunk is {limit} ({s} sinks + window {w} + {t} new, "
                              f"x {h} heads x {d}): evicted tokens must be dropped")
    _same_tokens(sub, model, f"after {total} tokens")
    _same_values(ctx, sub, model, f"after {total} tokens")


def _program(ctx: Ctx, cfg) -> type[RuleBasedStateMachine]:
    """A state machine whose every step runs on the submission and on the model."""
    s, w, _, _ = cfg

    class StreamProgram(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.sub, self.model = _new(ctx, cfg)
            self.seed = 0
            self.steps: list[str] = []

        @rule(t=st.integers(1, s + w + 2))
        def append(self, t: int) -> None:
            self.seed += 2
            k, v = _kv(cfg, t, self.seed, ctx.device)
            self.steps.append(f"append({t} tokens)")
            self.sub.call("append", k, v)
            self.model.append(k.cpu(), v.cpu())

        @precondition(lambda self: self.model.num_seen > 0)
        @rule(data=st.data())
        def attend(self, data) -> None:
            most = self.model.num_cached if self.model.num_seen <= s + w else w
            tq = data.draw(st.integers(1, most), label="t_q")
            self.seed += 2
            self.steps.append(f"attend({tq} queries)")
            self._wrap(lambda: _same_attention(ctx, self.sub, self.model, tq, self.seed, self._when()))

        def _when(self) -> str:
            return "after " + "; ".join(self.steps)

        def _wrap(self, fn) -> None:
            try:
                fn()
            except CheckFailed as exc:
                raise CheckFailed(f"{exc}\n  (num_sinks={s}, window={w})") from None

        @invariant()
        def same_state(self) -> None:
            """Tokens after every step; values and keys every other step and at teardown."""
            if self.steps:
                self._wrap(lambda: _same_tokens(self.sub, self.model, self._when(), counts=False))
            if self.steps and len(self.steps) % 2 == 0:
                self._contents()

        def _contents(self) -> None:
            self._wrap(lambda: (_same_tokens(self.sub, self.model, self._when()),
                                _same_values(ctx, self.sub, self.model, self._when()),
                                _same_keys(self.sub, self.model, self._when())))

        def teardown(self) -> None:
            if self.steps:
                self._contents()

    return StreamProgram


@check("random programs of append and attend match the model (stateful)", hint="Compare your cache "
       "with the rules step by step: the sinks are the stream's first tokens, the window its newest, "
       "positions are slots, keys are rotated when used.")
def stateful(ctx: Ctx) -> None:
    """Hypothesis stateful testing, seeded from the run's seed so --seed replays it, with the
    engine's shrinking cap applied here too (this check runs its own Hypothesis test)."""
    saved = hengine.MAX_SHRINKING_SECONDS
    hengine.MAX_SHRINKING_SECONDS = STATEFUL_SHRINK_SECONDS
    try:
        for i, cfg in enumerate(((2, 3, 2, 8), (0, 2, 1, 4), (4, 1, 1, 8))):
            test = get_state_machine_test(
                _program(ctx, cfg),
                settings=settings(max_examples=6, stateful_step_count=8, deadline=None, database=None,
                                  report_multiple_bugs=False, suppress_health_check=list(HealthCheck),
                                  phases=[Phase.explicit, Phase.generate, Phase.shrink]),
            )
            hypothesis.seed(ctx.seed + i)(test)()
    finally:
        hengine.MAX_SHRINKING_SECONDS = saved

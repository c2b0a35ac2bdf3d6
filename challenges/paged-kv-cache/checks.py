"""Checks for the paged-kv-cache challenge: directed checks per operation, then Hypothesis stateful
testing (a RuleBasedStateMachine) that runs random allocate/append/fork/free programs against the
submission and against the reference cache as the model, comparing contents and the exact number
of free blocks after every step."""

from __future__ import annotations

import hypothesis
import torch
from hypothesis import HealthCheck, Phase, given, note, settings
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
from inferview.graders.api import CheckFailed, Ctx, check, expect_equal, expect_raises
from inferview.reference.paged_kv_cache import PagedKVCache

HKV, D = 2, 4

STATEFUL_SHRINK_SECONDS = 6.0
"""Shrinking budget of each state machine in the stateful check (the engine gives @given checks 8 s)."""


def _kv(t: int, seed: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    return gs.tensor((HKV, t, D), seed, device=device), gs.tensor((HKV, t, D), seed + 1, device=device)


def _new(ctx: Ctx, num_blocks: int, block_size: int):
    return ctx.sub.new("PagedKVCache", num_blocks, HKV, D, block_size=block_size,
                       dtype=torch.float32, device=ctx.device)


def _expect_same(ctx: Ctx, sub, model: PagedKVCache, seq_id: int, when: str) -> None:
    expect_equal(sub.call("seq_len", seq_id), model.seq_len(seq_id), what=f"seq_len({seq_id}) {when}")
    got = sub.call("gather", seq_id)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailed(f"gather must return (keys, values), got {type(got).__name__}")
    want_k, want_v = model.gather(seq_id)
    expect_equal(got[0], want_k.to(ctx.device), what=f"keys gathered for sequence {seq_id} {when}")
    expect_equal(got[1], want_v.to(ctx.device), what=f"values gathered for sequence {seq_id} {when}")


def _expect_free(sub, model: PagedKVCache, when: str) -> None:
    expect_equal(sub.get("num_free_blocks"), model.num_free_blocks, what=f"num_free_blocks {when}")


def _expect_tables(sub, model: PagedKVCache, when: str) -> None:
    """Every live sequence's block_table is a list of physical ids in ``[0, num_blocks)``, as long
    as the model's, and shares blocks exactly where the model's does: the ids may differ, but
    (submission id, model id) must pair up one to one over all tables."""
    to_model: dict[int, int] = {}
    to_sub: dict[int, int] = {}
    for sid in sorted(model.tables):
        got = sub.call("block_table", sid)
        if not isinstance(got, list) or any(isinstance(b, bool) or not isinstance(b, int) for b in got):
            raise CheckFailed(f"block_table({sid}) must be a list of ints, got {got!r} {when}")
        want = model.block_table(sid)
        if len(got) != len(want):
            raise CheckFailed(f"block_table({sid}) has {len(got)} blocks, expected {len(want)} "
                              f"(ceil(seq_len / block_size)) {when}")
        for i, (b, m) in enumerate(zip(got, want, strict=True)):
            if not 0 <= b < model.config.num_blocks:
                raise CheckFailed(f"block_table({sid})[{i}] = {b} is not a block id in "
                                  f"[0, {model.config.num_blocks}) {when}")
            if to_model.setdefault(b, m) != m or to_sub.setdefault(m, b) != b:
                raise CheckFailed(
                    f"block_table({sid})[{i}] = {b} {when}: the tables {_tables(sub, model)} share "
                    f"blocks differently from the rules (expected the pattern of {model.tables}: fork "
                    f"shares every block, copy-on-write replaces only the writer's last block)")


def _tables(sub, model: PagedKVCache) -> dict[int, object]:
    return {sid: sub.call("block_table", sid) for sid in sorted(model.tables)}


@check("append then gather returns every token", max_examples=10, hint="Token p is in block table[p // block_size], "
       "slot p % block_size; gather reads them back in order.")
@given(block_size=st.sampled_from([1, 4, 16]), chunks=st.lists(st.integers(1, 20), min_size=1, max_size=4),
       seed=gs.seeds())
def append_gather(ctx: Ctx, block_size: int, chunks: list[int], seed: int) -> None:
    note(f"block_size={block_size}, appends of t_new={chunks}, seed={seed}")
    blocks = -(-sum(chunks) // block_size) + 2
    sub, model = _new(ctx, blocks, block_size), PagedKVCache(blocks, HKV, D, block_size)
    sub.call("allocate", 5)
    model.allocate(5)
    _expect_same(ctx, sub, model, 5, "after allocate")
    for i, t in enumerate(chunks):
        k, v = _kv(t, seed + 2 * i, ctx.device)
        sub.call("append", 5, k, v)
        model.append(5, k.cpu(), v.cpu())
        _expect_same(ctx, sub, model, 5, f"after append #{i + 1}")


@check("blocks are claimed lazily: ceil(n / block_size) per sequence", max_examples=10, hint="allocate claims nothing; "
       "append claims a block only when the last one is full.")
@given(block_size=st.sampled_from([2, 4, 16]), chunks=st.lists(st.integers(1, 9), min_size=1, max_size=4),
       seed=gs.seeds())
def lazy_blocks(ctx: Ctx, block_size: int, chunks: list[int], seed: int) -> None:
    note(f"block_size={block_size}, appends of t_new={chunks}")
    sub, model = _new(ctx, 12, block_size), PagedKVCache(12, HKV, D, block_size)
    for sid in (0, 1):
        sub.call("allocate", sid)
        model.allocate(sid)
    _expect_free(sub, model, "after allocating two empty sequences")
    for i, t in enumerate(chunks):
        if -(-(model.seq_len(i % 2) + t) // block_size) - len(model.block_table(i % 2)) > model.num_free_blocks:
            break
        k, v = _kv(t, seed + i, ctx.device)
        sub.call("append", i % 2, k, v)
        model.append(i % 2, k.cpu(), v.cpu())
        _expect_free(sub, model, f"after append #{i + 1} ({t} tokens to sequence {i % 2})")
        table = sub.call("block_table", i % 2)
        expect_equal(len(table), len(model.block_table(i % 2)), what=f"blocks owned by sequence {i % 2}")


@check("fork shares blocks and copy-on-write keeps the sequences apart", max_examples=10, hint="fork copies the block "
       "table and bumps reference counts. Before writing into a partly filled block whose count is "
       "above one, copy it to a fresh block for the writing sequence only.")
@given(block_size=st.sampled_from([2, 4]), prefix=st.integers(1, 9), t_a=st.integers(1, 5),
       t_b=st.integers(1, 5), seed=gs.seeds())
def fork_cow(ctx: Ctx, block_size: int, prefix: int, t_a: int, t_b: int, seed: int) -> None:
    note(f"block_size={block_size}; sequence 0 gets {prefix} tokens, fork 0 -> 1, then append {t_a} to 1 "
         f"and {t_b} to 0")
    sub, model = _new(ctx, 16, block_size), PagedKVCache(16, HKV, D, block_size)
    sub.call("allocate", 0)
    model.allocate(0)
    k, v = _kv(prefix, seed, ctx.device)
    sub.call("append", 0, k, v)
    model.append(0, k.cpu(), v.cpu())
    sub.call("fork", 0, 1)
    model.fork(0, 1)
    _expect_free(sub, model, "after fork (a fork claims no block)")
    _expect_same(ctx, sub, model, 1, "after fork")
    _expect_tables(sub, model, "after fork")
    for sid, t, s in ((1, t_a, seed + 10), (0, t_b, seed + 20)):
        k, v = _kv(t, s, ctx.device)
        sub.call("append", sid, k, v)
        model.append(sid, k.cpu(), v.cpu())
        for other in (0, 1):
            _expect_same(ctx, sub, model, other, f"after appending {t} tokens to sequence {sid}")
        _expect_free(sub, model, f"after appending {t} tokens to sequence {sid}")
        _expect_tables(sub, model, f"after appending {t} tokens to sequence {sid}")


@check("free keeps blocks that another sequence still shares", max_examples=10, hint="Decrement each block's reference "
       "count; only a block whose count reaches zero goes back to the free list.")
@given(block_size=st.sampled_from([2, 4]), prefix=st.integers(1, 9), more=st.integers(1, 6), seed=gs.seeds())
def free_shared(ctx: Ctx, block_size: int, prefix: int, more: int, seed: int) -> None:
    note(f"block_size={block_size}; sequence 0 gets {prefix} tokens, fork 0 -> 1, free 0, "
         f"then sequence 2 takes {more} tokens")
    sub, model = _new(ctx, 10, block_size), PagedKVCache(10, HKV, D, block_size)
    for op, args in (("allocate", (0,)), ("append", (0, *_kv(prefix, seed, ctx.device))), ("fork", (0, 1)),
                     ("free", (0,)), ("allocate", (2,)), ("append", (2, *_kv(more, seed + 5, ctx.device)))):
        sub.call(op, *args)
        getattr(model, op)(*[a.cpu() if isinstance(a, torch.Tensor) else a for a in args])
        _expect_free(sub, model, f"after {op}{args[:1]}")
    _expect_same(ctx, sub, model, 1, "after its parent was freed and its blocks could be reused")
    _expect_same(ctx, sub, model, 2, "at the end")


@check("a failed call changes nothing", max_examples=10, hint="Compute how many blocks the append needs (copy-on-write "
       "included) and raise RuntimeError before claiming or writing anything; unknown or duplicate ids "
       "and wrong shapes raise ValueError.")
@given(block_size=st.sampled_from([2, 4]), fill=st.integers(1, 8), extra=st.integers(1, 8), seed=gs.seeds())
def failures(ctx: Ctx, block_size: int, fill: int, extra: int, seed: int) -> None:
    num_blocks = 3
    fill = min(fill, num_blocks * block_size)
    note(f"block_size={block_size}, {num_blocks} blocks; sequence 0 gets {fill} tokens, then sequence 1 asks "
         f"for {num_blocks * block_size - fill + extra + block_size}")
    sub, model = _new(ctx, num_blocks, block_size), PagedKVCache(num_blocks, HKV, D, block_size)
    sub.call("allocate", 0)
    model.allocate(0)
    k, v = _kv(fill, seed, ctx.device)
    sub.call("append", 0, k, v)
    model.append(0, k.cpu(), v.cpu())
    sub.call("allocate", 1)
    model.allocate(1)
    big = num_blocks * block_size - fill + extra + block_size
    k, v = _kv(big, seed + 3, ctx.device)
    with expect_raises(ctx, "RuntimeError", what=f"append of {big} tokens with {model.num_free_blocks} free blocks"):
        sub.call("append", 1, k, v)
    _expect_free(sub, model, "after the rejected append")
    _expect_same(ctx, sub, model, 1, "after the rejected append")
    _expect_same(ctx, sub, model, 0, "after another sequence's rejected append")
    with expect_raises(ctx, "ValueError", what="allocate of an id that exists"):
        sub.call("allocate", 0)
    with expect_raises(ctx, "ValueError", what="append to an unknown id"):
        sub.call("append", 7, *_kv(1, seed, ctx.device))
    with expect_raises(ctx, "ValueError", what="fork from an unknown id"):
        sub.call("fork", 7, 8)
    with expect_raises(ctx, "ValueError", what="fork onto an id that exists"):
        sub.call("fork", 0, 1)
    with expect_raises(ctx, "ValueError", what="fork of a sequence onto its own id"):
        sub.call("fork", 0, 0)
    ok = gs.tensor((HKV, 1, D), seed + 4, device=ctx.device)
    for what, bad_k, bad_v in (
        (f"append of k with {HKV + 1} heads into a {HKV}-head cache", gs.tensor((HKV + 1, 1, D), seed, device=ctx.device), None),
        (f"append of k with head_dim {D + 1} into a head_dim-{D} cache", gs.tensor((HKV, 1, D + 1), seed, device=ctx.device), None),
        (f"append whose v has {HKV + 1} heads (k is right)", ok, gs.tensor((HKV + 1, 1, D), seed, device=ctx.device)),
        ("append of k with 2 tokens and v with 1", gs.tensor((HKV, 2, D), seed, device=ctx.device), ok),
        ("append of a 2-D k and v", gs.tensor((HKV, D), seed, device=ctx.device), None),
    ):
        with expect_raises(ctx, "ValueError", what=what):
            sub.call("append", 0, bad_k, bad_k if bad_v is None else bad_v)
    _expect_free(sub, model, "after the rejected calls")
    _expect_same(ctx, sub, model, 0, "after the rejected calls")


@check("copy-on-write counts its block before an append", max_examples=6, hint="Appending to a partly filled "
       "shared last block needs one block for the private copy on top of the new ones: when they are not "
       "all free, raise RuntimeError before copying or writing anything.")
@given(block_size=st.sampled_from([2, 4]), spare=st.sampled_from([0, 1]), seed=gs.seeds())
def cow_needs_a_block(ctx: Ctx, block_size: int, spare: int, seed: int) -> None:
    # spare=0: the copy alone does not fit; spare=1: the copy fits but the append also needs a new
    # block, so copying first and then finding no room would leave a changed cache behind
    tokens = 1 if spare == 0 else block_size
    note(f"block_size={block_size}, {2 + spare} blocks: sequence 0 gets 1 token, fork 0 -> 1, sequence 2 "
         f"takes a block, {spare} left free, then {tokens} token(s) are appended to sequence 1 (its copy "
         f"needs a block{'' if spare == 0 else ' and the tokens past it one more'})")
    sub, model = _new(ctx, 2 + spare, block_size), PagedKVCache(2 + spare, HKV, D, block_size)
    for op, args in (("allocate", (0,)), ("append", (0, *_kv(1, seed, ctx.device))), ("fork", (0, 1)),
                     ("allocate", (2,)), ("append", (2, *_kv(block_size, seed + 2, ctx.device)))):
        sub.call(op, *args)
        getattr(model, op)(*[a.cpu() if isinstance(a, torch.Tensor) else a for a in args])
        _expect_free(sub, model, f"after {op}{args[:1]}")
    with expect_raises(ctx, "RuntimeError", what=f"an append needing {1 + spare} blocks (copy-on-write "
                                                 f"included) with {spare} free"):
        sub.call("append", 1, *_kv(tokens, seed + 4, ctx.device))
    _expect_free(sub, model, "after the rejected append")
    for sid in (0, 1, 2):
        _expect_same(ctx, sub, model, sid, "after the rejected append")
    _expect_tables(sub, model, "after the rejected append")


@check("gather returns new tensors, never views into the pool", max_examples=5, hint="Slicing one block "
       "of the pool returns a view: writing into it (or an in-place op on it) would change the cache. "
       "Copy (torch.cat makes a new tensor; .clone() a single block's slice).")
@given(block_size=st.sampled_from([4, 16]), t=st.integers(1, 40), seed=gs.seeds())
def gather_copies(ctx: Ctx, block_size: int, t: int, seed: int) -> None:
    note(f"block_size={block_size}, {t} tokens ({-(-t // block_size)} block(s))")
    sub = _new(ctx, 16, block_size)
    sub.call("allocate", 0)
    sub.call("append", 0, *_kv(t, seed, ctx.device))
    sub.call("gather", 0)
    aliases = ctx.sub.last_call_stats().get("aliases") or []
    if aliases:
        raise CheckFailed(f"gather(0) returned {' and '.join(aliases)} sharing memory with the pool "
                          f"({t} tokens, block_size {block_size}): the statement asks for new tensors")


@check("a freed id is unknown, and can be allocated again", max_examples=5, hint="free removes the sequence "
       "entirely: later calls with its id raise ValueError, as for any unknown id, until it is allocated "
       "again as a new, empty sequence.")
@given(block_size=st.sampled_from([2, 4]), t=st.integers(1, 6), seed=gs.seeds())
def freed_ids(ctx: Ctx, block_size: int, t: int, seed: int) -> None:
    note(f"block_size={block_size}; sequence 3 gets {t} tokens and is freed, then its id is reused")
    sub, model = _new(ctx, 8, block_size), PagedKVCache(8, HKV, D, block_size)
    with expect_raises(ctx, "ValueError", what="free of an id that was never allocated"):
        sub.call("free", 9)
    sub.call("allocate", 3)
    sub.call("append", 3, *_kv(t, seed, ctx.device))
    sub.call("free", 3)
    for op, args in (("seq_len", (3,)), ("gather", (3,)), ("block_table", (3,)), ("free", (3,)),
                     ("append", (3, *_kv(1, seed, ctx.device))), ("fork", (3, 4))):
        with expect_raises(ctx, "ValueError", what=f"{op}(3, ...) after free(3)"):
            sub.call(op, *args)
    sub.call("allocate", 3)
    model.allocate(3)
    _expect_same(ctx, sub, model, 3, "after allocating the freed id again")
    _expect_free(sub, model, "after allocating the freed id again")
    sub.call("append", 3, *_kv(t, seed + 2, ctx.device))
    model.append(3, *_kv(t, seed + 2, "cpu"))
    _expect_same(ctx, sub, model, 3, "after appending to the reused id")


@check("the pool keeps its dtype", max_examples=4, hint="Allocate the pool with the dtype passed to the "
       "constructor; gather returns keys and values in that dtype.")
@given(dtype=st.sampled_from([torch.float16, torch.bfloat16, torch.float64]), t=st.integers(1, 9), seed=gs.seeds())
def pool_dtype(ctx: Ctx, dtype: torch.dtype, t: int, seed: int) -> None:
    note(f"dtype={dtype}, block_size=4, {t} tokens")
    sub = ctx.sub.new("PagedKVCache", 4, HKV, D, block_size=4, dtype=dtype, device=ctx.device)
    k = gs.tensor((HKV, t, D), seed, dtype=dtype, device=ctx.device)
    v = gs.tensor((HKV, t, D), seed + 1, dtype=dtype, device=ctx.device)
    sub.call("allocate", 0)
    sub.call("append", 0, k, v)
    got = sub.call("gather", 0)
    expect_equal(got[0], k, what="keys gathered from the pool")
    expect_equal(got[1], v, what="values gathered from the pool")


def _program(ctx: Ctx, num_blocks: int, block_size: int) -> type[RuleBasedStateMachine]:
    """A state machine whose every step runs on the submission and on the model."""

    class PagedProgram(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.sub = _new(ctx, num_blocks, block_size)
            self.model = PagedKVCache(num_blocks, HKV, D, block_size)
            self.next_id = 0
            self.seed = 0
            self.steps: list[str] = []

        def _do(self, text: str, op: str, *args) -> None:
            self.steps.append(text)
            margs = [a.cpu() if isinstance(a, torch.Tensor) else a for a in args]
            try:
                getattr(self.model, op)(*margs)
            except RuntimeError:
                with expect_raises(ctx, "RuntimeError", what=f"{text} with too few free blocks"):
                    self.sub.call(op, *args)
                return
            self.sub.call(op, *args)

        @rule()
        def allocate(self) -> None:
            self._do(f"allocate({self.next_id})", "allocate", self.next_id)
            self.next_id += 1

        @precondition(lambda self: self.model.tables)
        @rule(data=st.data(), t=st.integers(1, 2 * block_size + 1))
        def append(self, data, t: int) -> None:
            sid = data.draw(st.sampled_from(sorted(self.model.tables)), label="seq_id")
            self.seed += 2
            k, v = _kv(t, self.seed, ctx.device)
            self._do(f"append({sid}, {t} tokens)", "append", sid, k, v)

        @precondition(lambda self: self.model.tables)
        @rule(data=st.data())
        def fork(self, data) -> None:
            src = data.draw(st.sampled_from(sorted(self.model.tables)), label="src_id")
            self._do(f"fork({src}, {self.next_id})", "fork", src, self.next_id)
            self.next_id += 1

        @precondition(lambda self: self.model.tables)
        @rule(data=st.data())
        def free(self, data) -> None:
            sid = data.draw(st.sampled_from(sorted(self.model.tables)), label="seq_id")
            self._do(f"free({sid})", "free", sid)

        def _compare(self, seq_ids) -> None:
            when = "after " + "; ".join(self.steps)
            try:
                _expect_free(self.sub, self.model, when)
                for sid in seq_ids:
                    _expect_same(ctx, self.sub, self.model, sid, when)
            except CheckFailed as exc:
                raise CheckFailed(f"{exc}\n  (block_size={block_size}, {num_blocks} blocks)") from None

        @invariant()
        def same_state(self) -> None:
            """Free blocks after every step; contents of every live sequence every third step (a
            write that leaks into a sharing sequence shows there, and at teardown)."""
            if self.steps and len(self.steps) % 3 == 0:
                self._compare(sorted(self.model.tables))
            elif self.steps:
                self._compare([])

        def teardown(self) -> None:
            if self.steps:
                self._compare(sorted(self.model.tables))

    return PagedProgram


@check("random programs of allocate/append/fork/free match the model (stateful)", hint="Compare your "
       "bookkeeping with the rules: blocks claimed lazily, fork shares, copy-on-write only for a partly "
       "filled shared last block, free releases a block when its last owner goes.")
def stateful(ctx: Ctx) -> None:
    """Hypothesis stateful testing, seeded from the run's seed so --seed replays it.

    The engine caps shrinking only for ``@given`` checks; this one runs its own Hypothesis test, so
    it applies the same cap (``STATEFUL_SHRINK_SECONDS`` per machine) itself. Uncapped, shrinking a
    failing program took 30-50 s of the 120 s limit, and a slow machine could turn ``failed`` into
    ``timeout``.
    """
    saved = hengine.MAX_SHRINKING_SECONDS
    hengine.MAX_SHRINKING_SECONDS = STATEFUL_SHRINK_SECONDS
    try:
        for block_size, num_blocks in ((2, 8), (4, 6)):
            test = get_state_machine_test(
                _program(ctx, num_blocks, block_size),
                settings=settings(max_examples=12, stateful_step_count=10, deadline=None, database=None,
                                  report_multiple_bugs=False,
                                  suppress_health_check=list(HealthCheck),
                                  phases=[Phase.explicit, Phase.generate, Phase.shrink]),
            )
            hypothesis.seed(ctx.seed + block_size)(test)()
    finally:
        hengine.MAX_SHRINKING_SECONDS = saved

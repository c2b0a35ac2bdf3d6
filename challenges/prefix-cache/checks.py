"""Checks for the prefix-cache challenge: directed checks per rule (vLLM's worked example among
them), then Hypothesis stateful testing of random allocate/append/free programs over prompts that
share prefixes, against the reference model.

Everything a caller can see is compared exactly after every step: the tokens each allocate hits,
every live sequence's block table, num_free_blocks and num_cached_blocks. The statement fixes
which block every claim takes (the head of the free queue), so block ids need no relabelling. The
hash is never compared: it is internal, so any collision-free hash of (parent hash, tokens) passes,
and a hash that ignores the parent shows up as a hit that should have been a miss.
"""

from __future__ import annotations

import random

import hypothesis
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import engine as hengine
from hypothesis.stateful import (
    RuleBasedStateMachine,
    get_state_machine_test,
    invariant,
    precondition,
    rule,
)
from inferview.graders.api import (
    CheckFailed,
    Ctx,
    SubmissionError,
    check,
    expect_equal,
    expect_raises,
)
from inferview.reference.prefix_cache import PrefixCache

STATEFUL_SHRINK_SECONDS = 6.0
"""Shrinking budget of each state machine in the stateful check (the engine gives @given checks 8 s)."""


class Pair:
    """The submission and the reference model, driven together; ``log`` is the program so far."""

    def __init__(self, ctx: Ctx, num_blocks: int, block_size: int) -> None:
        self.ctx = ctx
        self.sub = ctx.sub.new("PrefixCache", num_blocks, block_size)
        self.model = PrefixCache(num_blocks, block_size)
        self.log: list[str] = [f"PrefixCache(num_blocks={num_blocks}, block_size={block_size})"]

    @property
    def when(self) -> str:
        return "after " + "; ".join(self.log)

    def do(self, op: str, *args: object) -> object:
        """Run ``op`` on both; the submission must raise exactly when the model does, and return
        what it returns (``allocate``'s hit count). The statement's own errors raised where the
        model succeeds are wrong results (``failed``); any other exception is an ``error``."""
        shown = ", ".join(_short(a) for a in args)
        self.log.append(f"{op}({shown})")
        try:
            want = getattr(self.model, op)(*args)
        except (ValueError, RuntimeError) as exc:
            with expect_raises(self.ctx, type(exc).__name__, what=f"{op}({shown}) [{exc}], {self.when}"):
                self.sub.call(op, *args)
            self.log[-1] += f" -> {type(exc).__name__}"
            return None
        try:
            got = self.sub.call(op, *args)
        except SubmissionError as exc:
            if exc.type_name not in ("ValueError", "RuntimeError"):
                raise
            raise CheckFailed(f"{op}({shown}) raised {exc.type_name}: {exc.message}; it should have "
                              f"succeeded, {self.when}") from None
        if op == "allocate":
            expect_equal(got, want, what=f"tokens hit by {op}({shown}), {self.when}")
            self.log[-1] += f" -> {want}"
        return want

    def compare(self, note_text: str = "", seq_ids: list[int] | None = None) -> None:
        """Both counts and the live block tables (``seq_ids``, default all), as the model has them."""
        when = self.when + (f" ({note_text})" if note_text else "")
        expect_equal(self.sub.get("num_free_blocks"), self.model.num_free_blocks, what=f"num_free_blocks {when}")
        expect_equal(self.sub.get("num_cached_blocks"), self.model.num_cached_blocks,
                     what=f"num_cached_blocks {when}")
        for sid in sorted(self.model.tables) if seq_ids is None else seq_ids:
            got = self.sub.call("block_table", sid)
            if not isinstance(got, list) or any(isinstance(b, bool) or not isinstance(b, int) for b in got):
                raise CheckFailed(f"block_table({sid}) must be a list of ints, got {got!r} {when}")
            expect_equal(got, self.model.block_table(sid), what=f"block_table({sid}) {when}")
            if self.ctx.sub.last_call_stats().get("aliases"):
                raise CheckFailed(f"block_table({sid}) returned the cache's own list {when}: a "
                                  "caller that changes it would change the cache; return a copy")


def _short(a: object) -> str:
    if isinstance(a, list) and len(a) > 12:
        return f"[{', '.join(map(str, a[:10]))}, ... {len(a)} tokens]"
    return repr(a)


def _tokens(n: int, seed: int, vocab: int = 1000) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(vocab) for _ in range(n)]


# ---- directed checks ------------------------------------------------------------------------


@check("vLLM's worked example: hits, touched blocks, the free queue's order and eviction",
       hint="Replay the example in the statement by hand: which blocks leave the free queue when a "
            "prompt hits, in what order a freed sequence's blocks join its tail, and which block the "
            "next claim takes.")
def vllm_example(ctx: Ctx) -> None:
    """The example of vLLM's prefix-caching design doc (10 blocks of 4 tokens), step by step."""
    p0 = _tokens(15, 1)
    p1 = p0[:10] + _tokens(4, 2)
    p2 = p0[:12] + _tokens(17, 3)
    pair = Pair(ctx, 10, 4)
    for op, args in (("allocate", (0, p0)), ("append", (0, [7])), ("append", (0, [8])),
                     ("allocate", (1, p1)), ("free", (0,)), ("free", (1,)), ("allocate", (2, p2))):
        pair.do(op, *args)
        pair.compare()


@check("a prompt hits the full blocks it shares with a cached prompt, even after that one is freed",
       max_examples=5,
       hint="Hash each full block of the prompt, chaining the previous block's hash, and take the "
            "longest run of leading hashes that are cached. A freed block in the free queue still "
            "holds its hash: a hit takes it out of the queue.")
@given(bs=st.sampled_from([1, 2, 4]), shared=st.integers(0, 12), a_more=st.integers(0, 6),
       b_more=st.integers(1, 6), free_first=st.booleans(), seed=st.integers(0, 999))
@example(bs=4, shared=9, a_more=3, b_more=2, free_first=True, seed=0)
def shared_prefix(ctx: Ctx, bs: int, shared: int, a_more: int, b_more: int, free_first: bool, seed: int) -> None:
    common = _tokens(shared, seed)
    a, b = common + _tokens(a_more, seed + 1), common + _tokens(b_more, seed + 2)
    if not a:
        a = [1]
    pair = Pair(ctx, 12, bs)
    pair.do("allocate", 0, a)
    if free_first:
        pair.do("free", 0)
    pair.compare()
    pair.do("allocate", 1, b)
    pair.compare()


@check("a block's hash chains its parent's: equal blocks after different prefixes do not hit",
       max_examples=5,
       hint="Hash (parent hash, block tokens), not the block's tokens alone: the keys and values of a "
            "block depend on every token before it.")
@given(bs=st.sampled_from([1, 2, 4]), blocks=st.integers(2, 3), seed=st.integers(0, 999))
@example(bs=2, blocks=2, seed=1)
def chained(ctx: Ctx, bs: int, blocks: int, seed: int) -> None:
    tail = _tokens(bs * (blocks - 1), seed)
    pair = Pair(ctx, 12, bs)
    pair.do("allocate", 0, _tokens(bs, seed + 1) + tail + [5])
    pair.do("allocate", 1, _tokens(bs, seed + 2) + tail + [5])  # same later blocks, other first block
    pair.compare()
    pair.do("free", 0)
    pair.do("allocate", 2, tail + tail[:bs])  # the shared blocks moved to the front: still a miss
    pair.compare()


LOOKALIKE_BLOCKS = (
    (2, [1, 2, 3, 45], [1, 2, 34, 5]),  # same digits, split differently: "12" + "345" both ways
    (2, [7, 8, 3, 5], [7, 8, 5, 3]),  # the same tokens in another order
    (2, [7, 8, 1, 4], [7, 8, 2, 3]),  # the same sum
    (1, [9, 4464], [9, 4464 + 2**16]),  # equal modulo 2**16
    (1, [9, 5], [9, 5 + 2**32]),  # equal modulo 2**32
)
"""(block_size, first prompt, second prompt): each pair shares exactly its first block."""


@check("a block hash tells apart every two token lists: digits, order, sums and wide token ids",
       hint="Hash the block's tokens as a sequence of whole ids: a tuple, or bytes with a fixed width "
            "wide enough for any id. Joining digits without a separator, sorting, summing or "
            "truncating ids to 16 or 32 bits makes two different blocks look alike.")
def lookalike_blocks(ctx: Ctx) -> None:
    """Each second prompt must hit only the first block of the first one."""
    for bs, a, b in LOOKALIKE_BLOCKS:
        pair = Pair(ctx, 6, bs)
        pair.do("allocate", 0, a)
        pair.do("allocate", 1, b)
        pair.compare()


@check("the hit stops at the first block that is not cached", max_examples=4,
       hint="The hit is a run of LEADING blocks: at the first hash that is not cached, stop, even if "
            "later hashes are. And a fresh block that fills with a hash already cached stays "
            "uncached, in allocate as in append: the cache keeps the block it had.")
@given(bs=st.sampled_from([2, 4]), seed=st.integers(0, 999))
@example(bs=2, seed=8)
def hit_stops_at_miss(ctx: Ctx, bs: int, seed: int) -> None:
    """Builds a cache where the second block's hash is gone but the third's is not: sequence 1's
    copy of the second block is an uncached duplicate, its third block is cached, and the cached
    second block (sequence 0's) is then evicted. Sequence 3 then recomputes the second and third
    blocks: its third is a duplicate (in allocate this time), so sequence 4 hits sequence 1's."""
    x, y, z = _tokens(bs, seed), _tokens(bs, seed + 1), _tokens(bs, seed + 2)
    pair = Pair(ctx, 5, bs)
    for op, args in (("allocate", (0, x + y[:-1])), ("allocate", (1, x + y[:-1])), ("append", (0, y[-1:])),
                     ("append", (1, y[-1:])), ("append", (1, z)), ("free", (0,)),
                     ("allocate", (2, _tokens(2 * bs, seed + 3))), ("free", (2,))):
        pair.do(op, *args)
    pair.compare("the first block is cached, the second no longer is, the third is")
    pair.do("allocate", 3, x + y + z)  # hits one block; its third is a duplicate of sequence 1's
    pair.compare()
    pair.do("allocate", 4, x + y + z)  # all three hit, the third in sequence 1's block
    pair.compare()


@check("freed blocks join the free queue last block first, and the head is evicted first",
       max_examples=5,
       hint="free walks the table backwards, appending each block whose count reaches 0 to the tail "
            "of the free queue; a claim takes the head. So the deepest block of the least recently "
            "freed sequence goes first, and its prefix survives longest.")
@given(bs=st.sampled_from([1, 2]), a=st.integers(2, 4), b=st.integers(1, 3), take=st.integers(1, 4),
       seed=st.integers(0, 999))
@example(bs=2, a=3, b=2, take=2, seed=2)
def lru_order(ctx: Ctx, bs: int, a: int, b: int, take: int, seed: int) -> None:
    num_blocks = a + b
    pa, pb = _tokens(a * bs, seed), _tokens(b * bs, seed + 1)
    pair = Pair(ctx, num_blocks, bs)
    pair.do("allocate", 0, pa)
    pair.do("allocate", 1, pb)
    pair.do("free", 0)
    pair.do("free", 1)
    pair.do("allocate", 2, _tokens(min(take, num_blocks) * bs, seed + 2))  # evicts from the head
    pair.compare()
    pair.do("free", 2)
    pair.do("allocate", 3, pa)  # what is left of sequence 0's prefix hits
    pair.compare()


@check("blocks in use are never evicted: a hit leaves the free queue before anything is claimed",
       max_examples=5,
       hint="Touch the hit blocks first (reference count + 1, and out of the free queue if they were "
            "in it), then claim fresh blocks from the head. Leaving a hit block in the queue lets the "
            "next claim hand it to someone else while it is in use.")
@given(bs=st.sampled_from([1, 2, 4]), hit=st.integers(1, 3), more=st.integers(1, 3), seed=st.integers(0, 999))
@example(bs=2, hit=2, more=2, seed=3)
def touch_first(ctx: Ctx, bs: int, hit: int, more: int, seed: int) -> None:
    prompt = _tokens(hit * bs, seed)
    pair = Pair(ctx, hit + more, bs)
    pair.do("allocate", 0, prompt)
    pair.do("free", 0)  # the whole pool is free, its head holding the prompt's blocks
    pair.do("allocate", 1, prompt + _tokens(more * bs, seed + 1))  # hits them and claims the rest
    pair.compare("every block is in use; none may be in the free queue")


@check("an evicted block's hash is forgotten, and a reused block is cached under its new content",
       max_examples=5,
       hint="When a claim takes a cached block from the free queue, delete its hash from the cache "
            "before it is reused; otherwise a later prompt hits a block that now holds other tokens.")
@given(bs=st.sampled_from([1, 2, 4]), n=st.integers(1, 3), seed=st.integers(0, 999))
@example(bs=2, n=2, seed=4)
def eviction_forgets(ctx: Ctx, bs: int, n: int, seed: int) -> None:
    old, new = _tokens(n * bs, seed), _tokens(n * bs, seed + 1)
    pair = Pair(ctx, n, bs)
    pair.do("allocate", 0, old)
    pair.do("free", 0)
    pair.do("allocate", 1, new)  # evicts every block of `old`
    pair.do("free", 1)
    pair.compare()
    pair.do("allocate", 2, old)  # a miss, and it evicts `new` in turn
    pair.compare()


@check("blocks filled by append are cached; a partly filled block never is",
       max_examples=5,
       hint="Cache a block the moment it becomes full, in append as in allocate, chaining the hash of "
            "the block before it. A block that is not full is never hashed, shared or hit.")
@given(bs=st.sampled_from([2, 4]), prompt=st.integers(1, 9), gen=st.lists(st.integers(1, 5), min_size=1,
       max_size=3), seed=st.integers(0, 999))
@example(bs=4, prompt=3, gen=[1, 4], seed=5)
def append_caches(ctx: Ctx, bs: int, prompt: int, gen: list[int], seed: int) -> None:
    pair = Pair(ctx, 16, bs)
    tokens = _tokens(prompt, seed)
    pair.do("allocate", 0, tokens)
    for i, t in enumerate(gen):
        more = _tokens(t, seed + 10 + i)
        tokens += more
        pair.do("append", 0, more)
        pair.compare()
    pair.do("allocate", 1, list(tokens))  # the generated text hits too, up to the last full block
    pair.compare()


@check("a block that fills with content already cached stays uncached",
       max_examples=5,
       hint="The cache maps a hash to one block. When a block becomes full and its hash is already "
            "cached (another sequence computed the same tokens), leave the new block uncached and "
            "leave the cached one where it is.")
@given(bs=st.sampled_from([2, 4]), partial=st.integers(1, 3), seed=st.integers(0, 999))
@example(bs=2, partial=1, seed=6)
def duplicates(ctx: Ctx, bs: int, partial: int, seed: int) -> None:
    partial = min(partial, bs - 1)
    prompt, rest = _tokens(bs + partial, seed), _tokens(bs - partial, seed + 1)
    pair = Pair(ctx, 5, bs)
    pair.do("allocate", 0, prompt)
    pair.do("allocate", 1, prompt)  # hits the first block; its own copy of the partial one
    pair.do("append", 0, rest)
    pair.do("append", 1, rest)  # fills a block with the same hash as sequence 0's
    pair.compare()
    pair.do("free", 0)  # sequence 0's copy joins the free queue, still cached
    pair.do("allocate", 2, _tokens(3 * bs, seed + 2))  # claims 3 fresh blocks: evicts it
    pair.compare()
    pair.do("free", 2)
    pair.do("allocate", 3, prompt + rest)  # the first block hits; the second is no longer cached
    pair.compare()


@check("a failed call changes nothing",
       max_examples=5,
       hint="Count before you touch: allocate may claim the free queue's length minus the hit blocks "
            "sitting in it; raise RuntimeError before touching or claiming anything. Unknown or "
            "existing ids and empty token lists raise ValueError.")
@given(bs=st.sampled_from([1, 2, 4]), hit=st.integers(1, 3), seed=st.integers(0, 999))
@example(bs=2, hit=2, seed=7)
def failures(ctx: Ctx, bs: int, hit: int, seed: int) -> None:
    prompt = _tokens(hit * bs, seed)
    pair = Pair(ctx, hit + 2, bs)
    pair.do("allocate", 0, prompt)
    pair.do("free", 0)
    # `hit` cached blocks and 2 empty ones are free; this prompt hits `hit` and needs 3 fresh
    pair.do("allocate", 1, prompt + _tokens(3 * bs, seed + 1))
    pair.compare("after the rejected allocate")
    pair.do("allocate", 2, prompt + _tokens(2 * bs, seed + 2))  # exactly fits
    pair.compare()
    pair.do("append", 2, [1])  # the pool is full
    for op, args in (("allocate", (2, [1])), ("allocate", (5, [])), ("append", (9, [1])),
                     ("append", (2, [])), ("free", (9,)), ("block_table", (9,))):
        pair.do(op, *args)
    pair.compare("after the rejected calls")
    pair.do("free", 2)
    pair.do("allocate", 2, prompt)  # a freed id can be allocated again
    pair.compare()
    pair.do("free", 2)
    pair.do("free", 2)  # unknown again
    pair.do("block_table", 2)
    pair.compare()


# ---- stateful -------------------------------------------------------------------------------


def _program(ctx: Ctx, num_blocks: int, block_size: int) -> type[RuleBasedStateMachine]:
    """A state machine whose every step runs on the submission and on the model. Tokens come from a
    vocabulary of 3 and new prompts reuse prefixes of earlier sequences, so hits, shared blocks,
    evictions and duplicates are all common."""

    class Program(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.pair = Pair(ctx, num_blocks, block_size)
            self.next_id = 0
            self.history: list[list[int]] = []  # every sequence's tokens so far
            self.touched: int | None = None  # the sequence the last step allocated or appended to

        @rule(data=st.data(), reuse=st.booleans(), extra=st.lists(st.integers(0, 2), max_size=2 * block_size + 1))
        def allocate(self, data, reuse: bool, extra: list[int]) -> None:
            prompt: list[int] = []
            if reuse and self.history:
                src = data.draw(st.sampled_from(self.history), label="prefix of")
                prompt = src[: data.draw(st.integers(0, len(src)), label="prefix length")]
            prompt = prompt + extra
            self.pair.do("allocate", self.next_id, prompt)
            self.touched = self.next_id
            if self.next_id in self.pair.model.tables:
                self.history.append(list(prompt))
            self.next_id += 1

        @precondition(lambda self: self.pair.model.tables)
        @rule(data=st.data(), tokens=st.lists(st.integers(0, 2), min_size=1, max_size=block_size + 1))
        def append(self, data, tokens: list[int]) -> None:
            sid = data.draw(st.sampled_from(sorted(self.pair.model.tables)), label="seq_id")
            self.pair.do("append", sid, tokens)
            self.touched = sid
            self.history.append(list(self.pair.model.tokens[sid]))

        @precondition(lambda self: self.pair.model.tables)
        @rule(data=st.data())
        def free(self, data) -> None:
            sid = data.draw(st.sampled_from(sorted(self.pair.model.tables)), label="seq_id")
            self.pair.do("free", sid)
            self.touched = None

        @invariant()
        def same_state(self) -> None:
            """Both counts after every step, with the table the step built; every live table every
            fourth step and at the end (a step that corrupts another sequence's table shows there,
            and in the counts at once)."""
            steps = len(self.pair.log) - 1
            if steps and steps % 4 == 0:
                self.pair.compare()
            elif steps:
                live = [self.touched] if self.touched in self.pair.model.tables else []
                self.pair.compare(seq_ids=live)

        def teardown(self) -> None:
            if len(self.pair.log) > 1:
                self.pair.compare()

    return Program


@check("random programs of allocate/append/free match the model (stateful)", hint="Compare your "
       "bookkeeping with the rules step by step: touched hits, claims from the head, caching on full, "
       "release last block first to the tail, eviction forgets the hash.")
def stateful(ctx: Ctx) -> None:
    """Hypothesis stateful testing, seeded from the run's seed so --seed replays it.

    The engine caps shrinking only for ``@given`` checks; this one runs its own Hypothesis test, so
    it applies the same kind of cap (``STATEFUL_SHRINK_SECONDS`` per machine) itself.
    """
    saved = hengine.MAX_SHRINKING_SECONDS
    hengine.MAX_SHRINKING_SECONDS = STATEFUL_SHRINK_SECONDS
    try:
        for block_size, num_blocks in ((1, 5), (2, 6), (3, 4)):
            test = get_state_machine_test(
                _program(ctx, num_blocks, block_size),
                settings=settings(max_examples=7, stateful_step_count=10, deadline=None, database=None,
                                  report_multiple_bugs=False, suppress_health_check=list(HealthCheck),
                                  phases=[Phase.explicit, Phase.generate, Phase.shrink]),
            )
            hypothesis.seed(ctx.seed + block_size)(test)()
    finally:
        hengine.MAX_SHRINKING_SECONDS = saved


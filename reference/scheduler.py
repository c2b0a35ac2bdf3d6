"""One step of a continuous-batching scheduler: a token budget, a KV block budget, chunked prefill
and preemption by recompute.

Continuous (iteration-level) batching re-decides the batch at every model step (Yu et al. 2022,
*Orca*, OSDI 2022). This module follows the FCFS policy of vLLM V1's scheduler
(``vllm/v1/core/sched/scheduler.py``, ``Scheduler.schedule``), which has no separate prefill and
decode phases: every request has ``num_tokens`` (prompt plus the output sampled so far) and
``num_computed`` (tokens whose keys and values are in the cache), and a step gives each request
some of the tokens it still lacks.

1. **Running requests first**, in running order (which is arrival order). Each gets
   ``min(num_tokens - num_computed, budget left)`` tokens: one for a decode, the rest of its prompt
   (cut to the budget) for a request still in its prefill. The step's tokens need
   ``ceil((c + n) / block_size) - ceil(c / block_size)`` new KV blocks. When too few are free, the
   **last** running request (the latest arrival) is preempted: its blocks are freed, its computed
   tokens are dropped (it will recompute them), and it goes back to the front of the waiting queue.
   If the request being scheduled is itself the last one, it is preempted and the running phase
   ends.
2. **Waiting requests next**, only if nothing was preempted in this step, in queue order, while
   budget is left and fewer than ``max_num_seqs`` requests run: each gets ``min(num_tokens, budget
   left)`` tokens (chunked prefill), and admission stops at the first one whose blocks do not fit.
   Admission never preempts.

Because decodes need one token each and vLLM requires ``max_num_batched_tokens >= max_num_seqs``
(``SchedulerConfig`` checks it), every running decode is scheduled each step unless blocks run out;
the running list is decodes followed by at most one request still in its prefill, so "running
decodes first, then the chunked prefills, then new requests" is what the loop does.

A running request holds ``ceil(num_computed / block_size)`` blocks between steps. The engine
around the scheduler (``ServingLoop``) advances ``num_computed`` by the scheduled tokens, samples a
token when a request has computed all of its tokens, and retires finished requests.

The challenge ``continuous-batching`` asks for ``schedule_step`` with the same contract.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = [
    "Request",
    "SchedulerConfig",
    "ServingLoop",
    "StepResult",
    "blocks_for",
    "schedule",
    "schedule_step",
    "step_violations",
]


def blocks_for(num_tokens: int, block_size: int) -> int:
    """KV blocks that hold ``num_tokens`` tokens: ``ceil(num_tokens / block_size)``."""
    return -(-num_tokens // block_size)


@dataclass(frozen=True)
class SchedulerConfig:
    """The step's limits (vLLM: ``max_num_batched_tokens``, ``block_size``, ``max_num_seqs``)."""

    token_budget: int
    block_size: int
    max_num_seqs: int

    def __post_init__(self) -> None:
        if self.block_size < 1 or self.max_num_seqs < 1 or self.token_budget < self.max_num_seqs:
            raise ValueError(f"need block_size >= 1 and token_budget >= max_num_seqs >= 1, got {self}")


@dataclass(frozen=True)
class Request:
    """A request as the scheduler sees it: its id, tokens so far, and tokens already cached."""

    id: int
    num_tokens: int
    num_computed: int = 0

    @property
    def remaining(self) -> int:
        """Tokens not yet in the cache."""
        return self.num_tokens - self.num_computed

    @classmethod
    def from_dict(cls, d: dict) -> Request:
        """From the challenge's ``{"id", "num_tokens", "num_computed"}`` dict."""
        return cls(int(d["id"]), int(d["num_tokens"]), int(d["num_computed"]))

    def as_dict(self) -> dict:
        """The challenge's dict form."""
        return {"id": self.id, "num_tokens": self.num_tokens, "num_computed": self.num_computed}


@dataclass(frozen=True)
class StepResult:
    """What one step decided, and the queues and free blocks it leaves."""

    scheduled: list[tuple[int, int]]  # (request id, tokens this step), in scheduling order
    preempted: list[int]  # ids, in the order they were preempted (latest arrival first)
    running: list[int]  # ids running after the step, in running order
    waiting: list[int]  # ids waiting after the step, front first
    num_free_blocks: int  # free KV blocks after the step's allocations and frees

    def as_dict(self) -> dict:
        """The challenge's return value."""
        return {"scheduled": [tuple(p) for p in self.scheduled], "preempted": list(self.preempted),
                "running": list(self.running), "waiting": list(self.waiting),
                "num_free_blocks": self.num_free_blocks}


def schedule(running: Sequence[Request], waiting: Sequence[Request], num_free_blocks: int,
             config: SchedulerConfig) -> StepResult:
    """One scheduler step (vLLM V1, FCFS). See the module docstring for the rules."""
    bs = config.block_size
    budget = config.token_budget
    free = num_free_blocks
    run = list(running)
    scheduled: list[tuple[int, int]] = []
    preempted: list[Request] = []

    i = 0
    while i < len(run) and budget > 0:
        req = run[i]
        n = min(req.remaining, budget)
        need = blocks_for(req.num_computed + n, bs) - blocks_for(req.num_computed, bs)
        while need > free:  # preempt the latest arrival until the blocks fit
            victim = run.pop()
            free += blocks_for(victim.num_computed, bs)  # recompute: its KV is dropped
            preempted.append(victim)
            if victim is req:
                break
        if preempted and preempted[-1] is req:
            break  # it had to preempt itself: nobody after it is left either
        free -= need
        budget -= n
        scheduled.append((req.id, n))
        i += 1

    queue = list(waiting)
    if not preempted:
        while queue and budget > 0 and len(run) < config.max_num_seqs:
            req = queue[0]
            n = min(req.remaining, budget)
            need = blocks_for(req.num_computed + n, bs) - blocks_for(req.num_computed, bs)
            if need > free:
                break  # FCFS: a later request never jumps a blocked one
            free -= need
            budget -= n
            scheduled.append((req.id, n))
            run.append(queue.pop(0))

    # each preempted request was prepended in turn, so the earliest arrival ends up in front
    front = [r.id for r in reversed(preempted)]
    return StepResult(scheduled, [r.id for r in preempted], [r.id for r in run],
                      front + [r.id for r in queue], free)


def schedule_step(running: list[dict], waiting: list[dict], num_free_blocks: int, token_budget: int,
                  block_size: int, max_num_seqs: int) -> dict:
    """The challenge's entry point: plain dicts in and out."""
    config = SchedulerConfig(token_budget, block_size, max_num_seqs)
    return schedule([Request.from_dict(d) for d in running], [Request.from_dict(d) for d in waiting],
                    num_free_blocks, config).as_dict()


def step_violations(running: Sequence[Request], waiting: Sequence[Request], num_free_blocks: int,
                    config: SchedulerConfig, result: StepResult) -> list[str]:
    """The invariants any schedule must keep, whatever its policy; an empty list when it does.

    The token budget and ``max_num_seqs`` are never exceeded; a request gets between 1 and its
    remaining tokens; no request is scheduled twice, or both scheduled and preempted; only running
    requests are preempted; the requests are conserved (running and waiting after the step are a
    partition of those before); and the blocks are conserved: the free count after the step is
    the count before, plus the blocks of the preempted requests, minus the blocks the scheduled
    tokens claimed, and never negative.
    """
    bs = config.block_size
    by_id = {r.id: r for r in [*running, *waiting]}
    running_ids = {r.id for r in running}
    out: list[str] = []
    total = sum(n for _, n in result.scheduled)
    if total > config.token_budget:
        out.append(f"scheduled {total} tokens with a token budget of {config.token_budget}")
    ids = [rid for rid, _ in result.scheduled]
    if len(set(ids)) != len(ids):
        out.append(f"a request is scheduled more than once: {ids}")
    for rid, n in result.scheduled:
        if rid not in by_id:
            out.append(f"scheduled request {rid}, which is neither running nor waiting")
        elif not 1 <= n <= by_id[rid].remaining:
            out.append(f"request {rid} got {n} tokens; it has {by_id[rid].remaining} left to compute")
    for rid in result.preempted:
        if rid not in running_ids:
            out.append(f"preempted request {rid}, which was not running")
        if rid in ids:
            out.append(f"request {rid} is both scheduled and preempted")
    after = [*result.running, *result.waiting]
    if sorted(after) != sorted(by_id):
        out.append(f"running {result.running} + waiting {result.waiting} after the step are not the "
                   f"requests before it, each once: {sorted(by_id)}")
    if len(result.running) > config.max_num_seqs:
        out.append(f"{len(result.running)} requests running with max_num_seqs={config.max_num_seqs}")
    if out:
        return out
    claimed = sum(blocks_for(by_id[rid].num_computed + n, bs) - blocks_for(by_id[rid].num_computed, bs)
                  for rid, n in result.scheduled)
    released = sum(blocks_for(by_id[rid].num_computed, bs) for rid in result.preempted)
    want = num_free_blocks + released - claimed
    if want < 0:
        out.append(f"the scheduled tokens claim {claimed} blocks; only {num_free_blocks + released} "
                   f"are free")
    if result.num_free_blocks != want:
        out.append(f"num_free_blocks is {result.num_free_blocks}; blocks are conserved: {num_free_blocks} "
                   f"free + {released} released by preemption - {claimed} claimed = {want}")
    return out


@dataclass
class _Live:
    """A request inside the serving loop."""

    id: int
    prompt_len: int
    output_len: int
    num_tokens: int
    num_computed: int = 0
    generated: int = 0


@dataclass
class ServingLoop:
    """The engine around the scheduler: holds the requests and the free-block count, and applies a
    step's result as a model run would.

    After a step, each scheduled request's ``num_computed`` grows by its tokens; a request that has
    then computed all of its tokens samples one more (its ``num_tokens`` grows by one), and when that
    was its last output token it finishes and frees its blocks (the last token's KV is never needed).
    A preempted request keeps its tokens (prompt and output so far) and restarts with
    ``num_computed = 0``. New requests join the back of the waiting queue.
    """

    num_blocks: int
    config: SchedulerConfig
    requests: dict[int, _Live] = field(default_factory=dict)
    running: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    finished: list[int] = field(default_factory=list)
    steps: int = 0

    def __post_init__(self) -> None:
        self.num_free_blocks = self.num_blocks

    def fits_alone(self, prompt_len: int, output_len: int) -> bool:
        """Whether a request's longest cached length fits the whole pool (else it could never run)."""
        return blocks_for(prompt_len + output_len - 1, self.config.block_size) <= self.num_blocks

    def add(self, prompt_len: int, output_len: int) -> int:
        """A new request (ids count up from 0 in arrival order); returns its id."""
        if prompt_len < 1 or output_len < 1 or not self.fits_alone(prompt_len, output_len):
            raise ValueError(f"request of {prompt_len} + {output_len} tokens cannot run in {self.num_blocks} blocks")
        rid = len(self.requests)
        self.requests[rid] = _Live(rid, prompt_len, output_len, num_tokens=prompt_len)
        self.waiting.append(rid)
        return rid

    def inputs(self) -> tuple[list[Request], list[Request], int]:
        """The scheduler's inputs now: running and waiting requests, and the free blocks."""
        def view(rid: int) -> Request:
            r = self.requests[rid]
            return Request(rid, r.num_tokens, r.num_computed)
        return [view(i) for i in self.running], [view(i) for i in self.waiting], self.num_free_blocks

    @property
    def idle(self) -> bool:
        """No request is running or waiting."""
        return not self.running and not self.waiting

    def step(self) -> StepResult:
        """Schedule with the reference scheduler and apply the result; returns it."""
        result = schedule(*self.inputs(), self.config)
        self.apply(result)
        return result

    def apply(self, result: StepResult) -> list[int]:
        """Apply a step's result (assumed valid); returns the ids that finished."""
        bs = self.config.block_size
        for rid in result.preempted:
            self.requests[rid].num_computed = 0
        done: list[int] = []
        free = result.num_free_blocks
        for rid, n in result.scheduled:
            r = self.requests[rid]
            r.num_computed += n
            if r.num_computed == r.num_tokens:  # the model samples a token
                r.generated += 1
                if r.generated == r.output_len:
                    done.append(rid)
                    free += blocks_for(r.num_computed, bs)
                else:
                    r.num_tokens += 1
        self.running = [rid for rid in result.running if rid not in done]
        self.waiting = list(result.waiting)
        self.num_free_blocks = free
        self.finished += done
        self.steps += 1
        return done

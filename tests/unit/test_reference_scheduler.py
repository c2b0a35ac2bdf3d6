"""The reference continuous-batching scheduler: worked steps, and its invariants over random traces."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inferview.reference.scheduler import (
    Request,
    SchedulerConfig,
    ServingLoop,
    StepResult,
    blocks_for,
    schedule,
    schedule_step,
    step_violations,
)


def R(rid: int, tokens: int, computed: int = 0) -> Request:
    return Request(rid, tokens, computed)


def test_decodes_then_the_budget_left_for_a_chunked_prefill():
    cfg = SchedulerConfig(token_budget=8, block_size=4, max_num_seqs=4)
    # A decodes into its 3rd block (9 -> 10 tokens: no new block), B opens its 2nd block
    res = schedule([R(7, 10, 9), R(3, 5, 4)], [R(5, 20), R(9, 2)], 4, cfg)
    # C gets the 6 tokens left (2 blocks); the budget is then spent, so 9 waits
    assert res == StepResult([(7, 1), (3, 1), (5, 6)], [], [7, 3, 5], [9], 1)


def test_admission_stops_at_the_first_request_whose_blocks_do_not_fit():
    cfg = SchedulerConfig(token_budget=8, block_size=4, max_num_seqs=4)
    res = schedule([R(0, 10, 9)], [R(1, 20), R(2, 1)], 1, cfg)
    assert res.scheduled == [(0, 1)] and res.waiting == [1, 2] and res.num_free_blocks == 1


def test_admission_stops_at_max_num_seqs():
    cfg = SchedulerConfig(token_budget=8, block_size=4, max_num_seqs=2)
    res = schedule([R(0, 3, 2)], [R(1, 2), R(2, 2)], 10, cfg)
    assert res.scheduled == [(0, 1), (1, 2)] and res.running == [0, 1] and res.waiting == [2]


def test_out_of_blocks_preempts_the_latest_arrival_and_admits_nothing():
    cfg = SchedulerConfig(token_budget=16, block_size=2, max_num_seqs=4)
    # every decode opens a new block; C holds 2 blocks (3 computed)
    running = [R(0, 3, 2), R(1, 3, 2), R(2, 4, 3)]
    res = schedule(running, [R(3, 1)], 0, cfg)
    assert res == StepResult([(0, 1), (1, 1)], [2], [0, 1], [2, 3], 0)
    assert step_violations(running, [R(3, 1)], 0, cfg, res) == []


def test_a_request_that_must_preempt_itself_ends_the_step():
    cfg = SchedulerConfig(token_budget=4, block_size=4, max_num_seqs=2)
    res = schedule([R(0, 9, 8), R(1, 5, 4)], [R(2, 1)], 0, cfg)
    # 0 needs a block: preempt 1 (frees 1 block), 0 runs; nothing admitted after a preemption
    assert res == StepResult([(0, 1)], [1], [0], [1, 2], 0)
    res = schedule([R(0, 5, 4)], [R(2, 1)], 0, cfg)
    assert res == StepResult([], [0], [], [0, 2], 1)


def test_several_preempted_go_to_the_front_in_arrival_order():
    cfg = SchedulerConfig(token_budget=8, block_size=1, max_num_seqs=4)
    res = schedule([R(0, 2, 1), R(1, 2, 1), R(2, 2, 1)], [R(3, 1)], 0, cfg)
    # 0 needs one block: 2 goes (1 block); 1 needs one: it is last now, so it preempts itself
    assert res == StepResult([(0, 1)], [2, 1], [0], [1, 2, 3], 1)


def test_dict_entry_point_matches():
    out = schedule_step([{"id": 0, "num_tokens": 3, "num_computed": 2}], [{"id": 1, "num_tokens": 5,
                        "num_computed": 0}], 3, 4, 2, 2)
    assert out == {"scheduled": [(0, 1), (1, 3)], "preempted": [], "running": [0, 1], "waiting": [],
                   "num_free_blocks": 0}


def test_violations_name_each_broken_invariant():
    cfg = SchedulerConfig(token_budget=2, block_size=2, max_num_seqs=2)
    running, waiting = [R(0, 3, 2)], [R(1, 4)]
    bad = StepResult([(0, 1), (1, 2)], [], [0, 1], [], 0)
    assert any("token budget" in v for v in step_violations(running, waiting, 1, cfg, bad))
    bad = StepResult([(0, 1)], [], [0], [], 0)
    assert any("not the requests before it" in v for v in step_violations(running, waiting, 1, cfg, bad))
    bad = StepResult([(0, 1)], [], [0], [1], 1)
    assert any("conserved" in v for v in step_violations(running, waiting, 1, cfg, bad))


def test_config_requires_budget_at_least_max_num_seqs():
    with pytest.raises(ValueError):
        SchedulerConfig(token_budget=2, block_size=4, max_num_seqs=3)


@st.composite
def traces(draw):
    bs = draw(st.sampled_from([1, 2, 4]))
    seqs = draw(st.integers(1, 4))
    cfg = SchedulerConfig(draw(st.integers(seqs, seqs + 10)), bs, seqs)
    num_blocks = draw(st.integers(2, 10))
    reqs = []
    for _ in range(draw(st.integers(1, 6))):
        out = draw(st.integers(1, 5))
        longest = num_blocks * bs - out + 1
        reqs.append((draw(st.integers(0, 6)), draw(st.integers(1, max(1, min(20, longest)))), out))
    return cfg, num_blocks, reqs


@settings(max_examples=300, deadline=None)
@given(case=traces())
def test_random_traces_keep_the_invariants_and_finish(case):
    cfg, num_blocks, reqs = case
    loop = ServingLoop(num_blocks, cfg)
    for step in range(400):
        for at, p, o in reqs:
            if at == step and loop.fits_alone(p, o):
                loop.add(p, o)
        if loop.idle and step > 6:
            break
        running, waiting, free = loop.inputs()
        # what the statement promises about every input
        assert all(r.remaining == 1 for r in running[:-1]) and all(r.num_computed == 0 for r in waiting)
        assert free == num_blocks - sum(blocks_for(r.num_computed, cfg.block_size) for r in running)
        assert len(running) <= cfg.max_num_seqs
        res = schedule(running, waiting, free, cfg)
        assert step_violations(running, waiting, free, cfg, res) == []
        oldest = min((r.id for r in [*running, *waiting]), default=None)
        assert oldest is None or oldest in {rid for rid, _ in res.scheduled}  # nobody starves
        loop.apply(res)
    assert loop.idle

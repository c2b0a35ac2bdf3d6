"""Challenge continuous-batching: one scheduler step under a token budget and a KV block budget.

`inferview grade continuous-batching <this file>` runs the checks.
"""

from __future__ import annotations


def schedule_step(running: list[dict], waiting: list[dict], num_free_blocks: int, token_budget: int,
                  block_size: int, max_num_seqs: int) -> dict:
    """One step: running requests first (preempting the latest arrival when blocks run out), then
    waiting ones with chunked prefill. Returns {"scheduled", "preempted", "running", "waiting",
    "num_free_blocks"}."""
    raise NotImplementedError("schedule_step: phase 1 over running, phase 2 over waiting")

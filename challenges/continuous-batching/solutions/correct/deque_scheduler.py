"""A small scheduler object over deques: preempted requests are appendleft-ed onto the waiting
deque as they happen, and a tail pointer marks where the running list ends."""

from collections import deque
from dataclasses import dataclass


@dataclass
class _Req:
    id: int
    tokens: int
    computed: int

    def blocks(self, bs, extra=0):
        return (self.computed + extra + bs - 1) // bs


class _Step:
    def __init__(self, running, waiting, free, budget, bs, max_seqs):
        self.running = [_Req(r["id"], r["num_tokens"], r["num_computed"]) for r in running]
        self.waiting = deque(_Req(r["id"], r["num_tokens"], r["num_computed"]) for r in waiting)
        self.free, self.budget, self.bs, self.max_seqs = free, budget, bs, max_seqs
        self.end = len(self.running)  # running[:end] are still running
        self.scheduled, self.preempted = [], []

    def _new_blocks(self, req, n):
        return req.blocks(self.bs, n) - req.blocks(self.bs)

    def _preempt_last(self):
        self.end -= 1
        victim = self.running[self.end]
        self.free += victim.blocks(self.bs)
        self.preempted.append(victim.id)
        self.waiting.appendleft(victim)
        return victim

    def run_phase(self):
        i = 0
        while i < self.end and self.budget > 0:
            req = self.running[i]
            n = min(req.tokens - req.computed, self.budget)
            need = self._new_blocks(req, n)
            while need > self.free:
                if self._preempt_last() is req:
                    return
            self.free -= need
            self.budget -= n
            self.scheduled.append((req.id, n))
            i += 1

    def admit_phase(self):
        admitted = []
        while self.waiting and self.budget > 0 and self.end + len(admitted) < self.max_seqs:
            req = self.waiting[0]
            n = min(req.tokens - req.computed, self.budget)
            need = self._new_blocks(req, n)
            if need > self.free:
                return admitted
            self.waiting.popleft()
            self.free -= need
            self.budget -= n
            self.scheduled.append((req.id, n))
            admitted.append(req.id)
        return admitted

    def result(self):
        self.run_phase()
        admitted = [] if self.preempted else self.admit_phase()
        return {
            "scheduled": [list(p) for p in self.scheduled],
            "preempted": self.preempted,
            "running": [r.id for r in self.running[: self.end]] + admitted,
            "waiting": [r.id for r in self.waiting],
            "num_free_blocks": self.free,
        }


def schedule_step(running, waiting, num_free_blocks, token_budget, block_size, max_num_seqs):
    return _Step(running, waiting, num_free_blocks, token_budget, block_size, max_num_seqs).result()

"""Wrong: pops from the caller's lists and sets num_computed = 0 on the caller's dicts, where the
statement asks for new lists and dicts (the engine applies the step itself)."""
from __future__ import annotations


def _cdiv(a, b):
    return -(-a // b)


def schedule_step(running, waiting, num_free_blocks, token_budget, block_size, max_num_seqs):
    run = running
    wait = waiting
    free = num_free_blocks
    budget = token_budget
    scheduled = []
    preempted = []
    i = 0
    stop = False
    while i < len(run) and budget > 0 and not stop:
        r = run[i]
        c = r["num_computed"]
        n = min(r["num_tokens"] - c, budget)
        need = _cdiv(c + n, block_size) - _cdiv(c, block_size)
        while need > free:
            victim = run.pop()
            free += _cdiv(victim["num_computed"], block_size)
            preempted.append(victim["id"])
            victim["num_computed"] = 0
            if victim is r:
                stop = True
                break
        if stop:
            break
        free -= need
        budget -= n
        scheduled.append((r["id"], n))
        i += 1
    admitted = []
    if not preempted:
        while wait and budget > 0 and len(run) + len(admitted) < max_num_seqs:
            w = wait[0]
            n = min(w["num_tokens"], budget)
            need = _cdiv(n, block_size)
            if need > free:
                break
            wait.pop(0)
            free -= need
            budget -= n
            scheduled.append((w["id"], n))
            admitted.append(w["id"])
    return {
        "scheduled": scheduled,
        "preempted": preempted,
        "running": [r["id"] for r in run] + admitted,
        "waiting": list(reversed(preempted)) + [w["id"] for w in wait],
        "num_free_blocks": free,
    }

"""A waiting request is admitted only when its whole prompt fits in the budget left; there is no chunked prefill."""



def _blocks(tokens, bs):
    return -(-tokens // bs)


def schedule_step(running, waiting, num_free_blocks, token_budget, block_size, max_num_seqs):
    run = [dict(r) for r in running]
    queue = [dict(r) for r in waiting]
    budget, free = token_budget, num_free_blocks
    scheduled, preempted = [], []

    i = 0
    stopped = False
    while i < len(run) and budget > 0 and not stopped:
        req = run[i]
        c = req["num_computed"]
        n = min(req["num_tokens"] - c, budget)
        need = _blocks(c + n, block_size) - _blocks(c, block_size)
        while need > free:
            victim = run.pop()
            free += _blocks(victim["num_computed"], block_size)
            preempted.append(victim["id"])
            if victim is req:
                stopped = True
                break
        if stopped:
            break
        free -= need
        budget -= n
        scheduled.append((req["id"], n))
        i += 1

    if not preempted:
        while queue and budget > 0 and len(run) < max_num_seqs:
            req = queue[0]
            n = req["num_tokens"] - req["num_computed"]
            need = _blocks(req["num_computed"] + n, block_size) - _blocks(req["num_computed"], block_size)
            if n > budget or need > free:
                break
            free -= need
            budget -= n
            scheduled.append((req["id"], n))
            run.append(queue.pop(0))

    new_waiting = [rid for rid in reversed(preempted)] + [r["id"] for r in queue]
    return {"scheduled": scheduled, "preempted": preempted, "running": [r["id"] for r in run],
            "waiting": new_waiting, "num_free_blocks": free}

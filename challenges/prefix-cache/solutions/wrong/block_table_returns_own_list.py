"""Wrong: block_table returns the cache's own list, so a caller that changes what it gets changes
the cache."""

import hashlib
from collections import OrderedDict


def _hash(parent, tokens):
    h = hashlib.sha256(parent or b"")
    h.update(b"".join(t.to_bytes(8, "little") for t in tokens))
    return h.digest()


class PrefixCache:
    def __init__(self, num_blocks, block_size):
        self.bs = block_size
        self.refs = [0] * num_blocks
        self.hash_of = [None] * num_blocks
        self.by_hash = {}
        self.queue = OrderedDict((b, None) for b in range(num_blocks))
        self.seqs = {}  # id -> (table, tokens, hashes)

    @property
    def num_free_blocks(self):
        return len(self.queue)

    @property
    def num_cached_blocks(self):
        return len(self.by_hash)

    def _hashes(self, tokens, parent=None, start=0):
        out = []
        for lo in range(start, len(tokens) - self.bs + 1, self.bs):
            parent = _hash(parent, tokens[lo:lo + self.bs])
            out.append(parent)
        return out

    def _claim(self):
        b, _ = self.queue.popitem(last=False)
        if self.hash_of[b] is not None:
            del self.by_hash[self.hash_of[b]]
            self.hash_of[b] = None
        self.refs[b] = 1
        return b

    def _cache(self, b, h):
        if h not in self.by_hash:
            self.by_hash[h] = b
            self.hash_of[b] = h

    def _get(self, seq_id):
        if seq_id not in self.seqs:
            raise ValueError(f"unknown sequence {seq_id}")
        return self.seqs[seq_id]

    def allocate(self, seq_id, prompt):
        if seq_id in self.seqs:
            raise ValueError(f"sequence {seq_id} exists")
        prompt = list(prompt)
        if not prompt:
            raise ValueError("empty prompt")
        hashes = self._hashes(prompt)
        hits = []
        for h in hashes:
            if h not in self.by_hash:
                break
            hits.append(self.by_hash[h])
        need = -(-len(prompt) // self.bs) - len(hits)
        if need > len(self.queue) - sum(1 for b in hits if self.refs[b] == 0):
            raise RuntimeError("not enough free blocks")
        for b in hits:
            if self.refs[b] == 0:
                del self.queue[b]
            self.refs[b] += 1
        table = hits + [self._claim() for _ in range(need)]
        for i in range(len(hits), len(hashes)):
            self._cache(table[i], hashes[i])
        self.seqs[seq_id] = (table, prompt, hashes)
        return len(hits) * self.bs

    def append(self, seq_id, tokens):
        table, toks, hashes = self._get(seq_id)
        if not tokens:
            raise ValueError("no tokens")
        toks_after = toks + list(tokens)
        need = -(-len(toks_after) // self.bs) - len(table)
        if need > len(self.queue):
            raise RuntimeError("not enough free blocks")
        table.extend(self._claim() for _ in range(need))
        new = self._hashes(toks_after, hashes[-1] if hashes else None, len(hashes) * self.bs)
        for i, h in enumerate(new, start=len(hashes)):
            self._cache(table[i], h)
        hashes.extend(new)
        toks.extend(tokens)

    def free(self, seq_id):
        table, _, _ = self._get(seq_id)
        del self.seqs[seq_id]
        for b in reversed(table):
            self.refs[b] -= 1
            if self.refs[b] == 0:
                self.queue[b] = None

    def block_table(self, seq_id):
        return self._get(seq_id)[0]  # the cache's own list

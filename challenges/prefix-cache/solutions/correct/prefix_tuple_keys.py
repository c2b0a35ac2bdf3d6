"""No explicit hash chain: a full block's key is the tuple of every token up to its end, which
identifies the same thing as a chained hash (just with more memory). The free queue is a plain
list: head at index 0."""


class _Block:
    __slots__ = ("id", "refs", "key")

    def __init__(self, block_id):
        self.id, self.refs, self.key = block_id, 0, None


class PrefixCache:
    def __init__(self, num_blocks, block_size):
        self.block_size = block_size
        self.blocks = [_Block(i) for i in range(num_blocks)]
        self.free_queue = list(self.blocks)
        self.cache = {}
        self.tables = {}
        self.tokens = {}

    @property
    def num_free_blocks(self):
        return len(self.free_queue)

    @property
    def num_cached_blocks(self):
        return len(self.cache)

    def _key(self, tokens, i):
        return tuple(tokens[: (i + 1) * self.block_size])

    def _fresh(self):
        blk = self.free_queue.pop(0)
        if blk.key is not None:
            del self.cache[blk.key]
            blk.key = None
        blk.refs = 1
        return blk

    def _fill(self, table, tokens, first):
        """Cache the full blocks of `table` from index `first` on."""
        for i in range(first, len(tokens) // self.block_size):
            key = self._key(tokens, i)
            if key not in self.cache:
                self.cache[key] = table[i]
                table[i].key = key

    def allocate(self, seq_id, prompt):
        if seq_id in self.tables or len(prompt) == 0:
            raise ValueError("bad allocate")
        prompt = list(prompt)
        hits = []
        while (len(hits) + 1) * self.block_size <= len(prompt):
            blk = self.cache.get(self._key(prompt, len(hits)))
            if blk is None:
                break
            hits.append(blk)
        total = (len(prompt) + self.block_size - 1) // self.block_size
        in_queue = [b for b in hits if b.refs == 0]
        if total - len(hits) > len(self.free_queue) - len(in_queue):
            raise RuntimeError("out of blocks")
        for b in hits:
            if b.refs == 0:
                self.free_queue.remove(b)
            b.refs += 1
        table = hits + [self._fresh() for _ in range(total - len(hits))]
        self._fill(table, prompt, len(hits))
        self.tables[seq_id], self.tokens[seq_id] = table, prompt
        return len(hits) * self.block_size

    def append(self, seq_id, tokens):
        if seq_id not in self.tables or len(tokens) == 0:
            raise ValueError("bad append")
        table, old = self.tables[seq_id], self.tokens[seq_id]
        new = old + list(tokens)
        total = (len(new) + self.block_size - 1) // self.block_size
        if total - len(table) > len(self.free_queue):
            raise RuntimeError("out of blocks")
        table += [self._fresh() for _ in range(total - len(table))]
        self._fill(table, new, len(old) // self.block_size)
        self.tokens[seq_id] = new

    def free(self, seq_id):
        if seq_id not in self.tables:
            raise ValueError("unknown")
        for blk in reversed(self.tables.pop(seq_id)):
            blk.refs -= 1
            if blk.refs == 0:
                self.free_queue.append(blk)
        del self.tokens[seq_id]

    def block_table(self, seq_id):
        if seq_id not in self.tables:
            raise ValueError("unknown")
        return [b.id for b in self.tables[seq_id]]

"""Mistake: free releases the blocks but leaves an empty table under the id: the freed sequence still
answers seq_len and gather, and its id cannot be allocated again."""

import torch


class PagedKVCache:
    def __init__(self, num_blocks, num_kv_heads, head_dim, block_size=16, dtype=torch.float32,
                 device="cpu"):
        self.bs, self.h, self.d = block_size, num_kv_heads, head_dim
        self.kp = torch.zeros(num_blocks, num_kv_heads, block_size, head_dim, dtype=dtype, device=device)
        self.vp = torch.zeros_like(self.kp)
        self.refs = [0] * num_blocks
        self.free_list = list(range(num_blocks))[::-1]
        self.tables, self.lens = {}, {}

    @property
    def num_free_blocks(self):
        return len(self.free_list)

    def _get(self, sid):
        if sid not in self.tables:
            raise ValueError(f"unknown sequence {sid}")
        return self.tables[sid]

    def allocate(self, seq_id):
        if seq_id in self.tables:
            raise ValueError("exists")
        self.tables[seq_id], self.lens[seq_id] = [], 0

    def _claim(self):
        b = self.free_list.pop()
        self.refs[b] = 1
        return b

    def append(self, seq_id, k, v):
        table = self._get(seq_id)
        if k.dim() != 3 or k.shape != v.shape or k.shape[0] != self.h or k.shape[2] != self.d or k.shape[1] < 1:
            raise ValueError("bad shape")
        n, t = self.lens[seq_id], k.shape[1]
        need = -(-(n + t) // self.bs) - len(table)
        cow = n % self.bs != 0 and self.refs[table[-1]] > 1
        if need + cow > len(self.free_list):
            raise RuntimeError("out of blocks")
        if cow:
            new = self._claim()
            self.kp[new] = self.kp[table[-1]]
            self.vp[new] = self.vp[table[-1]]
            self.refs[table[-1]] -= 1
            table[-1] = new
        table.extend(self._claim() for _ in range(need))
        pos = torch.arange(n, n + t, device=self.kp.device)
        blocks = torch.tensor(table, device=self.kp.device)[pos // self.bs]
        self.kp[blocks, :, pos % self.bs] = k.transpose(0, 1).to(self.kp.dtype)
        self.vp[blocks, :, pos % self.bs] = v.transpose(0, 1).to(self.vp.dtype)
        self.lens[seq_id] = n + t

    def fork(self, src_id, dst_id):
        table = self._get(src_id)
        if dst_id in self.tables:
            raise ValueError("exists")
        for b in table:
            self.refs[b] += 1
        self.tables[dst_id], self.lens[dst_id] = list(table), self.lens[src_id]

    def free(self, seq_id):
        for b in self._get(seq_id):
            self.refs[b] -= 1
            if self.refs[b] == 0:
                self.free_list.append(b)
        self.tables[seq_id] = []

    def gather(self, seq_id):
        table, n = self._get(seq_id), self.lens[seq_id]
        pos = torch.arange(n, device=self.kp.device)
        if n == 0:
            empty = self.kp.new_zeros(self.h, 0, self.d)
            return empty, empty.clone()
        blocks = torch.tensor(table, device=self.kp.device)[pos // self.bs]
        return (self.kp[blocks, :, pos % self.bs].transpose(0, 1).contiguous(),
                self.vp[blocks, :, pos % self.bs].transpose(0, 1).contiguous())

    def seq_len(self, seq_id):
        self._get(seq_id)
        return self.lens[seq_id]

    def block_table(self, seq_id):
        return list(self._get(seq_id))

"""Copy-on-write before the capacity check: with exactly one block free, an append to a shared
partial block that also needs a new block copies the shared block (changing the block table and
the free count) and only then raises, so a call that raises has changed the cache."""
from collections import Counter, deque

import torch


class _Seq:
    __slots__ = ("blocks", "n")

    def __init__(self, blocks=None, n=0):
        self.blocks, self.n = list(blocks or []), n


class PagedKVCache:
    def __init__(self, num_blocks, num_kv_heads, head_dim, block_size=16, dtype=torch.float32, device="cpu"):
        self.bs, self.h, self.d, self.dtype, self.device = block_size, num_kv_heads, head_dim, dtype, device
        self.k = [torch.zeros(num_kv_heads, block_size, head_dim, dtype=dtype, device=device) for _ in range(num_blocks)]
        self.v = [torch.zeros_like(b) for b in self.k]
        self.queue = deque(range(num_blocks))
        self.owners = Counter()
        self.seqs = {}
        self.num_free_blocks = num_blocks

    def _seq(self, sid):
        try:
            return self.seqs[sid]
        except KeyError:
            raise ValueError(f"no sequence {sid}") from None

    def _take(self):
        b = self.queue.popleft()
        self.owners[b] = 1
        self.num_free_blocks -= 1
        return b

    def _drop(self, b):
        self.owners[b] -= 1
        if self.owners[b] == 0:
            del self.owners[b]
            self.queue.append(b)
            self.num_free_blocks += 1

    def allocate(self, seq_id):
        if seq_id in self.seqs:
            raise ValueError("duplicate id")
        self.seqs[seq_id] = _Seq()

    def append(self, seq_id, k, v):
        s = self._seq(seq_id)
        want = (self.h, k.shape[1] if k.dim() == 3 else -1, self.d)
        if k.dim() != 3 or tuple(k.shape) != want or tuple(v.shape) != want or want[1] < 1:
            raise ValueError("shape")
        t = k.shape[1]
        partial = s.n % self.bs
        if partial and self.owners[s.blocks[-1]] > 1:
            if not self.num_free_blocks:
                raise RuntimeError("pool exhausted")
            old = s.blocks[-1]
            b = self._take()
            self.k[b][:, :partial] = self.k[old][:, :partial]
            self.v[b][:, :partial] = self.v[old][:, :partial]
            self._drop(old)
            s.blocks[-1] = b
        new = (s.n + t + self.bs - 1) // self.bs - len(s.blocks)
        if new > self.num_free_blocks:
            raise RuntimeError("pool exhausted")
        for _ in range(new):
            s.blocks.append(self._take())
        for i in range(t):
            p = s.n + i
            b, o = s.blocks[p // self.bs], p % self.bs
            self.k[b][:, o] = k[:, i]
            self.v[b][:, o] = v[:, i]
        s.n += t

    def fork(self, src_id, dst_id):
        s = self._seq(src_id)
        if dst_id in self.seqs:
            raise ValueError("duplicate id")
        for b in s.blocks:
            self.owners[b] += 1
        self.seqs[dst_id] = _Seq(s.blocks, s.n)

    def free(self, seq_id):
        s = self._seq(seq_id)
        for b in s.blocks:
            self._drop(b)
        del self.seqs[seq_id]

    def gather(self, seq_id):
        s = self._seq(seq_id)
        if s.n == 0:
            z = torch.zeros(self.h, 0, self.d, dtype=self.dtype, device=self.device)
            return z, z.clone()
        ks = torch.cat([self.k[b] for b in s.blocks], dim=1)[:, : s.n]
        vs = torch.cat([self.v[b] for b in s.blocks], dim=1)[:, : s.n]
        return ks.clone(), vs.clone()

    def seq_len(self, seq_id):
        return self._seq(seq_id).n

    def block_table(self, seq_id):
        return list(self._seq(seq_id).blocks)

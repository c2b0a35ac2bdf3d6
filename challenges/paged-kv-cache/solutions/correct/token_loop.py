"""Plain Python bookkeeping: a Sequence record per id, a ref-count dict, token-by-token writes, and
gather by concatenating block slices."""

from dataclasses import dataclass, field

import torch


@dataclass
class Sequence:
    blocks: list = field(default_factory=list)
    length: int = 0


class PagedKVCache:
    def __init__(self, num_blocks, num_kv_heads, head_dim, block_size=16, dtype=torch.float32,
                 device="cpu"):
        self.block_size = block_size
        self.shape = (num_kv_heads, head_dim)
        self.k_pool = [torch.zeros(num_kv_heads, block_size, head_dim, dtype=dtype, device=device)
                       for _ in range(num_blocks)]
        self.v_pool = [torch.zeros_like(b) for b in self.k_pool]
        self.ref_count = {}
        self.free_ids = set(range(num_blocks))
        self.seqs = {}

    @property
    def num_free_blocks(self):
        return len(self.free_ids)

    def _seq(self, seq_id):
        try:
            return self.seqs[seq_id]
        except KeyError:
            raise ValueError(f"no sequence {seq_id}") from None

    def _take(self):
        b = min(self.free_ids)
        self.free_ids.remove(b)
        self.ref_count[b] = 1
        return b

    def _release(self, b):
        self.ref_count[b] -= 1
        if self.ref_count[b] == 0:
            del self.ref_count[b]
            self.free_ids.add(b)

    def allocate(self, seq_id):
        if seq_id in self.seqs:
            raise ValueError(f"sequence {seq_id} exists")
        self.seqs[seq_id] = Sequence()

    def append(self, seq_id, k, v):
        seq = self._seq(seq_id)
        h, d = self.shape
        if tuple(k.shape[:1]) + tuple(k.shape[2:]) != (h, d) or k.shape != v.shape or k.dim() != 3 \
                or k.shape[1] == 0:
            raise ValueError("k and v must be (num_kv_heads, t_new, head_dim)")
        t = k.shape[1]
        last_partial = seq.length % self.block_size != 0
        copy_needed = last_partial and self.ref_count[seq.blocks[-1]] > 1
        total_blocks = (seq.length + t + self.block_size - 1) // self.block_size
        if total_blocks - len(seq.blocks) + int(copy_needed) > len(self.free_ids):
            raise RuntimeError("not enough free blocks")
        if copy_needed:
            old = seq.blocks[-1]
            new = self._take()
            self.k_pool[new].copy_(self.k_pool[old])
            self.v_pool[new].copy_(self.v_pool[old])
            self._release(old)
            seq.blocks[-1] = new
        while len(seq.blocks) < total_blocks:
            seq.blocks.append(self._take())
        for i in range(t):
            p = seq.length + i
            blk, slot = seq.blocks[p // self.block_size], p % self.block_size
            self.k_pool[blk][:, slot] = k[:, i]
            self.v_pool[blk][:, slot] = v[:, i]
        seq.length += t

    def fork(self, src_id, dst_id):
        src = self._seq(src_id)
        if dst_id in self.seqs:
            raise ValueError(f"sequence {dst_id} exists")
        for b in src.blocks:
            self.ref_count[b] += 1
        self.seqs[dst_id] = Sequence(list(src.blocks), src.length)

    def free(self, seq_id):
        seq = self._seq(seq_id)
        for b in seq.blocks:
            self._release(b)
        del self.seqs[seq_id]

    def gather(self, seq_id):
        seq = self._seq(seq_id)
        h, d = self.shape
        ks, vs = [], []
        for i, b in enumerate(seq.blocks):
            n = min(self.block_size, seq.length - i * self.block_size)
            ks.append(self.k_pool[b][:, :n])
            vs.append(self.v_pool[b][:, :n])
        if not ks:
            z = self.k_pool[0].new_zeros(h, 0, d) if self.k_pool else torch.zeros(h, 0, d)
            return z, z.clone()
        return torch.cat(ks, dim=1), torch.cat(vs, dim=1)

    def seq_len(self, seq_id):
        return self._seq(seq_id).length

    def block_table(self, seq_id):
        return list(self._seq(seq_id).blocks)

"""One stacked (2, B, H, T, D) buffer; attention as a grouped einsum with a logsumexp softmax in float32."""
import math

import torch


class KVCache:
    seq_len = 0  # a class default (an int, so no state is shared); each instance sets its own

    def __init__(self, batch_size, num_kv_heads, head_dim, max_seq_len, dtype=torch.float32, device="cpu"):
        self.buf = torch.empty(2, batch_size, num_kv_heads, max_seq_len, head_dim, dtype=dtype, device=device)
        self.seq_len = 0

    def update(self, k, v):
        _, b, h, cap, d = self.buf.shape
        for x in (k, v):
            if x.dim() != 4 or x.shape[0] != b or x.shape[1] != h or x.shape[3] != d:
                raise ValueError("shape")
        if k.shape[2] != v.shape[2]:
            raise ValueError("k/v length")
        t = k.shape[2]
        if self.seq_len + t > cap:
            raise ValueError("overflow")
        self.buf[0, :, :, self.seq_len:self.seq_len + t].copy_(k)
        self.buf[1, :, :, self.seq_len:self.seq_len + t].copy_(v)
        self.seq_len += t
        return self.buf[0, :, :, :self.seq_len], self.buf[1, :, :, :self.seq_len]

    def reset(self):
        self.seq_len = 0


def cached_attention(q, k, v):
    b, hq, tn, d = q.shape
    hkv, T = k.shape[1], k.shape[2]
    g = hq // hkv
    qg = q.float().reshape(b, hkv, g, tn, d)  # (B, Hkv, G, tn, D)
    s = torch.einsum("bhgtd,bhsd->bhgts", qg, k.float()) * (1.0 / math.sqrt(d))
    mask = torch.ones(tn, T, dtype=torch.bool, device=q.device).tril(T - tn)
    s = s.masked_fill(~mask, float("-inf"))
    p = torch.exp(s - torch.logsumexp(s, -1, keepdim=True))
    o = torch.einsum("bhgts,bhsd->bhgtd", p, v.float())
    return o.reshape(b, hq, tn, d).to(q.dtype)

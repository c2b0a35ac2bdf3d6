"""Takes block_size queries at a time against every key with a full-row softmax: no online softmax, and a (block, seq_k) score tile."""
import math

import torch


def tiled_attention(q, k, v, causal=False, sm_scale=None, block_size=64):
    tq, d = q.shape[2], q.shape[3]
    tk = k.shape[2]
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    outs = []
    for i0 in range(0, tq, block_size):
        qi = q[:, :, i0:i0 + block_size]
        s = torch.matmul(qi, k.transpose(-1, -2)) * scale
        if causal:
            rows = torch.arange(i0, i0 + qi.shape[2])[:, None] + tk - tq
            s = s.masked_fill(torch.arange(tk)[None, :] > rows, -math.inf)
        p = torch.exp(s - s.amax(-1, keepdim=True))
        outs.append(torch.matmul(p / p.sum(-1, keepdim=True), v))
    return torch.cat(outs, dim=2)

"""Tiles over queries and keys (FlashAttention-1 order of loops), keeping the output of each query
tile normalised after every key block; causal key blocks above the diagonal are skipped."""

import math

import torch


def tiled_attention(q, k, v, causal=False, sm_scale=None, block_size=64):
    B, H, Tq, D = q.shape
    Tk = k.shape[2]
    scale = sm_scale if sm_scale is not None else 1 / math.sqrt(D)
    out = torch.empty(B, H, Tq, D, dtype=q.dtype, device=q.device)
    bq = max(block_size, 16)
    for i0 in range(0, Tq, bq):
        qi = q[:, :, i0:i0 + bq].float()
        n = qi.shape[2]
        pos = torch.arange(i0, i0 + n, device=q.device) + (Tk - Tq)  # absolute query positions
        o = torch.zeros(B, H, n, D, device=q.device)
        row_max = torch.full((B, H, n, 1), -math.inf, device=q.device)
        row_sum = torch.zeros(B, H, n, 1, device=q.device)
        end = min(Tk, int(pos[-1]) + 1) if causal else Tk
        for j0 in range(0, end, block_size):
            kj = k[:, :, j0:min(j0 + block_size, end)].float()
            vj = v[:, :, j0:min(j0 + block_size, end)].float()
            s = qi @ kj.transpose(-1, -2) * scale
            if causal:
                key_pos = torch.arange(j0, j0 + kj.shape[2], device=q.device)
                s = torch.where(key_pos[None, :] <= pos[:, None], s, torch.tensor(-math.inf))
            new_max = torch.maximum(row_max, s.max(dim=-1, keepdim=True).values)
            p = torch.exp(s - new_max)
            corr = torch.exp(row_max - new_max)
            new_sum = row_sum * corr + p.sum(dim=-1, keepdim=True)
            o = o * (row_sum * corr / new_sum) + (p @ vj) / new_sum
            row_max, row_sum = new_max, new_sum
        out[:, :, i0:i0 + n] = o.to(q.dtype)
    return out

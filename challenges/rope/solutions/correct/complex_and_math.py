"""Frequencies with the math module, pair by pair, in float64; the rotation as a complex product
(a + ib) * af * e^(i theta), as Meta's Llama code writes it, in float64."""

import math

import torch


def _m(s, c):
    return 1.0 if s <= 1 else 0.1 * c * math.log(s) + 1.0


def rope_frequencies(config, seq_len=None):
    rs = config.get("rope_scaling") or {}
    kind = (rs.get("rope_type") or rs.get("type")) if rs else "default"
    if kind not in ("default", "linear", "dynamic", "yarn", "llama3"):
        raise ValueError(f"rope_scaling type {kind!r} is not supported")
    head = config["head_dim"] if config.get("head_dim") else (
        config["hidden_size"] // config["num_attention_heads"])
    d = int(head * (config.get("partial_rotary_factor") or 1.0))
    base = float(config.get("rope_theta") or 10000.0)
    if kind == "dynamic":
        mp = config["max_position_embeddings"]
        n = mp if seq_len is None or seq_len < mp else seq_len
        base *= (rs["factor"] * n / mp - rs["factor"] + 1) ** (d / (d - 2))
    f = [base ** (-2 * i / d) for i in range(d // 2)]
    af = 1.0
    if kind == "linear":
        f = [v / rs["factor"] for v in f]
    elif kind == "llama3":
        s, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        big = rs["original_max_position_embeddings"]
        out = []
        for v in f:
            w = 2 * math.pi / v
            if w < big / hi:
                out.append(v)
            elif w > big / lo:
                out.append(v / s)
            else:
                t = (big / w - lo) / (hi - lo)
                out.append((1 - t) * v / s + t * v)
        f = out
    elif kind == "yarn":
        s = rs["factor"]
        big = rs.get("original_max_position_embeddings") or config["max_position_embeddings"]
        dims = [d * math.log(big / (2 * math.pi * r)) / (2 * math.log(base))
                for r in (rs.get("beta_fast") or 32, rs.get("beta_slow") or 1)]
        low, high = dims
        if rs.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, d - 1)
        high = high + 0.001 if low == high else high
        ramp = [min(1.0, max(0.0, (i - low) / (high - low))) for i in range(d // 2)]
        f = [v * (1 - r) + v / s * r for v, r in zip(f, ramp, strict=True)]
        if rs.get("attention_factor") is not None:
            af = rs["attention_factor"]
        elif rs.get("mscale") and rs.get("mscale_all_dim"):
            af = _m(s, rs["mscale"]) / _m(s, rs["mscale_all_dim"])
        else:
            af = _m(s, 1.0)
    return torch.tensor(f, dtype=torch.float32), float(af)


def apply_rope(x, positions, inv_freq, attention_factor=1.0, interleaved=False):
    half = inv_freq.numel()
    r = 2 * half
    xd = x.double()
    if interleaved:
        a, b = xd[..., 0:r:2], xd[..., 1:r:2]
    else:
        a, b = xd[..., :half], xd[..., half:r]
    theta = positions.double()[:, None, :, None] * inv_freq.double()  # (B, 1, T, R/2)
    z = torch.complex(a, b) * torch.polar(torch.full_like(theta, float(attention_factor)), theta)
    out = x.clone()
    if interleaved:
        out[..., 0:r:2], out[..., 1:r:2] = z.real.to(x.dtype), z.imag.to(x.dtype)
    else:
        out[..., :half], out[..., half:r] = z.real.to(x.dtype), z.imag.to(x.dtype)
    return out

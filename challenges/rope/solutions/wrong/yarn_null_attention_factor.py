"""Mistake: YaRN takes rope_scaling["attention_factor"] whenever the key is there, so a null
attention_factor crashes instead of falling back to the mscale rule."""

import math

import torch


def _mscale(s, c=1.0):
    return 0.1 * c * math.log(s) + 1.0 if s > 1 else 1.0


def _default(base, d):
    return 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))


def rope_frequencies(config, seq_len=None):
    head = config.get("head_dim")
    if head is None:
        head = config["hidden_size"] // config["num_attention_heads"]
    d = int(head * config.get("partial_rotary_factor", 1.0))
    base = float(config.get("rope_theta", 10000.0))
    rs = config.get("rope_scaling")
    kind = "default" if rs is None else (rs["rope_type"] if "rope_type" in rs else rs.get("type"))
    f = _default(base, d)
    if kind == "default":
        return f.float(), 1.0
    if kind == "linear":
        return (f / rs["factor"]).float(), 1.0
    if kind == "dynamic":
        m = config["max_position_embeddings"]
        n = m if seq_len is None else max(seq_len, m)
        s = rs["factor"]
        return _default(base * (s * n / m - (s - 1)) ** (d / (d - 2)), d).float(), 1.0
    if kind == "llama3":
        s, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        L0 = rs["original_max_position_embeddings"]
        w = 2 * math.pi / f
        t = (L0 / w - lo) / (hi - lo)
        out = torch.where(w < L0 / hi, f, torch.where(w > L0 / lo, f / s, (1 - t) * f / s + t * f))
        return out.float(), 1.0
    if kind != "yarn":
        raise ValueError(f"unknown rope_scaling type {kind!r}")
    s = rs["factor"]
    L0 = rs.get("original_max_position_embeddings") or config["max_position_embeddings"]
    beta_fast, beta_slow = rs.get("beta_fast") or 32, rs.get("beta_slow") or 1

    def corr(r):
        return d * math.log(L0 / (2 * math.pi * r)) / (2 * math.log(base))

    low, high = corr(beta_fast), corr(beta_slow)
    if rs.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high += 0.001
    ramp = ((torch.arange(d // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    inv = f * (1 - ramp) + f / s * ramp
    if "attention_factor" in rs:  # the mistake: a null value is taken as given
        af = rs["attention_factor"]
    else:
        mscale, mscale_all = rs.get("mscale"), rs.get("mscale_all_dim")
        if mscale and mscale_all:
            af = _mscale(s, mscale) / _mscale(s, mscale_all)
        else:
            af = _mscale(s)
    return inv.float(), float(af)


def apply_rope(x, positions, inv_freq, attention_factor=1.0, interleaved=False):
    r = 2 * inv_freq.numel()
    theta = positions.float()[:, None, :, None] * inv_freq.float()
    cos, sin = torch.cos(theta) * attention_factor, torch.sin(theta) * attention_factor
    ia = torch.arange(0, r, 2) if interleaved else torch.arange(r // 2)
    ib = ia + 1 if interleaved else ia + r // 2
    xf = x.float()
    a, b = xf[..., ia], xf[..., ib]
    out = x.clone()
    out[..., ia] = (a * cos - b * sin).to(x.dtype)
    out[..., ib] = (b * cos + a * sin).to(x.dtype)
    return out

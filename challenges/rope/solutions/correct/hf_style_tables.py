"""In the style of transformers: float32 torch arithmetic for the frequencies, cos/sin tables
concatenated to the rotary width, and rotate_half / rotate_every_two."""

import math

import torch


def _dims(config):
    head = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    prf = config.get("partial_rotary_factor")
    return int(head * (1.0 if prf is None else prf))


def _inv(base, d):
    return 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))


def rope_frequencies(config, seq_len=None):
    rs = config.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type")) if rs else "default"
    base = config.get("rope_theta") or 10000.0
    d = _dims(config)
    if kind == "default":
        return _inv(base, d), 1.0
    if kind == "linear":
        return _inv(base, d) / rs["factor"], 1.0
    if kind == "dynamic":
        m = config["max_position_embeddings"]
        n = m if seq_len is None else max(seq_len, m)
        base = base * ((rs["factor"] * n / m) - (rs["factor"] - 1)) ** (d / (d - 2))
        return _inv(base, d), 1.0
    if kind == "llama3":
        inv = _inv(base, d)
        factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv
        out = torch.where(wavelen > old / lo, inv / factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * out / factor + smooth * out
        medium = ~(wavelen < old / hi) & ~(wavelen > old / lo)
        return torch.where(medium, smoothed, out), 1.0
    if kind == "yarn":
        factor = rs["factor"]
        original = rs.get("original_max_position_embeddings") or config["max_position_embeddings"]
        af = rs.get("attention_factor")
        mscale, mscale_all = rs.get("mscale"), rs.get("mscale_all_dim")

        def m(s, c=1.0):
            return 1.0 if s <= 1 else 0.1 * c * math.log(s) + 1.0

        if af is None:
            af = m(factor, mscale) / m(factor, mscale_all) if mscale and mscale_all else m(factor)

        def corr(rot):
            return d * math.log(original / (rot * 2 * math.pi)) / (2 * math.log(base))

        low, high = corr(rs.get("beta_fast") or 32), corr(rs.get("beta_slow") or 1)
        if rs.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, d - 1)
        if low == high:
            high += 0.001
        ramp = torch.clamp((torch.arange(d // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
        pos_freqs = base ** (torch.arange(0, d, 2).float() / d)
        extra, inter = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
        return inter * ramp + extra * (1 - ramp), float(af)
    raise ValueError(f"unknown rope type {kind!r}")


def _rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def _rotate_every_two(x):
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((-b, a), dim=-1).flatten(-2)


def apply_rope(x, positions, inv_freq, attention_factor=1.0, interleaved=False):
    r = 2 * inv_freq.numel()
    freqs = positions.float()[..., None] * inv_freq.float()  # (B, T, R/2), float32
    if interleaved:
        emb = freqs.repeat_interleave(2, dim=-1)
    else:
        emb = torch.cat((freqs, freqs), dim=-1)
    cos = (emb.cos() * attention_factor)[:, None]  # (B, 1, T, R)
    sin = (emb.sin() * attention_factor)[:, None]
    xr = x[..., :r].float()
    rot = _rotate_every_two(xr) if interleaved else _rotate_half(xr)
    out = (xr * cos + rot * sin).to(x.dtype)
    return torch.cat((out, x[..., r:]), dim=-1)

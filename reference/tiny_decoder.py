"""A tiny deterministic decoder-only transformer, for checking KV caches end to end.

The architecture is the Llama family's in miniature (Touvron et al. 2023): token embedding, pre-norm
blocks of RMSNorm (Zhang & Sennrich 2019) -> grouped-query attention with rotary position
embeddings (Su et al. 2021, RoPE; Ainslie et al. 2023, GQA) -> RMSNorm -> SwiGLU MLP (Shazeer 2020),
a final RMSNorm and an output projection. Weights come from a seeded generator, so every instance
with the same config is the same model on every machine.

It exists to make one claim testable: **decoding with a KV cache gives the same logits as
recomputing the whole prefix every step** — the cache changes how much work is done, not what is
computed. :meth:`TinyDecoder.forward` runs either way: without caches it encodes ``tokens`` from
position 0 with a causal mask; with caches it encodes only the new tokens at ``start_pos ..``,
appends their keys and values to each layer's cache (``cache.update(k, v)``) and attends over
everything cached (``attn(q, k_all, v_all)``). Both the cache objects and the attention function
are pluggable, which is how a grader drives a submitted ``KVCache`` through a real model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch
from inferview.reference.attention import attention, cached_attention
from inferview.reference.kv_cache import ContiguousKVCache
from torch import Tensor


class LayerCache(Protocol):
    """What :meth:`TinyDecoder.forward` needs of a cache: append and return everything so far."""

    def update(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]: ...


@dataclass(frozen=True)
class TinyDecoderConfig:
    """Sizes of the tiny model. The defaults make a ~100k-parameter GQA model."""

    vocab_size: int = 96
    dim: int = 64
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 2
    ffn_dim: int = 128
    max_seq_len: int = 256
    rope_base: float = 10000.0
    norm_eps: float = 1e-5
    seed: int = 0

    @property
    def head_dim(self) -> int:
        """``D = dim // num_heads``."""
        return self.dim // self.num_heads


def rms_norm(x: Tensor, w: Tensor, eps: float) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * w`` over the last axis."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope_tables(positions: Tensor, head_dim: int, base: float) -> tuple[Tensor, Tensor]:
    """cos and sin of ``pos * base^(-2i/D)``, each ``(T, D/2)``."""
    inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32, device=positions.device) / head_dim)
    angles = positions.float()[:, None] * inv_freq[None, :]  # (T, D/2)
    return angles.cos(), angles.sin()


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate pairs ``(x[2i], x[2i+1])`` by the position's angle. ``x``: ``(B, H, T, D)``."""
    x1, x2 = x[..., 0::2].float(), x[..., 1::2].float()  # (B, H, T, D/2) each
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)  # (B, H, T, D/2, 2)
    return out.flatten(-2).to(x.dtype)


class TinyDecoder:
    """The model. ``forward`` returns logits ``(B, T, vocab)``."""

    def __init__(self, config: TinyDecoderConfig | None = None, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu") -> None:
        self.config = c = config or TinyDecoderConfig()
        if c.dim % c.num_heads or c.num_heads % c.num_kv_heads or c.head_dim % 2:
            raise ValueError(f"inconsistent head layout in {c}")
        self.dtype, self.device = dtype, torch.device(device)
        g = torch.Generator().manual_seed(c.seed)

        def w(*shape: int, fan_in: int | None = None) -> Tensor:
            scale = 1.0 / math.sqrt(fan_in) if fan_in else 1.0
            return (torch.randn(shape, generator=g) * scale).to(dtype=dtype, device=self.device)

        d, hd = c.dim, c.head_dim
        self.embed = w(c.vocab_size, d)  # (V, d)
        self.layers = []
        for _ in range(c.num_layers):
            self.layers.append({
                "norm1": torch.ones(d, dtype=dtype, device=self.device),
                "wq": w(d, c.num_heads * hd, fan_in=d),  # (d, Hq*D)
                "wk": w(d, c.num_kv_heads * hd, fan_in=d),  # (d, Hkv*D)
                "wv": w(d, c.num_kv_heads * hd, fan_in=d),  # (d, Hkv*D)
                "wo": w(c.num_heads * hd, d, fan_in=c.num_heads * hd),  # (Hq*D, d)
                "norm2": torch.ones(d, dtype=dtype, device=self.device),
                "w_gate": w(d, c.ffn_dim, fan_in=d),  # (d, F)
                "w_up": w(d, c.ffn_dim, fan_in=d),  # (d, F)
                "w_down": w(c.ffn_dim, d, fan_in=c.ffn_dim),  # (F, d)
            })
        self.norm_f = torch.ones(d, dtype=dtype, device=self.device)
        self.lm_head = w(d, c.vocab_size, fan_in=d)  # (d, V)

    def new_caches(self, batch_size: int, max_seq_len: int | None = None,
                   cache_factory: Callable[..., LayerCache] = ContiguousKVCache) -> list[LayerCache]:
        """One empty cache per layer, built as ``cache_factory(B, Hkv, D, T_max, dtype=, device=)``."""
        c = self.config
        t_max = max_seq_len or c.max_seq_len
        return [cache_factory(batch_size, c.num_kv_heads, c.head_dim, t_max, dtype=self.dtype,
                              device=self.device) for _ in range(c.num_layers)]

    def forward(
        self,
        tokens: Tensor,
        caches: Sequence[LayerCache] | None = None,
        start_pos: int = 0,
        attn: Callable[[Tensor, Tensor, Tensor], Tensor] = cached_attention,
    ) -> Tensor:
        """Logits ``(B, T, V)`` for ``tokens`` ``(B, T)`` at positions ``start_pos .. start_pos+T-1``.

        Without ``caches``: a full causal pass (``start_pos`` must be 0). With ``caches`` (one per
        layer): the new keys and values are appended and attention reads the whole cache.
        """
        c = self.config
        b, t = tokens.shape
        if caches is None and start_pos != 0:
            raise ValueError("without caches the whole sequence is encoded: start_pos must be 0")
        pos = torch.arange(start_pos, start_pos + t, device=self.device)
        cos, sin = rope_tables(pos, c.head_dim, c.rope_base)  # (T, D/2)
        x = self.embed[tokens.to(self.device)]  # (B, T, d)
        for i, p in enumerate(self.layers):
            hx = rms_norm(x, p["norm1"], c.norm_eps)
            q = (hx @ p["wq"]).view(b, t, c.num_heads, c.head_dim).transpose(1, 2)  # (B, Hq, T, D)
            k = (hx @ p["wk"]).view(b, t, c.num_kv_heads, c.head_dim).transpose(1, 2)  # (B, Hkv, T, D)
            v = (hx @ p["wv"]).view(b, t, c.num_kv_heads, c.head_dim).transpose(1, 2)  # (B, Hkv, T, D)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            if caches is None:
                o = attention(q, k, v, causal=True)  # (B, Hq, T, D)
            else:
                k_all, v_all = caches[i].update(k.contiguous(), v.contiguous())  # (B, Hkv, start+T, D)
                o = attn(q.contiguous(), k_all, v_all)  # (B, Hq, T, D)
            x = x + o.transpose(1, 2).reshape(b, t, -1) @ p["wo"]
            hx = rms_norm(x, p["norm2"], c.norm_eps)
            x = x + (torch.nn.functional.silu(hx @ p["w_gate"]) * (hx @ p["w_up"])) @ p["w_down"]  # SwiGLU
        return rms_norm(x, self.norm_f, c.norm_eps) @ self.lm_head  # (B, T, V)

    __call__ = forward

    def prompt(self, batch_size: int, length: int, seed: int = 0) -> Tensor:
        """A reproducible random prompt ``(B, T)`` of token ids."""
        g = torch.Generator().manual_seed(seed)
        return torch.randint(0, self.config.vocab_size, (batch_size, length), generator=g).to(self.device)

    @torch.no_grad()
    def generate(self, prompt: Tensor, steps: int, use_cache: bool = True) -> Tensor:
        """Greedy decoding: ``prompt`` ``(B, P)`` -> ``(B, P + steps)`` tokens.

        With the cache each step encodes one token (linear total work); without it each step
        re-encodes the whole prefix (quadratic total work). Both give the same tokens.
        """
        tokens = prompt
        if use_cache:
            caches = self.new_caches(prompt.shape[0], prompt.shape[1] + steps)
            logits = self.forward(prompt, caches, start_pos=0)
            for _ in range(steps):
                nxt = logits[:, -1].argmax(-1, keepdim=True)  # (B, 1)
                logits = self.forward(nxt, caches, start_pos=tokens.shape[1])
                tokens = torch.cat([tokens, nxt], dim=1)
        else:
            for _ in range(steps):
                logits = self.forward(tokens)
                tokens = torch.cat([tokens, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        return tokens

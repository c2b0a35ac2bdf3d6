"""Per-sequence decode memory of state-space and hybrid models: a fixed recurrent state for each
Mamba layer, a KV cache that grows with the tokens for each attention layer.

Sources:

- Gu and Dao 2023, *Mamba: Linear-Time Sequence Modeling with Selective State Spaces*, and the
  reference implementation (``mamba_ssm``): a Mamba layer keeps, per sequence, an SSM state of
  ``d_inner x d_state`` values and a convolution state of ``d_inner x d_conv`` values, where
  ``d_inner = expand x d_model``.
- Dao and Gu 2024, *Transformers are SSMs* (Mamba-2): the SSM state is ``nheads x headdim x
  d_state`` (= ``d_inner x d_state``) and the convolution runs over ``x``, ``B`` and ``C``, so its
  state is ``(d_inner + 2 x ngroups x d_state) x d_conv``.
- Lieber et al. 2024, *Jamba: A Hybrid Transformer-Mamba Language Model*, and the
  ``ai21labs/Jamba-v0.1`` configuration: 32 layers, one attention layer in every 8
  (``attn_layer_period`` 8, ``attn_layer_offset`` 4), 8 KV heads of 128 dimensions, Mamba layers
  with ``d_state`` 16, ``d_conv`` 4, ``expand`` 2; the paper's KV cache at 256K tokens is 4 GB
  against Mixtral's 32 GB.

Pure Python; no torch.
"""

from __future__ import annotations

from inferview.reference.dtypes import bytes_to_fit
from inferview.reference.quantity import Quantity

VERSIONS = ("mamba1", "mamba2")
"""Mamba layer versions the estimator knows."""


def ssm_state_values(d_inner: int, d_state: int, d_conv: int, version: str = "mamba1",
                     n_groups: int = 1) -> int:
    """Values one Mamba layer keeps per sequence: SSM state plus convolution state."""
    if version not in VERSIONS:
        raise ValueError(f"unknown version {version!r}; use one of {', '.join(VERSIONS)}")
    ssm = d_inner * d_state                                  # (nheads x headdim) x d_state
    conv_channels = d_inner if version == "mamba1" else d_inner + 2 * n_groups * d_state
    return ssm + conv_channels * d_conv                      # the last d_conv inputs per channel


def ssm_state_bytes(ssm_layers: int, d_inner: int, d_state: int, d_conv: int, batch: int = 1,
                    dtype: str = "bf16", version: str = "mamba1", n_groups: int = 1) -> int:
    """Bytes of the recurrent state of ``batch`` sequences over ``ssm_layers`` Mamba layers; the
    same at any sequence length."""
    values = batch * ssm_layers * ssm_state_values(d_inner, d_state, d_conv, version, n_groups)
    return bytes_to_fit(values, dtype)


def attention_layers(layers: int, period: int, offset: int) -> int:
    """Layers ``i`` with ``i % period == offset`` (Jamba's ``layers_block_type``)."""
    if not 0 <= offset < period:
        raise ValueError("the attention offset must be in [0, period)")
    return sum(1 for i in range(layers) if i % period == offset)


def hybrid_kv_cache_bytes(layers: int, period: int, offset: int, kv_heads: int, head_dim: int,
                          seq_len: int, batch: int = 1, dtype: str = "bf16") -> int:
    """KV-cache bytes of a hybrid model: only its attention layers cache keys and values."""
    n_attn = attention_layers(layers, period, offset)
    # attention layers x 2 (K and V) x KV heads x head_dim x tokens x batch
    return bytes_to_fit(n_attn * 2 * kv_heads * head_dim * seq_len * batch, dtype)


QUANTITIES: list[Quantity] = [
    Quantity(
        "ssm_state_bytes", "bytes",
        "batch x Mamba layers x (d_inner x d_state + conv_channels x d_conv) x bytes per value; "
        "conv_channels = d_inner (Mamba) or d_inner + 2 x ngroups x d_state (Mamba-2); "
        "independent of the sequence length",
        lambda c, p: float(ssm_state_bytes(int(p["ssm_layers"]), int(p["d_inner"]),
                                           int(p["d_state"]), int(p["d_conv"]), int(p["batch"]),
                                           str(p["dtype"]), str(p["version"]),
                                           int(p["n_groups"]))),
        needs_model=False, required=("ssm_layers", "d_inner", "d_state", "d_conv"),
        defaults={"batch": 1, "dtype": "bf16", "version": "mamba1", "n_groups": 1},
    ),
    Quantity(
        "hybrid_kv_cache_bytes", "bytes",
        "attention layers (i % period == offset) x 2 x kv_heads x head_dim x bytes per value x "
        "seq_len x batch",
        lambda c, p: float(hybrid_kv_cache_bytes(int(p["layers"]), int(p["period"]),
                                                 int(p["offset"]), int(p["kv_heads"]),
                                                 int(p["head_dim"]), int(p["seq_len"]),
                                                 int(p["batch"]), str(p["dtype"]))),
        needs_model=False,
        required=("layers", "period", "offset", "kv_heads", "head_dim", "seq_len"),
        defaults={"batch": 1, "dtype": "bf16"},
    ),
]
"""The quantities of this module, registered in ``inferview.reference.formulas``."""

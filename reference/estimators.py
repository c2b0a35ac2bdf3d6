"""Memory and compute estimators over Hugging Face ``config.json``-style model configs.

Sources: the KV-cache arithmetic of the seed "Inference interview guide — The KV cache" (per token
and layer, keys and values: ``2 * num_kv_heads * head_dim`` values); Shazeer 2019 (MQA) and
Ainslie et al. 2023 (GQA) for shared KV heads; Beltagy et al. 2020 / Jiang et al. 2023 (Mistral)
for sliding-window attention; DeepSeek-AI 2024, DeepSeek-V2/V3 (multi-head latent attention:
``kv_lora_rank + qk_rope_head_dim`` cached values per token and layer); Fedus et al. 2022 and
Jiang et al. 2024 (Mixtral) for total versus active parameters; Kaplan et al. 2020 (2 FLOPs per
parameter per token) and Williams et al. 2009 (roofline, arithmetic intensity).

``kv_cache_bytes`` and ``max_batch_size`` are the reference for the ``kv-cache-size`` challenge and
follow CHALLENGES.md exactly:

- ``num_key_value_heads`` defaults to ``num_attention_heads`` (MHA); 1 is MQA; anything between is
  GQA. ``head_dim`` defaults to ``hidden_size // num_attention_heads``.
- A layer with ``kv_lora_rank`` (MLA) caches ``kv_lora_rank + qk_rope_head_dim`` values per token;
  any other layer caches ``2 * num_key_value_heads * head_dim`` (a key and a value per KV head).
- ``layer_types`` (``"full_attention"`` / ``"sliding_attention"``, one per layer) says which layers
  slide; without it every layer slides when ``sliding_window`` is set (not null). A sliding layer
  caches ``min(seq_len, sliding_window)`` tokens. (Extensions for real configs, keys the challenge
  never sends: Qwen2's ``use_sliding_window``/``max_window_layers`` and Gemma/Cohere2's
  ``sliding_window_pattern``, read as transformers reads them; see ``layer_kinds``.)
- Bits per value: fp32 32, fp16/bf16 16, fp8/int8 8, int4 4. The byte count is exact and rounded up
  to a whole byte once, for the whole cache.

Pure Python; no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DTYPE_BITS",
    "ParamCounts",
    "attention_flops",
    "attention_matrix_bytes",
    "bytes_to_fit",
    "decode_arithmetic_intensity",
    "decode_step_bytes",
    "decode_step_flops",
    "dtype_bits",
    "head_dim",
    "is_mla",
    "kv_bytes_per_token",
    "kv_cache_bytes",
    "kv_cache_values",
    "kv_values_per_token",
    "layer_kinds",
    "max_batch_size",
    "max_context_length",
    "num_kv_heads",
    "param_counts",
    "ridge_point",
    "weight_bytes",
]

DTYPE_BITS: dict[str, int] = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}
"""Bits per stored value for each dtype name the estimators accept."""

_ALIASES = {
    "float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16",
    "float8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "e4m3": "fp8", "e5m2": "fp8",
}

Config = Mapping[str, Any]


def dtype_bits(dtype: str) -> int:
    """Bits per value for ``dtype`` (``fp32 fp16 bf16 fp8 int8 int4`` or a common alias)."""
    key = str(dtype).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in DTYPE_BITS:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPE_BITS)}")
    return DTYPE_BITS[key]


def _int(config: Config, key: str) -> int:
    if key not in config or config[key] is None:
        raise ValueError(f"config lacks {key!r}")
    v = config[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"config {key!r} must be a non-negative integer, got {v!r}")
    return v


def _opt_int(config: Config, key: str) -> int | None:
    v = config.get(key)
    if v is None:
        return None
    return _int(config, key)


def head_dim(config: Config) -> int:
    """``head_dim`` if given, else ``hidden_size // num_attention_heads``."""
    hd = _opt_int(config, "head_dim")
    if hd is not None:
        return hd
    heads = _int(config, "num_attention_heads")
    if heads == 0:
        raise ValueError("num_attention_heads must be positive")
    return _int(config, "hidden_size") // heads


def num_kv_heads(config: Config) -> int:
    """``num_key_value_heads``, defaulting to ``num_attention_heads`` (MHA)."""
    kv = _opt_int(config, "num_key_value_heads")
    return kv if kv is not None else _int(config, "num_attention_heads")


def is_mla(config: Config) -> bool:
    """Whether the layers use multi-head latent attention (``kv_lora_rank`` set and non-zero)."""
    return bool(config.get("kv_lora_rank"))


def kv_values_per_token(config: Config) -> int:
    """Values one layer caches per token.

    MLA: ``kv_lora_rank + qk_rope_head_dim`` (one compressed latent shared by every head plus the
    decoupled RoPE key). Otherwise ``2 * num_key_value_heads * head_dim`` (K and V).
    """
    if is_mla(config):
        return _int(config, "kv_lora_rank") + (_opt_int(config, "qk_rope_head_dim") or 0)
    return 2 * num_kv_heads(config) * head_dim(config)


def layer_kinds(config: Config) -> list[str]:
    """Each layer's attention kind, ``"full_attention"`` or ``"sliding_attention"``.

    ``layer_types`` decides when present. Without it and with a ``sliding_window``, every layer
    slides (Mistral), except in configs that encode the layout in other keys, as Hugging Face
    transformers reads them: Qwen2's ``use_sliding_window: true`` with ``max_window_layers``
    (layers ``i >= max_window_layers`` slide), and ``sliding_window_pattern`` (Gemma 3, Cohere2;
    2 for ``model_type`` gemma2): layer ``i`` is global when ``(i + 1) % pattern == 0``.
    ``use_sliding_window: false`` or a null window makes every layer full.
    """
    n = _int(config, "num_hidden_layers")
    window = config.get("sliding_window")
    types = config.get("layer_types")
    if types is not None:
        if not isinstance(types, list | tuple):
            raise ValueError(f"layer_types must be a list, got {types!r}")
        if len(types) != n:
            raise ValueError(f"layer_types has {len(types)} entries for {n} layers")
        for t in types:
            if t not in ("full_attention", "sliding_attention"):
                raise ValueError(f"unknown layer type {t!r}")
        kinds = list(types)
    elif window is not None:
        pattern = _opt_int(config, "sliding_window_pattern")
        if pattern is None and config.get("model_type") == "gemma2":
            pattern = 2
        if config.get("use_sliding_window") is True and config.get("max_window_layers") is not None:
            # Qwen2: layers from max_window_layers on slide, the ones below attend fully
            first = _int(config, "max_window_layers")
            kinds = ["sliding_attention" if i >= first else "full_attention" for i in range(n)]
        elif pattern:
            # Gemma 2/3, Cohere2: every pattern-th layer (1-based) is global, the others slide
            kinds = ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention"
                     for i in range(n)]
        else:
            kinds = ["sliding_attention"] * n
    else:
        kinds = ["full_attention"] * n
    if config.get("use_sliding_window") is False or window is None:
        kinds = ["full_attention"] * n  # a sliding layer without a window caches everything
    return kinds


def _tokens_cached(config: Config, kind: str, seq_len: int) -> int:
    if kind == "sliding_attention":
        return min(seq_len, _int(config, "sliding_window"))
    return seq_len


def kv_cache_values(config: Config, seq_len: int, batch_size: int = 1) -> int:
    """Total cached values: ``batch * sum over layers of values_per_token * tokens_cached``."""
    if seq_len < 0 or batch_size < 0:
        raise ValueError("seq_len and batch_size must be >= 0")
    per_tok = kv_values_per_token(config)
    tokens = sum(_tokens_cached(config, k, seq_len) for k in layer_kinds(config))
    return batch_size * per_tok * tokens


def kv_cache_bytes(config: Config, seq_len: int, batch_size: int = 1, dtype: str = "bf16") -> int:
    """Exact KV-cache size in bytes for ``batch_size`` sequences of ``seq_len`` tokens.

    ``bytes = ceil(batch * sum_layers(values_per_token * tokens_cached(layer)) * bits / 8)`` with
    ``values_per_token = 2 * kv_heads * head_dim`` (or ``kv_lora_rank + qk_rope_head_dim`` for MLA)
    and ``tokens_cached = min(seq_len, sliding_window)`` for sliding layers, ``seq_len`` otherwise.
    Example: Llama-3-70B, 131072 tokens, bf16: 80 * 2 * 8 * 128 * 2 B * 131072 = 40 GiB.
    """
    bits = dtype_bits(dtype)
    return -(-kv_cache_values(config, seq_len, batch_size) * bits // 8)


def kv_bytes_per_token(config: Config, dtype: str = "bf16") -> float:
    """Bytes one token adds to the cache while it lies inside every window (all layers cache it):
    ``num_layers * values_per_token * bits / 8``. Fractional only for int4 with an odd value count.
    """
    n = _int(config, "num_hidden_layers")
    return n * kv_values_per_token(config) * dtype_bits(dtype) / 8


def max_batch_size(config: Config, seq_len: int, gpu_bytes: int, weight_bytes: int,
                   dtype: str = "bf16") -> int:
    """Largest batch whose cache of ``seq_len`` tokens per sequence fits in
    ``gpu_bytes - weight_bytes`` (exact fit fits); 0 when none does.

    ``kv_cache_bytes(B) = ceil(B * V * bits / 8) <= budget`` holds exactly when
    ``B * V * bits <= 8 * budget``, so ``B = floor(8 * budget / (V * bits))`` with ``V`` the values
    one sequence caches.
    """
    budget = gpu_bytes - weight_bytes
    if budget < 0:
        return 0
    per_seq_bits = kv_cache_values(config, seq_len, 1) * dtype_bits(dtype)
    if per_seq_bits == 0:
        raise ValueError("the cache of one sequence is empty (seq_len 0?): any batch fits")
    return (8 * budget) // per_seq_bits


def max_context_length(config: Config, gpu_bytes: int, weight_bytes: int, batch_size: int = 1,
                       dtype: str = "bf16", limit: int | None = None) -> int | None:
    """Largest ``seq_len`` (at most ``limit`` if given) whose cache for ``batch_size`` sequences
    fits in ``gpu_bytes - weight_bytes``.

    The cache grows monotonically with ``seq_len`` (linearly, and only up to the window on sliding
    layers), so a binary search finds the boundary. Returns ``None`` when memory never binds:
    every layer slides, the full-window cache fits, and no ``limit`` was given; returns
    ``limit`` when even ``limit`` tokens fit.
    """
    budget = gpu_bytes - weight_bytes
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")

    def fits(s: int) -> bool:
        return kv_cache_bytes(config, s, batch_size, dtype) <= budget

    if kv_cache_values(config, 1, 1) == 0:
        raise ValueError("the config caches nothing per token (zero KV heads or head_dim?)")
    if budget < 0 or not fits(1):
        return 0
    kinds = layer_kinds(config)
    if all(k == "sliding_attention" for k in kinds):
        window = _int(config, "sliding_window")
        if fits(window):
            return limit
    if limit is not None and fits(limit):
        return limit
    lo, hi = 1, 2
    while fits(hi) and (limit is None or hi < limit):
        lo, hi = hi, hi * 2
    if limit is not None:
        hi = min(hi, limit)
    while hi - lo > 1:  # invariant: fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


# --------------------------------------------------------------------------------------------
# Parameter counts
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParamCounts:
    """Parameters of a decoder-only transformer, by part."""

    embedding: int
    """Input embedding table (``vocab * hidden``)."""
    unembedding: int
    """Output head (``vocab * hidden``; 0 when tied to the embedding)."""
    attention: int
    """Attention projections (and their biases, norms inside MLA) over all layers."""
    dense_mlp: int
    """Dense feed-forward blocks (every layer of a dense model; DeepSeek's first dense layers)."""
    shared_experts: int
    """Always-active shared experts over all MoE layers."""
    routed_experts: int
    """All routed experts over all MoE layers."""
    routed_experts_active: int
    """Routed experts one token uses: ``top_k / num_experts`` of ``routed_experts``."""
    router: int
    """Router (gate) weights."""
    norms: int
    """Layer norms outside attention, and the final norm."""

    @property
    def total(self) -> int:
        """Every parameter stored."""
        return (self.embedding + self.unembedding + self.attention + self.dense_mlp
                + self.shared_experts + self.routed_experts + self.router + self.norms)

    def active(self, include_embedding: bool = True) -> int:
        """Parameters one token touches: everything except the routed experts it is not sent to.

        ``include_embedding=True`` counts the input-embedding table too (the Mixtral paper's 12.9B);
        ``False`` leaves out the input lookup, which does no arithmetic, but keeps the output head
        (the convention of the DeepSeek-V3 report's 37B and the gpt-oss model card's 5.13B).
        """
        n = self.total - self.routed_experts + self.routed_experts_active
        if not include_embedding:
            n -= self.embedding
            if self.unembedding == 0:
                n += self.embedding  # tied: the same matrix is used as the output head
        return n

    @property
    def matmul(self) -> int:
        """Active parameters that take part in a matrix product per token (no input lookup)."""
        return self.active(include_embedding=False)


def _num_experts(config: Config) -> int:
    for key in ("n_routed_experts", "num_local_experts", "num_experts"):
        if config.get(key):
            return _int(config, key)
    return 0


def _top_k(config: Config) -> int:
    for key in ("num_experts_per_tok", "experts_per_token", "moe_topk"):
        if config.get(key):
            return _int(config, key)
    return 0


def _attention_params(config: Config) -> int:
    h = _int(config, "hidden_size")
    heads = _int(config, "num_attention_heads")
    if is_mla(config):
        # DeepSeek-V2/V3 MLA: q down/up (or plain q), joint KV down-projection with the RoPE key,
        # KV up-projection to per-head no-RoPE keys and values, output projection.
        r_kv = _int(config, "kv_lora_rank")
        d_rope = _opt_int(config, "qk_rope_head_dim") or 0
        d_nope = _opt_int(config, "qk_nope_head_dim") or 0
        d_v = _opt_int(config, "v_head_dim") or d_nope
        q_rank = _opt_int(config, "q_lora_rank")
        q_out = heads * (d_nope + d_rope)
        q = h * q_rank + q_rank + q_rank * q_out if q_rank else h * q_out  # + q_a_layernorm
        kv_down = h * (r_kv + d_rope) + r_kv  # + kv_a_layernorm
        kv_up = r_kv * heads * (d_nope + d_v)
        out = heads * d_v * h
        return q + kv_down + kv_up + out
    d = head_dim(config)
    kv = num_kv_heads(config)
    q_dim, kv_dim = heads * d, kv * d
    n = h * q_dim + 2 * h * kv_dim + q_dim * h
    qkv_bias = config.get("attention_bias") or config.get("model_type") == "qwen2"
    if qkv_bias:
        n += q_dim + 2 * kv_dim
    if config.get("attention_bias"):
        n += h  # output-projection bias
    if config.get("model_type") == "gpt_oss":
        n += heads  # one attention-sink logit per head
    return n


def param_counts(config: Config) -> ParamCounts:
    """Count parameters from a config, for Llama-style dense models, MoE (Mixtral, gpt-oss,
    DeepSeek with shared experts and dense first layers) and MLA attention.

    Per layer: attention (``h*(Hq*d) + 2*h*(Hkv*d) + (Hq*d)*h``, plus Q/K/V biases for Qwen2, all
    four projection biases and one sink logit per head for gpt-oss), a SwiGLU MLP of ``3*h*ffn``
    (three matrices), two RMSNorms of ``h``. MLA attention (DeepSeek-V2/V3): ``h*r_q + r_q +
    r_q*Hq*(d_nope + d_rope)`` for the low-rank query, ``h*(r_kv + d_rope) + r_kv`` for the joint KV
    down-projection and its norm, ``r_kv*Hq*(d_nope + d_v)`` for the K/V up-projections and
    ``Hq*d_v*h`` for the output. MoE layers (all but ``first_k_dense_replace`` leading dense layers)
    hold ``E`` experts of ``3*h*ffn_expert`` (plus per-expert biases for gpt-oss), the shared
    experts, and a router of ``h*E`` (plus ``E`` bias or correction-bias values for gpt-oss and
    DeepSeek-V3). Embeddings ``V*h``, output head ``V*h`` unless tied. DeepSeek's multi-token-
    prediction module is not counted (the report's 671B leaves it out too).

    Checked against published totals: Llama-2-7B 6.74B, Mixtral 46.7B / 12.9B active (with the
    input embedding), DeepSeek-V3 671B, gpt-oss-120b 116.83B / 5.13B active (without it).
    """
    h = _int(config, "hidden_size")
    layers = _int(config, "num_hidden_layers")
    vocab = _int(config, "vocab_size")
    tied = bool(config.get("tie_word_embeddings", False))
    gpt_oss = config.get("model_type") == "gpt_oss"

    experts = _num_experts(config)
    top_k = _top_k(config)
    dense_ffn = _int(config, "intermediate_size")
    expert_ffn = _opt_int(config, "moe_intermediate_size") or dense_ffn
    first_dense = _opt_int(config, "first_k_dense_replace") or 0
    moe_layers = max(0, layers - first_dense) if experts else 0
    dense_layers = layers - moe_layers

    expert = 3 * h * expert_ffn
    if gpt_oss:
        expert += 2 * expert_ffn + h  # gate_up_proj bias (2*ffn) and down_proj bias (h)
    shared = (_opt_int(config, "n_shared_experts") or 0) * 3 * h * expert_ffn
    router = h * experts
    if gpt_oss or config.get("model_type") == "deepseek_v3" or config.get("topk_method") == "noaux_tc":
        # gpt-oss's router has a bias; DeepSeek-V3's gate a per-expert e_score_correction_bias
        router += experts

    return ParamCounts(
        embedding=vocab * h,
        unembedding=0 if tied else vocab * h,
        attention=layers * _attention_params(config),
        dense_mlp=dense_layers * 3 * h * dense_ffn,
        shared_experts=moe_layers * shared,
        routed_experts=moe_layers * experts * expert,
        routed_experts_active=moe_layers * top_k * expert,
        router=moe_layers * router,
        norms=layers * 2 * h + h,
    )


def weight_bytes(config_or_params: Config | int, dtype: str = "bf16") -> int:
    """Bytes to store every parameter at ``dtype``: ``ceil(total_params * bits / 8)``."""
    n = (config_or_params if isinstance(config_or_params, int)
         else param_counts(config_or_params).total)
    return -(-n * dtype_bits(dtype) // 8)


# --------------------------------------------------------------------------------------------
# FLOPs and arithmetic intensity
# --------------------------------------------------------------------------------------------


def _attended_pairs(seq_len: int, window: int | None, causal: bool) -> int:
    """Query-key pairs scored: ``T*T`` without a mask; causal ``sum_i min(i + 1, window)``."""
    if not causal:
        return seq_len * seq_len
    if window is None or window >= seq_len:
        return seq_len * (seq_len + 1) // 2
    # first `window` queries see i+1 keys, the rest see `window`
    return window * (window + 1) // 2 + (seq_len - window) * window


def _qk_v_dims(config: Config) -> tuple[int, int]:
    if is_mla(config):
        d_nope = _opt_int(config, "qk_nope_head_dim") or 0
        d_rope = _opt_int(config, "qk_rope_head_dim") or 0
        return d_nope + d_rope, _opt_int(config, "v_head_dim") or d_nope
    d = head_dim(config)
    return d, d


def attention_flops(config: Config, seq_len: int, batch_size: int = 1, causal: bool = True) -> int:
    """FLOPs of the two attention matrix products (``Q K^T`` and ``P V``) of one forward pass over
    ``seq_len`` tokens, 2 FLOPs per multiply-add, all layers and heads:
    ``sum_layers 2 * Hq * (d_qk + d_v) * pairs`` with ``pairs = T*T`` (no mask) or the causal count
    ``T(T+1)/2`` (capped by the window on sliding layers; a sliding window is a causal mask, so
    without one it is ignored). For ``d_qk = d_v = d`` and no mask this
    is the familiar ``4 * T^2 * d * Hq`` per layer. Projections and softmax are not included; MLA is
    counted in its naive (non-absorbed) form.
    """
    heads = _int(config, "num_attention_heads")
    d_qk, d_v = _qk_v_dims(config)
    window = config.get("sliding_window")
    total = 0
    for kind in layer_kinds(config):
        w = window if kind == "sliding_attention" else None
        total += 2 * heads * (d_qk + d_v) * _attended_pairs(seq_len, w, causal)
    return batch_size * total


def attention_matrix_bytes(config: Config, seq_len: int, batch_size: int = 1,
                           dtype: str = "fp16") -> int:
    """Bytes of one layer's full attention-score matrix, as naive attention materialises it in
    HBM: ``batch * num_attention_heads * T * T * bits / 8`` (Dao et al. 2022, FlashAttention: the
    memory it never writes). Grows quadratically in ``T``, unlike the KV cache.
    """
    heads = _int(config, "num_attention_heads")
    return -(-batch_size * heads * seq_len * seq_len * dtype_bits(dtype) // 8)


def _expected_experts_touched(experts: int, top_k: int, batch_size: int) -> float:
    """Distinct experts a batch touches per MoE layer if each token picks ``top_k`` of ``experts``
    uniformly: ``E * (1 - (1 - k/E)^B)``."""
    if experts == 0:
        return 0.0
    return experts * (1.0 - (1.0 - top_k / experts) ** batch_size)


def decode_step_flops(config: Config, batch_size: int, context_len: int) -> float:
    """FLOPs of one decode step for ``batch_size`` sequences that each have ``context_len`` cached
    tokens, 2 FLOPs per multiply-add: ``2 * matmul_params * B`` (Kaplan et al. 2020; every active
    parameter but the input-embedding lookup, norms and biases included as a negligible excess)
    plus the new token's attention over ``context_len + 1`` keys:
    ``sum_layers 2 * Hq * (d_qk + d_v) * min(ctx + 1, window)`` per sequence (MLA counted in its
    naive form; the absorbed form trades more FLOPs for fewer bytes).
    """
    counts = param_counts(config)
    heads = _int(config, "num_attention_heads")
    d_qk, d_v = _qk_v_dims(config)
    window = config.get("sliding_window")
    attn = 0
    for kind in layer_kinds(config):
        keys = context_len + 1
        if kind == "sliding_attention":
            keys = min(keys, window)
        attn += 2 * heads * (d_qk + d_v) * keys
    return float(batch_size * (2 * counts.matmul + attn))


def decode_step_bytes(config: Config, batch_size: int, context_len: int,
                      weight_dtype: str = "bf16", kv_dtype: str = "bf16") -> float:
    """Bytes read from memory in one decode step: every matmul weight touched, once per step (the
    batch shares them), plus each sequence's KV cache.

    For MoE layers the routed-expert weights read are those of the experts the batch touches,
    ``E * (1 - (1 - k/E)^B)`` of them in expectation under uniform routing (``k`` at ``B = 1``, all
    ``E`` for large batches). Activations are ignored (small next to weights at decode).
    """
    counts = param_counts(config)
    experts, top_k = _num_experts(config), _top_k(config)
    weights = counts.matmul - counts.routed_experts_active
    if experts:
        per_expert_all_layers = counts.routed_experts / experts
        weights += _expected_experts_touched(experts, top_k, batch_size) * per_expert_all_layers
    w_bytes = weights * dtype_bits(weight_dtype) / 8
    kv = kv_cache_bytes(config, context_len, batch_size, kv_dtype)
    return w_bytes + kv


def decode_arithmetic_intensity(config: Config, batch_size: int, context_len: int = 0,
                                weight_dtype: str = "bf16", kv_dtype: str = "bf16") -> float:
    """FLOPs per byte moved in one decode step: ``decode_step_flops / decode_step_bytes``.

    For a dense model in bf16 with a short context this is about ``B`` (``2*P*B`` FLOPs over
    ``2*P`` bytes): far below a GPU's ridge point (H100: 989 TFLOP/s / 3.35 TB/s = 295), which is why
    decoding is memory-bound and batching raises throughput almost for free.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    return decode_step_flops(config, batch_size, context_len) / decode_step_bytes(
        config, batch_size, context_len, weight_dtype, kv_dtype)


def ridge_point(peak_flops: float, bandwidth_bytes_per_s: float) -> float:
    """Roofline ridge point: the arithmetic intensity (FLOP/byte) above which a kernel is
    compute-bound, ``peak_flops / bandwidth``."""
    return peak_flops / bandwidth_bytes_per_s


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def bytes_to_fit(values: int, dtype: str) -> int:
    """Bytes for ``values`` values at ``dtype``, rounded up."""
    return _ceil_div(values * dtype_bits(dtype), 8)

"""FLOPs and arithmetic intensity: attention FLOPs and score-matrix bytes, and a decode step's
FLOPs, bytes and intensity against a device's ridge point (Williams et al. 2009, roofline).

Pure Python; no torch.
"""

from __future__ import annotations

from inferview.reference.dtypes import bits_to_bytes, dtype_bits, exact_bits
from inferview.reference.kv_memory import kv_cache_bytes
from inferview.reference.model_shape import (
    Config,
    _int,
    _opt_int,
    head_dim,
    is_mla,
    layer_kinds,
    layer_span,
)
from inferview.reference.param_counts import _num_experts, _top_k, param_counts


def _causal(n: int) -> int:
    return n * (n + 1) // 2


def _attended_pairs(seq_len: int, window: int | None, causal: bool, chunked: bool = False) -> int:
    """Query-key pairs scored: ``T*T`` without a mask; causal ``sum_i min(i + 1, window)``; causal
    within chunks of ``window`` tokens (Llama 4's chunked attention): ``C(C+1)/2`` per full chunk
    plus the remainder's."""
    if not causal:
        return seq_len * seq_len
    if window is None or window >= seq_len:
        return _causal(seq_len)
    if chunked:
        full, rest = divmod(seq_len, window)
        return full * _causal(window) + _causal(rest)
    # first `window` queries see i+1 keys, the rest see `window`
    return _causal(window) + (seq_len - window) * window


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
    ``T(T+1)/2`` (capped by the window on sliding layers, counted chunk by chunk on chunked layers;
    windows and chunks are causal masks, so without one they are ignored). For ``d_qk = d_v = d``
    and no mask this
    is the familiar ``4 * T^2 * d * Hq`` per layer. Projections and softmax are not included; MLA is
    counted in its naive (non-absorbed) form.
    """
    heads = _int(config, "num_attention_heads")
    d_qk, d_v = _qk_v_dims(config)
    total = 0
    for kind in layer_kinds(config):
        span = layer_span(config, kind)
        total += 2 * heads * (d_qk + d_v) * _attended_pairs(seq_len, span, causal,
                                                             kind == "chunked_attention")
    return batch_size * total


def attention_matrix_bytes(config: Config, seq_len: int, batch_size: int = 1,
                           dtype: str = "fp16") -> int:
    """Bytes of one layer's full attention-score matrix, as naive attention materialises it in
    HBM: ``batch * num_attention_heads * T * T * bits / 8`` (Dao et al. 2022, FlashAttention: the
    memory it never writes). Grows quadratically in ``T``, unlike the KV cache.
    """
    heads = _int(config, "num_attention_heads")
    return bits_to_bytes(batch_size * heads * seq_len * seq_len * exact_bits(dtype))


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
    ``sum_layers 2 * Hq * (d_qk + d_v) * keys`` per sequence, with ``keys = min(ctx + 1, window)``
    on a sliding layer and the tokens of the current chunk, ``ctx % chunk + 1``, on a chunked one
    (MLA counted in its naive form; the absorbed form trades more FLOPs for fewer bytes).
    """
    counts = param_counts(config)
    heads = _int(config, "num_attention_heads")
    d_qk, d_v = _qk_v_dims(config)
    attn = 0
    for kind in layer_kinds(config):
        keys = context_len + 1
        span = layer_span(config, kind)
        if kind == "chunked_attention" and span:
            keys = context_len % span + 1
        elif span is not None:
            keys = min(keys, span)
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

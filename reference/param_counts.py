"""Parameter counts of a decoder-only transformer, total and active (mixture-of-experts), and
the bytes of its weights.

Pure Python; no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferview.reference.dtypes import bits_to_bytes, exact_bits
from inferview.reference.model_shape import (
    Config,
    _int,
    _opt_int,
    head_dim,
    is_mla,
    moe_layers,
    num_kv_heads,
)


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
    """Layer norms (and per-head query/key norms where the model has them), and the final norm."""

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


_QK_NORM_TYPES = ("qwen3", "qwen3_moe", "gemma3", "gemma3_text")
"""Model types with a learned RMSNorm of ``head_dim`` on queries and on keys in every layer."""
_LLAMA4 = ("llama4", "llama4_text")
_DEFAULT_VOCAB = {"gemma3_text": 262208}
"""``vocab_size`` when a config.json leaves it out, from transformers' config class defaults
(Gemma 3's multimodal config.json does not repeat it in ``text_config``)."""


def _norms_per_layer(config: Config) -> int:
    h = _int(config, "hidden_size")
    mt = config.get("model_type")
    n = (4 if mt in ("gemma2", "gemma3", "gemma3_text") else 2) * h  # Gemma norms before and after
    if mt in _QK_NORM_TYPES:
        n += 2 * head_dim(config)
    return n


def _shared_expert_params(config: Config, h: int, expert_ffn: int) -> int:
    """Always-active expert parameters in one MoE layer: DeepSeek's ``n_shared_experts`` of the
    routed size, Llama 4's one shared expert of ``intermediate_size``, Qwen2-MoE's shared expert of
    ``shared_expert_intermediate_size`` with its sigmoid gate."""
    if config.get("model_type") in _LLAMA4:
        return 3 * h * _int(config, "intermediate_size")
    shared_ffn = _opt_int(config, "shared_expert_intermediate_size")
    if shared_ffn:
        return 3 * h * shared_ffn + h
    return (_opt_int(config, "n_shared_experts") or 0) * 3 * h * expert_ffn


def param_counts(config: Config) -> ParamCounts:
    """Count parameters from a config, for Llama-style dense models, MoE (Mixtral, gpt-oss,
    Qwen3-MoE, Llama 4 with its shared expert and interleaved dense layers, DeepSeek and Kimi K2
    with shared experts and dense first layers) and MLA attention.

    Per layer: attention (``h*(Hq*d) + 2*h*(Hkv*d) + (Hq*d)*h``, plus Q/K/V biases for Qwen2, all
    four projection biases and one sink logit per head for gpt-oss), a SwiGLU (or GeGLU) MLP of
    ``3*h*ffn`` (three matrices), two RMSNorms of ``h`` (four for Gemma 2/3, plus query and key
    norms of ``head_dim`` for Qwen3 and Gemma 3). MLA attention (DeepSeek-V2/V3, Kimi K2):
    ``h*r_q + r_q + r_q*Hq*(d_nope + d_rope)`` for the low-rank query,
    ``h*(r_kv + d_rope) + r_kv`` for the joint KV down-projection and its norm,
    ``r_kv*Hq*(d_nope + d_v)`` for the K/V up-projections and ``Hq*d_v*h`` for the output.
    MoE layers (``model_shape.moe_layers``) hold ``E`` experts of ``3*h*ffn_expert`` (plus
    per-expert biases for gpt-oss), the shared experts, and a router of ``h*E`` (plus ``E`` bias or
    correction-bias values for gpt-oss and DeepSeek-V3-style ``noaux_tc`` routers); the other
    layers a dense MLP (``intermediate_size_mlp`` for Llama 4, ``intermediate_size`` otherwise).
    Embeddings ``V*h``, output head ``V*h`` unless tied. DeepSeek's multi-token-prediction module is
    not counted (the report's 671B leaves it out too).

    Checked against published totals: Llama-2-7B 6.74B, Mixtral 46.7B / 12.9B active (with the
    input embedding), DeepSeek-V3 671B, gpt-oss-120b 116.83B / 5.13B active (without it), and the
    newer presets' figures in their sources (Qwen3, Llama 4, Gemma 3, gpt-oss-20b, Kimi K2).
    """
    h = _int(config, "hidden_size")
    layers = _int(config, "num_hidden_layers")
    vocab = _opt_int(config, "vocab_size") or _DEFAULT_VOCAB.get(str(config.get("model_type")))
    if vocab is None:
        vocab = _int(config, "vocab_size")  # raises: the config lacks it
    tied = bool(config.get("tie_word_embeddings", False))
    gpt_oss = config.get("model_type") == "gpt_oss"

    experts = _num_experts(config)
    top_k = _top_k(config)
    dense_ffn = _int(config, "intermediate_size")
    if config.get("model_type") in _LLAMA4:
        dense_ffn = _opt_int(config, "intermediate_size_mlp") or dense_ffn
    expert_ffn = _opt_int(config, "moe_intermediate_size") or _int(config, "intermediate_size")
    moe_layer_count = sum(moe_layers(config, experts))
    dense_layers = layers - moe_layer_count

    expert = 3 * h * expert_ffn
    if gpt_oss:
        expert += 2 * expert_ffn + h  # gate_up_proj bias (2*ffn) and down_proj bias (h)
    shared = _shared_expert_params(config, h, expert_ffn) if experts else 0
    router = h * experts
    if gpt_oss or config.get("model_type") == "deepseek_v3" or config.get("topk_method") == "noaux_tc":
        # gpt-oss's router has a bias; DeepSeek-V3's gate a per-expert e_score_correction_bias
        router += experts

    return ParamCounts(
        embedding=vocab * h,
        unembedding=0 if tied else vocab * h,
        attention=layers * _attention_params(config),
        dense_mlp=dense_layers * 3 * h * dense_ffn,
        shared_experts=moe_layer_count * shared,
        routed_experts=moe_layer_count * experts * expert,
        routed_experts_active=moe_layer_count * top_k * expert,
        router=moe_layer_count * router,
        norms=layers * _norms_per_layer(config) + h,
    )


def weight_bytes(config_or_params: Config | int, dtype: str = "bf16") -> int:
    """Bytes to store every parameter at ``dtype``: ``ceil(total_params * bits / 8)`` (block
    scales counted: ``mxfp4`` 4.25 bits, ``nvfp4`` 4.5, ``int4-g128`` 4.125)."""
    n = (config_or_params if isinstance(config_or_params, int)
         else param_counts(config_or_params).total)
    return bits_to_bytes(n * exact_bits(dtype))


QUANT_SCOPES = ("linear", "experts")
"""What a quantized checkpoint quantizes: every linear layer, or the routed experts only."""

WEIGHT_SCOPES = ("all", *QUANT_SCOPES)
"""What a weight format applies to in the calculator: every parameter, or a ``QUANT_SCOPES`` part."""


def quantized_part(counts: ParamCounts, scope: str = "linear") -> int:
    """Parameters a checkpoint stores in its low-precision format.

    ``linear``: the transformer blocks' linear layers — attention, dense MLPs, shared and routed
    experts — as GPTQ, AWQ and llm-compressor's FP8 schemes quantize them; the embedding table,
    the output head (``lm_head`` is left out by default), routers and norms stay in 16 bits.
    ``experts``: the routed experts only, as gpt-oss ships its MXFP4 checkpoint (attention,
    router and embeddings in BF16, per its model card). Biases and MLA's small norms sit inside
    ``attention`` and are counted with it, a negligible excess.
    """
    if scope == "linear":
        return counts.attention + counts.dense_mlp + counts.shared_experts + counts.routed_experts
    if scope == "experts":
        return counts.routed_experts
    raise ValueError(f"unknown scope {scope!r}; use one of {', '.join(QUANT_SCOPES)}")


def quantized_weight_bytes(config: Config, dtype: str, scope: str = "linear",
                           keep_dtype: str = "bf16") -> int:
    """Bytes of a checkpoint that stores ``quantized_part(scope)`` at ``dtype`` (scales counted)
    and every other parameter at ``keep_dtype``, rounded up once.

    Example: Llama-3-70B in ``int4-g128`` (GPTQ/AWQ with group size 128) stores its 68.45B
    block parameters at 4.125 bits and the 2 x 1.05B embedding and head parameters in bf16:
    about 39.5 GB, 12 % more than the 35.3 GB of "every parameter at 4 bits".
    """
    counts = param_counts(config)
    q = quantized_part(counts, scope)
    return bits_to_bytes(q * exact_bits(dtype) + (counts.total - q) * exact_bits(keep_dtype))


def scoped_weight_bytes(config: Config, dtype: str, scope: str = "all") -> int:
    """Weight bytes with ``dtype`` applied to ``scope`` (``WEIGHT_SCOPES``) and bf16 for the rest:
    ``weight_bytes`` for ``all``, ``quantized_weight_bytes`` otherwise. Raises ``ValueError`` for
    ``experts`` on a dense model."""
    if scope == "all":
        return weight_bytes(config, dtype)
    if scope == "experts" and not param_counts(config).routed_experts:
        raise ValueError("the weight scope 'experts' needs a mixture-of-experts model; this one "
                         "has no routed experts")
    return quantized_weight_bytes(config, dtype, scope)

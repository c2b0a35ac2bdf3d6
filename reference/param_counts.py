"""Parameter counts of a decoder-only transformer, total and active (mixture-of-experts), and
the bytes of its weights.

Pure Python; no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferview.reference.dtypes import dtype_bits
from inferview.reference.model_shape import Config, _int, _opt_int, head_dim, is_mla, num_kv_heads


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

"""Estimators and presets against hand arithmetic and published totals."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from inferview.reference import estimators as e
from inferview.reference.presets import GPUS, MODELS, get_gpu, get_model


def cfg(name: str) -> dict:
    return get_model(name).config_copy()


def test_llama3_70b_128k_is_40_gib():
    # 80 layers x 8 kv heads x 128 dim x 2 (K and V) x 2 bytes x 131072 tokens
    want = 80 * 8 * 128 * 2 * 2 * 131072
    assert want == 42_949_672_960 == 40 * 2**30
    assert e.kv_cache_bytes(cfg("llama-3-70b"), 131072) == want
    assert e.kv_bytes_per_token(cfg("llama-3-70b")) == 327_680  # 320 KiB per token


def test_mistral_beyond_window_caches_only_the_window():
    c = cfg("mistral-7b")
    # 32 layers x 8 kv heads x 128 x 2 x 2 bytes x min(seq, 4096)
    per_tok = 32 * 8 * 128 * 2 * 2
    assert e.kv_cache_bytes(c, 3000) == per_tok * 3000
    assert e.kv_cache_bytes(c, 4096) == per_tok * 4096
    assert e.kv_cache_bytes(c, 100_000) == per_tok * 4096 == 536_870_912


def test_deepseek_v3_mla():
    # 61 layers x (512 latent + 64 rope key) x 2 bytes per token
    c = cfg("deepseek-v3")
    assert e.kv_bytes_per_token(c) == 61 * (512 + 64) * 2 == 70_272
    assert e.kv_cache_bytes(c, 131072) == 61 * (512 + 64) * 2 * 131072


def test_gpt_oss_alternating_layers():
    c = cfg("gpt-oss-120b")
    per_layer_tok = 2 * 8 * 64 * 2
    seq = 10_000
    assert e.kv_cache_bytes(c, seq) == 18 * per_layer_tok * seq + 18 * per_layer_tok * 128


def test_defaults_mha_and_head_dim():
    c = {"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64}
    assert e.kv_cache_bytes(c, 10, 3, "fp32") == 2 * 2 * 4 * 16 * 10 * 3 * 4


def test_layer_types_sliding_without_window_caches_everything():
    c = {"num_hidden_layers": 2, "num_attention_heads": 2, "hidden_size": 8,
         "layer_types": ["sliding_attention", "full_attention"], "sliding_window": None}
    assert e.kv_cache_bytes(c, 50) == 2 * 2 * 2 * 4 * 50 * 2


def test_qwen_use_sliding_window_false_is_honoured():
    c = cfg("qwen2.5-72b")
    assert e.kv_cache_bytes(c, 200_000) == 80 * 8 * 128 * 2 * 2 * 200_000


def test_int4_rounds_up_once():
    c = {"num_hidden_layers": 1, "num_attention_heads": 1, "hidden_size": 8,
         "kv_lora_rank": 3, "qk_rope_head_dim": 0}
    assert e.kv_cache_bytes(c, 1, 1, "int4") == 2  # 3 values x 4 bits = 12 bits -> 2 bytes
    assert e.kv_cache_bytes(c, 1, 2, "int4") == 3  # 6 values -> 24 bits


@pytest.mark.parametrize("dtype, bits", [("fp32", 32), ("fp16", 16), ("bf16", 16), ("fp8", 8),
                                          ("int8", 8), ("int4", 4)])
def test_dtype_bits(dtype, bits):
    assert e.dtype_bits(dtype) == bits


def test_unknown_dtype():
    with pytest.raises(ValueError, match="unknown dtype"):
        e.dtype_bits("fp6")


def test_max_batch_exact_fit():
    c = cfg("llama-3-8b")
    per = e.kv_cache_bytes(c, 1000)
    assert e.max_batch_size(c, 1000, 10 * per + 5, 5) == 10  # exact fit fits
    assert e.max_batch_size(c, 1000, 10 * per + 4, 5) == 9
    assert e.max_batch_size(c, 1000, 4, 5) == 0


def test_max_batch_consistent_with_bytes_int4_odd():
    c = {"num_hidden_layers": 1, "num_attention_heads": 1, "hidden_size": 8,
         "kv_lora_rank": 3, "qk_rope_head_dim": 0}
    for budget in range(0, 20):
        b = e.max_batch_size(c, 1, budget, 0, "int4")
        assert e.kv_cache_bytes(c, 1, b, "int4") <= budget < e.kv_cache_bytes(c, 1, b + 1, "int4")


def test_empty_cache_is_an_error_not_a_hang():
    c = {"num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 0, "hidden_size": 8}
    with pytest.raises(ValueError):
        e.max_context_length(c, 10**9, 0)
    with pytest.raises(ValueError):
        e.max_batch_size(c, 10, 10**9, 0)


def test_max_context_length():
    c = cfg("llama-3-70b")
    w = e.weight_bytes(c)
    gpu = GPUS["h200"].memory_bytes
    n = e.max_context_length(c, gpu, w)
    assert e.kv_cache_bytes(c, n) <= gpu - w < e.kv_cache_bytes(c, n + 1)
    assert e.max_context_length(c, gpu, w, limit=8192) == 8192
    # every Mistral layer slides: memory never binds
    m = cfg("mistral-7b")
    assert e.max_context_length(m, GPUS["l4"].memory_bytes, e.weight_bytes(m)) is None
    assert e.max_context_length(c, GPUS["l4"].memory_bytes, w) == 0  # weights do not even fit


@pytest.mark.parametrize(
    "name, total, rel, active, include_embedding",
    [
        ("llama-2-7b", 6.74e9, 0.005, None, True),
        ("llama-2-70b", 69.0e9, 0.01, None, True),
        ("llama-3-8b", 8.03e9, 0.005, None, True),
        ("llama-3-70b", 70.6e9, 0.005, None, True),
        ("llama-3.1-405b", 405e9, 0.005, None, True),
        ("mistral-7b", 7.24e9, 0.005, None, True),
        ("qwen2.5-72b", 72.7e9, 0.005, None, True),
        ("mixtral-8x7b", 46.7e9, 0.002, 12.9e9, True),  # Mistral AI's 12.9B counts the embedding
        ("deepseek-v3", 671e9, 0.002, 36.6e9, False),  # report: 37B, of which 0.9B output head
        ("gpt-oss-120b", 116.83e9, 0.001, 5.13e9, False),  # model card: 116.83B / 5.13B
    ],
)
def test_param_counts_match_published(name, total, rel, active, include_embedding):
    pc = e.param_counts(cfg(name))
    assert pc.total == pytest.approx(total, rel=rel)
    if active is not None:
        assert pc.active(include_embedding) == pytest.approx(active, rel=0.005)
    else:
        assert pc.active() == pc.total


def test_llama2_7b_exact_count():
    # 32 x (4 x 4096^2 attention + 3 x 4096 x 11008 MLP + 2 x 4096 norms) + 2 x 32000 x 4096 + 4096
    assert e.param_counts(cfg("llama-2-7b")).total == 6_738_415_616


def test_weight_bytes():
    assert e.weight_bytes(7_000_000_001, "int4") == 3_500_000_001
    assert e.weight_bytes(cfg("llama-2-7b"), "bf16") == 2 * 6_738_415_616


def test_attention_flops():
    c = cfg("llama-2-7b")
    t = 4096
    assert e.attention_flops(c, t, causal=False) == 32 * 4 * t * t * 128 * 32
    assert e.attention_flops(c, t, causal=True) == 32 * 2 * 32 * 256 * t * (t + 1) // 2
    # sliding layers only score the window
    m = cfg("mistral-7b")
    full = e.attention_flops({**m, "sliding_window": None}, 8192)
    assert e.attention_flops(m, 8192) < full
    assert e.attention_flops(m, 4096) == e.attention_flops({**m, "sliding_window": None}, 4096)


def test_decode_intensity_dense_is_about_batch():
    c = cfg("llama-3-8b")
    assert e.decode_arithmetic_intensity(c, 1) == pytest.approx(1.0, rel=0.01)
    assert e.decode_arithmetic_intensity(c, 32) == pytest.approx(32.0, rel=0.01)
    # a long context adds KV bytes and lowers the intensity
    assert e.decode_arithmetic_intensity(c, 32, 8192) < 32


def test_moe_decode_touches_more_experts_with_batch():
    c = cfg("mixtral-8x7b")
    b1 = e.decode_step_bytes(c, 1, 0)
    b64 = e.decode_step_bytes(c, 64, 0)
    pc = e.param_counts(c)
    assert b1 == pytest.approx(2 * pc.matmul)
    assert b64 == pytest.approx(2 * (pc.matmul - pc.routed_experts_active + pc.routed_experts), rel=1e-6)


# Published values that are easy to get wrong; each is copied from the preset's source.
@pytest.mark.parametrize(
    "name, key, value",
    [
        ("llama-2-7b", "num_key_value_heads", 32),  # Llama 2 7B has no GQA
        ("llama-3-8b", "vocab_size", 128256),
        ("llama-3-8b", "rope_theta", 500000.0),
        ("llama-3-8b", "max_position_embeddings", 8192),
        ("llama-3.1-405b", "num_hidden_layers", 126),
        ("mistral-7b", "sliding_window", 4096),  # v0.1; later versions set null
        ("mixtral-8x7b", "sliding_window", None),
        ("mixtral-8x7b", "rope_theta", 1000000.0),
        ("qwen2.5-72b", "use_sliding_window", False),
        ("qwen2.5-72b", "max_window_layers", 70),
        ("qwen2.5-72b", "num_key_value_heads", 8),
        ("deepseek-v3", "kv_lora_rank", 512),
        ("deepseek-v3", "qk_rope_head_dim", 64),
        ("deepseek-v3", "n_routed_experts", 256),
        ("deepseek-v3", "num_experts_per_tok", 8),
        ("gpt-oss-120b", "head_dim", 64),  # not hidden_size / heads = 45
        ("gpt-oss-120b", "sliding_window", 128),
    ],
)
def test_preset_fields_match_published_configs(name, key, value):
    assert MODELS[name].config[key] == value


def test_gpt_oss_layer_types_start_with_a_sliding_layer():
    types = MODELS["gpt-oss-120b"].config["layer_types"]
    assert types[:2] == ["sliding_attention", "full_attention"]
    assert types.count("full_attention") == types.count("sliding_attention") == 18


@pytest.mark.parametrize(
    "name, gib, dense_tflops, tb_per_s",
    [
        ("a100-80gb", 80, 312, 2.039),
        ("h100-sxm", 80, 989.4, 3.35),  # SXM, not PCIe (2.0 TB/s); 1,979 is with sparsity
        ("h200", 141, 989.4, 4.8),
        ("l4", 24, 121, 0.3),
        ("rtx-4090", 24, 165.2, 1.008),  # BF16 with FP32 accumulate
        ("mi300x", 192, 1307.4, 5.3),
    ],
)
def test_gpu_presets_are_dense_datasheet_figures(name, gib, dense_tflops, tb_per_s):
    g = GPUS[name]
    assert g.memory_bytes == gib * 2**30
    assert g.bf16_flops == pytest.approx(dense_tflops * 1e12)
    assert g.bandwidth_bytes_per_s == pytest.approx(tb_per_s * 1e12)


def test_presets_have_sources_and_lookup():
    for p in MODELS.values():
        assert "config.json" in p.source or "paper" in p.source.lower()
    for g in GPUS.values():
        assert g.source and g.memory_bytes > 0 and g.bf16_flops > 1e13
    assert get_model("Llama-3-70B").name == "llama-3-70b"
    assert get_gpu("H100").name == "h100-sxm"
    with pytest.raises(KeyError, match="unknown model"):
        get_model("llama-9")


def test_reference_package_stays_torch_free():
    import subprocess
    import sys

    code = ("import sys; import inferview.reference.estimators, inferview.reference.presets; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------ properties against brute force



@st.composite
def small_configs(draw):
    layers = draw(st.integers(1, 4))
    heads = draw(st.sampled_from([1, 2, 4, 8]))
    kv = draw(st.sampled_from([d for d in (1, 2, 4, 8) if heads % d == 0]))
    cfg = {"num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv,
           "hidden_size": heads * draw(st.sampled_from([4, 8, 16]))}
    if draw(st.booleans()):
        cfg["kv_lora_rank"] = draw(st.integers(1, 9))
        cfg["qk_rope_head_dim"] = draw(st.integers(0, 5))
    window = draw(st.one_of(st.none(), st.integers(1, 12)))
    cfg["sliding_window"] = window
    if window is not None and draw(st.booleans()):
        cfg["layer_types"] = draw(st.lists(st.sampled_from(["full_attention", "sliding_attention"]),
                                           min_size=layers, max_size=layers))
    return cfg


def _brute_values(cfg, seq_len):
    """Count cached values token by token and layer by layer."""
    total = 0
    for layer in range(cfg["num_hidden_layers"]):
        types = cfg.get("layer_types")
        slides = cfg["sliding_window"] is not None and (types is None or types[layer] == "sliding_attention")
        for t in range(seq_len):
            if slides and t < seq_len - cfg["sliding_window"]:
                continue  # evicted from the window
            if cfg.get("kv_lora_rank"):
                total += cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]
            else:
                d = cfg["hidden_size"] // cfg["num_attention_heads"]
                total += 2 * cfg["num_key_value_heads"] * d
    return total


@given(cfg=small_configs(), seq_len=st.integers(0, 30), batch=st.integers(1, 3),
       dtype=st.sampled_from(list(e.DTYPE_BITS)))
def test_kv_cache_bytes_matches_brute_force(cfg, seq_len, batch, dtype):
    bits = batch * _brute_values(cfg, seq_len) * e.DTYPE_BITS[dtype]
    assert e.kv_cache_bytes(cfg, seq_len, batch, dtype) == -(-bits // 8)


@given(cfg=small_configs(), seq_len=st.integers(1, 30), budget=st.integers(-50, 5000),
       dtype=st.sampled_from(list(e.DTYPE_BITS)))
def test_max_batch_is_the_boundary(cfg, seq_len, budget, dtype):
    b = e.max_batch_size(cfg, seq_len, budget + 100, 100, dtype)
    if budget < 0:
        assert b == 0
        return
    assert e.kv_cache_bytes(cfg, seq_len, b, dtype) <= budget
    assert e.kv_cache_bytes(cfg, seq_len, b + 1, dtype) > budget


@given(cfg=small_configs(), budget=st.integers(0, 20000), batch=st.integers(1, 3))
def test_max_context_is_the_boundary(cfg, budget, batch):
    n = e.max_context_length(cfg, budget, 0, batch, "bf16", limit=5000)
    assert n is not None
    if n < 5000:
        assert e.kv_cache_bytes(cfg, n, batch) <= budget < e.kv_cache_bytes(cfg, n + 1, batch)


@given(cfg=small_configs(), seq_len=st.integers(1, 20))
def test_causal_attention_flops_match_pair_count(cfg, seq_len):
    cfg = {k: v for k, v in cfg.items() if k not in ("kv_lora_rank", "qk_rope_head_dim")}
    d = cfg["hidden_size"] // cfg["num_attention_heads"]
    want = 0
    for layer in range(cfg["num_hidden_layers"]):
        types = cfg.get("layer_types")
        w = cfg["sliding_window"] if cfg["sliding_window"] is not None and (
            types is None or types[layer] == "sliding_attention") else None
        pairs = sum(1 for i in range(seq_len) for j in range(i + 1) if w is None or i - j < w)
        want += 4 * d * cfg["num_attention_heads"] * pairs
    assert e.attention_flops(cfg, seq_len, causal=True) == want


def test_gemma_and_cohere_sliding_window_pattern():
    # Gemma 3 / Cohere2 configs carry no layer_types: every pattern-th layer (1-based) is global
    c = {"num_hidden_layers": 12, "num_attention_heads": 8, "num_key_value_heads": 4,
         "head_dim": 256, "hidden_size": 2560, "sliding_window": 1024, "sliding_window_pattern": 6}
    kinds = e.layer_kinds(c)
    assert [i for i, k in enumerate(kinds) if k == "full_attention"] == [5, 11]
    per_layer_tok = 2 * 4 * 256 * 2
    assert e.kv_cache_bytes(c, 32768) == per_layer_tok * (2 * 32768 + 10 * 1024)
    # Gemma 2 alternates, starting with a sliding layer, without any key saying so
    g2 = {"model_type": "gemma2", "num_hidden_layers": 4, "num_attention_heads": 8,
          "hidden_size": 2048, "sliding_window": 4096}
    assert e.layer_kinds(g2) == ["sliding_attention", "full_attention"] * 2


def test_qwen_use_sliding_window_true_slides_from_max_window_layers():
    c = {**cfg("qwen2.5-72b"), "use_sliding_window": True, "sliding_window": 4096,
         "max_window_layers": 70}
    per_layer_tok = 2 * 8 * 128 * 2
    assert e.kv_cache_bytes(c, 10_000) == per_layer_tok * (70 * 10_000 + 10 * 4096)


def test_malformed_layout_keys_are_value_errors():
    base = {"num_hidden_layers": 2, "num_attention_heads": 2, "hidden_size": 8, "vocab_size": 4,
            "intermediate_size": 4}
    with pytest.raises(ValueError, match="layer_types must be a list"):
        e.kv_cache_bytes({**base, "layer_types": 5, "sliding_window": 4}, 10)
    with pytest.raises(ValueError, match="n_routed_experts"):
        e.param_counts({**base, "n_routed_experts": [8]})


def test_deepseek_v3_total_by_hand():
    h, v, heads, q_rank, kv_rank, nope, rope, dv = 7168, 129280, 128, 1536, 512, 128, 64, 128
    attn = (h * q_rank + q_rank + q_rank * heads * (nope + rope)  # q down, norm, q up
            + h * (kv_rank + rope) + kv_rank  # joint KV down-projection with the RoPE key, norm
            + kv_rank * heads * (nope + dv)  # K (no-RoPE part) and V up-projections
            + heads * dv * h)  # output
    expert = 3 * h * 2048
    moe_layer = 256 * expert + expert + h * 256 + 256  # routed, shared, gate, correction bias
    total = 2 * v * h + 61 * attn + 3 * 3 * h * 18432 + 58 * moe_layer + 61 * 2 * h + h
    assert e.param_counts(cfg("deepseek-v3")).total == total
    assert total == pytest.approx(671.0e9, rel=1e-4)  # report: 671B without the MTP module


def test_yarn_presets_reach_their_max_position_embeddings():
    # YaRN stretches the pre-training context by `factor`: DeepSeek-V3 4096 x 40, gpt-oss 4096 x 32
    for name in ("deepseek-v3", "gpt-oss-120b"):
        c = cfg(name)
        rs = c["rope_scaling"]
        assert rs["original_max_position_embeddings"] * rs["factor"] == c["max_position_embeddings"]
    assert cfg("llama-3.1-405b")["rope_scaling"]["original_max_position_embeddings"] == 8192

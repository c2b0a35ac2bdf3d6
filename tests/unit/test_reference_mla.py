"""The MLA reference: the absorbed form equals the naive one, both equal a per-token loop of the
model's definition, the cache is positions-consistent across chunks, and the cache sizes match
DeepSeek-V3's config."""

from __future__ import annotations

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from inferview.reference import mla

F64 = torch.float64


def _rand(shape, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=F64) * scale


def _model(b=2, h=3, dm=16, dc=8, dn=4, dr=4, dv=6, t=7, seed=0):
    w = {"w_dkv": (dm, dc), "w_kr": (dm, dr), "w_qc": (h, dm, dn), "w_qr": (h, dm, dr),
         "w_uk": (h, dc, dn), "w_uv": (h, dc, dv), "w_o": (h, dv, dm)}
    out = {k: _rand(s, seed + i, 1 / math.sqrt(s[-2])) for i, (k, s) in enumerate(w.items())}
    out["hidden"] = _rand((b, t, dm), seed + 100)
    return out


def _loop(m, tq):
    """The definition, one head, query and key at a time, in float64."""
    hidden = m["hidden"]
    b, t, _ = hidden.shape
    c = hidden @ m["w_dkv"]
    kr = torch.stack([mla.rope_interleaved((hidden[:, j] @ m["w_kr"])[:, None], torch.tensor([j]))[:, 0]
                      for j in range(t)], dim=1)
    out = torch.zeros(b, tq, hidden.shape[-1], dtype=F64)
    for i in range(tq):
        pos = t - tq + i
        x = hidden[:, pos]
        for h in range(m["w_qc"].shape[0]):
            q = torch.cat([x @ m["w_qc"][h], mla.rope_interleaved((x @ m["w_qr"][h])[:, None],
                                                                 torch.tensor([pos]))[:, 0]], dim=-1)
            ks = [torch.cat([c[:, j] @ m["w_uk"][h], kr[:, j]], dim=-1) for j in range(pos + 1)]
            s = torch.stack([(q * k).sum(-1) for k in ks], dim=-1) / math.sqrt(q.shape[-1])
            p = torch.softmax(s, dim=-1)
            o = sum(p[:, j:j + 1] * (c[:, j] @ m["w_uv"][h]) for j in range(pos + 1))
            out[:, i] += o @ m["w_o"][h]
    return out


def _forms(m, tq):
    c, kr = mla.latent_kv(m["hidden"], m["w_dkv"], m["w_kr"])
    x = m["hidden"][:, -tq:]
    naive = mla.mla_naive(x, c, kr, m["w_qc"], m["w_qr"], m["w_uk"], m["w_uv"], m["w_o"])
    wq, wo = mla.absorb_weights(m["w_qc"], m["w_uk"], m["w_uv"], m["w_o"])
    absorbed = mla.mla_absorbed(x, c, kr, wq, m["w_qr"], wo, m["w_qc"].shape[-1] + m["w_qr"].shape[-1])
    return naive, absorbed


@settings(max_examples=15, deadline=None)
@given(h=st.integers(1, 3), dc=st.sampled_from([2, 8, 24]), dn=st.sampled_from([4, 8]),
       dr=st.sampled_from([2, 4]), t=st.integers(1, 6), data=st.data(), seed=st.integers(0, 999))
def test_naive_absorbed_and_loop_agree(h, dc, dn, dr, t, data, seed):
    tq = data.draw(st.integers(1, t))
    m = _model(h=h, dc=dc, dn=dn, dr=dr, t=t, seed=seed)
    naive, absorbed = _forms(m, tq)
    want = _loop(m, tq)
    assert torch.allclose(naive, want, atol=1e-12, rtol=1e-10)
    assert torch.allclose(absorbed, want, atol=1e-12, rtol=1e-10)


def test_shapes_and_absorbed_weights():
    m = _model(h=3, dm=16, dc=8, dn=4, dr=4, dv=6)
    wq, wo = mla.absorb_weights(m["w_qc"], m["w_uk"], m["w_uv"], m["w_o"])
    assert wq.shape == (3, 16, 8) and wo.shape == (3, 8, 16)
    assert torch.allclose(wq[1], m["w_qc"][1] @ m["w_uk"][1].T)
    assert torch.allclose(wo[2], m["w_uv"][2] @ m["w_o"][2])
    c, kr = mla.latent_kv(m["hidden"], m["w_dkv"], m["w_kr"])
    assert c.shape == (2, 7, 8) and kr.shape == (2, 7, 4)


def test_latent_kv_start_matches_a_longer_sequence():
    m = _model(t=9)
    full_c, full_kr = mla.latent_kv(m["hidden"], m["w_dkv"], m["w_kr"])
    c, kr = mla.latent_kv(m["hidden"][:, 5:], m["w_dkv"], m["w_kr"], start=5)
    assert torch.allclose(c, full_c[:, 5:]) and torch.allclose(kr, full_kr[:, 5:])
    c0, kr0 = mla.latent_kv(m["hidden"][:, 5:], m["w_dkv"], m["w_kr"])
    assert not torch.allclose(kr0, full_kr[:, 5:])  # position 0 is another rotation


def test_decode_equals_the_last_row_of_the_prefill():
    m = _model(t=6)
    prefill, _ = _forms(m, 6)
    decode, _ = _forms(m, 1)
    assert torch.allclose(prefill[:, -1:], decode, atol=1e-12)


def test_rope_interleaved_is_a_complex_rotation():
    y = _rand((2, 5, 8), 3)
    pos = torch.arange(5)
    got = mla.rope_interleaved(y, pos)
    inv = 10000.0 ** (-torch.arange(0, 8, 2, dtype=F64) / 8)
    z = torch.view_as_complex(y.reshape(2, 5, 4, 2).contiguous()) * torch.polar(torch.ones(5, 4, dtype=F64),
                                                                                  pos[:, None].double() * inv)
    assert torch.allclose(got, torch.view_as_real(z).reshape(2, 5, 8))
    assert torch.allclose(mla.rope_interleaved(y, torch.zeros(5, dtype=torch.long)), y)


def test_scores_depend_on_relative_position_only():
    """The RoPE part of the score at positions (p, p') equals that at (p + 3, p' + 3)."""
    q, k = _rand((1, 1, 8), 1), _rand((1, 1, 8), 2)
    a = (mla.rope_interleaved(q, torch.tensor([5])) * mla.rope_interleaved(k, torch.tensor([2]))).sum()
    b = (mla.rope_interleaved(q, torch.tensor([8])) * mla.rope_interleaved(k, torch.tensor([5]))).sum()
    assert torch.allclose(a, b)


def test_deepseek_v3_cache_sizes():
    cfg = {"num_attention_heads": 128, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
           "qk_rope_head_dim": 64, "v_head_dim": 128}
    assert mla.cache_values_per_token(cfg) == 576
    assert mla.expanded_values_per_token(cfg) == 128 * 192 + 128 * 128 == 40960


def test_rejects_more_queries_than_cached_tokens():
    m = _model(t=3)
    c, kr = mla.latent_kv(m["hidden"], m["w_dkv"], m["w_kr"])
    x = torch.cat([m["hidden"], m["hidden"][:, :1]], dim=1)
    try:
        mla.mla_naive(x, c, kr, m["w_qc"], m["w_qr"], m["w_uk"], m["w_uv"], m["w_o"])
    except ValueError:
        return
    raise AssertionError("4 queries over 3 cached tokens must raise ValueError")

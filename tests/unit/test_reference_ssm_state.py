"""Tests for ``inferview.reference.ssm_state``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from inferview.reference import ssm_state as ss
from inferview.reference.formulas import QUANTITIES

JAMBA = {"layers": 32, "period": 8, "offset": 4, "kv_heads": 8, "head_dim": 128}


def test_jamba_has_four_attention_layers_and_a_4_gib_cache_at_256k():
    assert ss.attention_layers(32, 8, 4) == 4
    # Lieber et al. 2024: 4 GB of KV cache at 256K tokens
    assert ss.hybrid_kv_cache_bytes(seq_len=262_144, **JAMBA) == 4 * 2**30


def test_jamba_mamba_state_per_sequence():
    # 28 Mamba layers x (8192 x 16 SSM + 8192 x 4 conv) values x 2 bytes
    assert ss.ssm_state_bytes(28, 8192, 16, 4) == 28 * (8192 * 16 + 8192 * 4) * 2


def test_mamba2_conv_runs_over_x_b_and_c():
    # Mamba-2: conv state (d_inner + 2 ngroups d_state) x d_conv
    assert ss.ssm_state_values(5120, 128, 4, "mamba2", 1) == 5120 * 128 + (5120 + 256) * 4


@given(seq=st.integers(1, 10**6), batch=st.integers(1, 64))
def test_state_is_constant_and_cache_linear_in_tokens(seq, batch):
    a = ss.hybrid_kv_cache_bytes(seq_len=seq, batch=batch, **JAMBA)
    assert a == 4 * 2 * 8 * 128 * 2 * seq * batch
    assert ss.ssm_state_bytes(28, 8192, 16, 4, batch) == batch * ss.ssm_state_bytes(28, 8192, 16, 4)


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        ss.attention_layers(32, 8, 8)
    with pytest.raises(ValueError, match="unknown version"):
        ss.ssm_state_values(8, 4, 4, "mamba3")


def test_quantities_are_registered():
    q = QUANTITIES["hybrid_kv_cache_bytes"]
    assert q.compute(None, {**JAMBA, "seq_len": 1024}) == 4 * 2 * 8 * 128 * 2 * 1024
    assert QUANTITIES["ssm_state_bytes"].compute(
        None, {"ssm_layers": 28, "d_inner": 8192, "d_state": 16, "d_conv": 4}) == 9_175_040

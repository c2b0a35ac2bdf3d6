"""The Triton flash-attention kernel against fp64 ground truth.

Without CUDA the kernel runs in Triton's interpreter (fp32, small shapes); the CUDA tests cover
fp16/bf16 and larger shapes on a GPU. Tolerance rule (flash-attention's test suite): the kernel's
error against fp64 is within 2x the error of a same-precision PyTorch baseline, plus a small slack.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import example, given, note, settings
from hypothesis import strategies as st
from inferview.reference.attention import attention_fp64
from inferview.reference.flash_attention import flash_attention, flash_attention_ref

CUDA = torch.cuda.is_available()
cuda = pytest.mark.cuda
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")


def _inputs(b, h, tq, tk, d, seed, dtype=torch.float32, device="cpu", scale=1.0, strided=False):
    g = torch.Generator().manual_seed(seed)

    def make(t):
        if strided:  # (B, T, H, D) transposed to (B, H, T, D): a non-contiguous view
            x = torch.randn(b, t, h, d, generator=g) * scale
            return x.to(device=device, dtype=dtype).transpose(1, 2)
        return (torch.randn(b, h, t, d, generator=g) * scale).to(device=device, dtype=dtype)

    return make(tq), make(tk), make(tk)


def _assert_within_baseline(out, q, k, v, causal, factor=2.0, slack=1e-5):
    exact = attention_fp64(q, k, v, causal=causal)
    base = flash_attention_ref(q, k, v, causal=causal) if q.dtype == torch.float32 else \
        attention_fp64(q, k, v, causal=causal).to(q.dtype)  # a same-precision rounding of exact
    err = (out.double() - exact).abs().max().item()
    err_base = (base.double() - exact).abs().max().item()
    assert out.dtype == q.dtype and out.shape == q.shape
    assert err <= factor * err_base + slack, f"error {err:.3g} vs baseline {err_base:.3g}"


@st.composite
def flash_cases(draw):
    causal = draw(st.booleans())
    tk = draw(st.sampled_from([1, 17, 31, 32, 33, 70]))
    tq = draw(st.sampled_from([t for t in (1, 5, 32, 33, 45) if not causal or t <= tk] or [tk]))
    d = draw(st.sampled_from([16, 32, 64, 128]))
    case = dict(b=draw(st.integers(1, 2)), h=draw(st.integers(1, 2)), tq=tq, tk=tk, d=d,
                seed=draw(st.integers(0, 999)), strided=draw(st.booleans()))
    note(f"{case} causal={causal}")
    return case, causal


@settings(max_examples=12)
@given(flash_cases())
@example(({"b": 1, "h": 1, "tq": 1, "tk": 1, "d": 16, "seed": 0, "strided": False}, True))
@example(({"b": 1, "h": 2, "tq": 31, "tk": 33, "d": 32, "seed": 1, "strided": True}, True))
def test_flash_matches_fp64_in_the_interpreter(case):
    c, causal = case
    q, k, v = _inputs(c["b"], c["h"], c["tq"], c["tk"], c["d"], c["seed"], strided=c["strided"])
    _assert_within_baseline(flash_attention(q, k, v, causal=causal), q, k, v, causal)


def test_flash_is_stable_for_huge_logits_and_custom_scale():
    q, k, v = _inputs(1, 1, 40, 40, 16, 3, scale=300.0)
    out = flash_attention(q, k, v, causal=True)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.double(), attention_fp64(q, k, v, causal=True), rtol=1e-4, atol=1e-3)
    out = flash_attention(q, k, v, sm_scale=0.01)
    torch.testing.assert_close(out.double(), flash_attention_ref(q.double(), k.double(), v.double(), sm_scale=0.01),
                               rtol=1e-4, atol=1e-4)


def test_flash_decode_and_chunk_use_bottom_right_alignment():
    q, k, v = _inputs(1, 2, 40, 40, 32, 4)
    full = flash_attention(q, k, v, causal=True)
    torch.testing.assert_close(flash_attention(q[:, :, -1:], k, v, causal=True), full[:, :, -1:],
                               rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(flash_attention(q[:, :, -7:], k, v, causal=True), full[:, :, -7:],
                               rtol=1e-5, atol=1e-5)


def test_flash_rejects_bad_inputs():
    q, k, v = _inputs(1, 1, 4, 4, 16, 0)
    with pytest.raises(ValueError):
        flash_attention(q[..., :8].contiguous(), k[..., :8].contiguous(), v[..., :8].contiguous())
    with pytest.raises(ValueError):
        flash_attention(torch.randn(1, 1, 5, 16), k, v, causal=True)
    with pytest.raises(ValueError):
        flash_attention(q, k.double(), v)


def test_module_import_sets_the_interpreter_only_without_cuda():
    import os

    if not CUDA:
        assert os.environ.get("TRITON_INTERPRET") == "1"


@cuda
@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("tq,tk", [(1, 1000), (333, 777), (1024, 1024)])
def test_flash_on_cuda(dtype, causal, d, tq, tk):
    q, k, v = _inputs(2, 4, tq, tk, d, 0, dtype=dtype, device="cuda", strided=True)
    out = flash_attention(q, k, v, causal=causal)
    if dtype == torch.float32:
        _assert_within_baseline(out, q, k, v, causal, slack=1e-4)
        return
    exact = attention_fp64(q, k, v, causal=causal)
    base = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=False,
                                                            attn_mask=_sdpa_mask(tq, tk, causal))
    err = (out.double() - exact).abs().max().item()
    err_base = (base.double() - exact).abs().max().item()
    assert err <= 2 * err_base + 1e-3, (err, err_base)


def _sdpa_mask(tq, tk, causal):
    if not causal:
        return None
    from inferview.reference.attention import causal_mask

    return causal_mask(tq, tk, "cuda")


@pytest.mark.skipif(CUDA, reason="the interpreter path only")
def test_kernel_works_when_triton_was_imported_first():
    """tl.max/tl.sum/tl.zeros are jit'd in compiled mode if triton is imported before the variable
    is set (as in a pytest session); the kernel must not depend on them."""
    import subprocess
    import sys

    code = ("import os; os.environ.pop('TRITON_INTERPRET', None)\n"
            "import triton, torch\n"
            "from inferview.reference.flash_attention import flash_attention\n"
            "from inferview.reference.attention import attention_fp64\n"
            "q = torch.randn(1, 1, 20, 16); k = torch.randn(1, 1, 40, 16)\n"
            "err = (flash_attention(q, k, k, causal=True).double() - attention_fp64(q, k, k, causal=True)).abs().max()\n"
            "assert err < 1e-5, err\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]

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


def test_launch_falls_back_to_a_smaller_config_and_remembers_it():
    """A device with less shared memory (a T4's 64 KiB) rejects the first config at load time."""
    from inferview.reference import flash_attention as fa
    from triton.runtime.errors import OutOfResources

    configs = fa.kernel_configs(128, torch.float16, on_cuda=True)
    tried = []

    def launch(cfg):
        tried.append(cfg)
        if cfg.block_m * cfg.block_n > 64 * 64:  # pretend only the smaller tiles fit
            raise OutOfResources(98304, 65536, "shared memory")

    key = ("test-device", torch.float16, 128, True)
    fa._working_config.pop(key, None)
    try:
        chosen = fa.launch_with_fallback(key, configs, launch)
        assert chosen == configs[1] and tried == [configs[0], configs[1]]
        tried.clear()
        assert fa.launch_with_fallback(key, configs, launch) == configs[1] and tried == [configs[1]]

        def never_fits(cfg):
            raise OutOfResources(1, 0, "shared memory")

        with pytest.raises(OutOfResources):
            fa.launch_with_fallback(("other",), configs, never_fits)
    finally:
        fa._working_config.pop(key, None)


_AOT = """
import os, sys, json
os.environ["TRITON_INTERPRET"] = "0"
import torch, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from inferview.reference import flash_attention as fa

fn = fa.flash_attention_kernel
names = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
results = []
for cap, dt, d, causal, index in json.loads(sys.argv[1]):
    cfg = fa.kernel_configs(d, names[dt], True)[index]
    sig = {}
    for a in fn.arg_names:
        if a.endswith("_ptr"):
            sig[a] = "*" + dt
        elif a.startswith("stride") or a in ("num_heads", "seq_q", "seq_k"):
            sig[a] = "i32"
        elif a == "qk_scale":
            sig[a] = "fp32"
        else:
            sig[a] = "constexpr"
    consts = dict(CAUSAL=causal, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, HEAD_DIM=d,
                  DOT_PRECISION="ieee" if dt == "fp32" else "tf32")
    kernel = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts),
                            target=GPUTarget("cuda", cap, 32),
                            options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages})
    results.append(kernel.metadata.shared)
print(json.dumps(results))
"""


@pytest.mark.skipif(CUDA, reason="the GPU tests run the kernel itself")
def test_kernel_compiles_for_cuda_targets_within_their_shared_memory(tmp_path):
    """Without a GPU, compile the CUDA path ahead of time (Triton's bundled ptxas needs no driver).

    This catches what the interpreter cannot: code that does not lower for fp16/bf16 on real
    targets, and configs that need more shared memory than a device has. Limits per block (opt-in):
    sm_90 (H100) 227 KiB, sm_80 (A100) 163 KiB, sm_75 (T4) 64 KiB.
    """
    import json
    import os
    import subprocess
    import sys

    cases = [  # (compute capability, dtype, head_dim, causal, index into kernel_configs), limit
        ((90, "fp16", 128, True, 0), 227 * 1024),
        ((80, "bf16", 64, False, 0), 163 * 1024),
        ((90, "fp32", 64, True, 0), 227 * 1024),
        ((75, "fp16", 128, True, 1), 64 * 1024),  # the first config needs 96 KiB on sm_75
    ]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path)
    env["TRITON_DEFAULT_FP_FUSION"] = "1"
    out = subprocess.run([sys.executable, "-c", _AOT, json.dumps([c for c, _ in cases])],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    shared = json.loads(out.stdout.strip().splitlines()[-1])
    for (case, limit), used in zip(cases, shared, strict=True):
        assert 0 < used <= limit, f"{case}: {used} bytes of shared memory, limit {limit}"

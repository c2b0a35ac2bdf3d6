"""Unit tests of the grading engine's parts: codec, static scan, statistics, tolerances,
assertions, entry-point messages, strategies and import hygiene."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from inferview.graders import codec, stats, tolerances
from inferview.graders import strategies as gs
from inferview.graders.api import CheckFailed, expect_close, expect_equal, expect_shape
from inferview.graders.engine import _signature_problem, entry_point_problems
from inferview.graders.scan import Rule, scan_source

from inferview.content.models import EntryPoint


def roundtrip(value):
    enc = codec.Encoder()
    header = enc.value(value)
    frame = codec.encode({"v": header}, enc.buffers)
    reader = codec.FrameReader()
    reader.feed(frame[:7])
    assert reader.pop() is None  # partial frames wait for more bytes
    reader.feed(frame[7:])
    got, buffers = reader.pop()
    return codec.Decoder(buffers).value(got["v"])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64,
                                   torch.bool, torch.uint8, torch.float64])
def test_codec_keeps_dtype_values_and_strides(dtype):
    base = gs.tensor((3, 4, 5), 1, dtype)
    for t in (base, base.transpose(0, 2), base[:, 1:3, ::2], base.expand(2, 3, 4, 5)[1],
              base[0, 0, 0]):
        got = roundtrip(t)
        assert got.dtype == t.dtype and got.shape == t.shape
        assert got.stride() == t.stride()
        assert torch.equal(got, t)


def test_codec_transposed_view_arrives_as_a_view():
    t = torch.arange(24.0).reshape(2, 3, 4).transpose(1, 2)
    got = roundtrip(t)
    assert not got.is_contiguous() and got.stride() == t.stride()


def test_codec_other_values():
    g = torch.Generator().manual_seed(5)
    torch.rand(3, generator=g)
    value = {"a": [1, 2.5, float("nan"), float("-inf"), None, True, "s"], 3: (torch.float16,
             torch.device("cpu"), torch.Size([2, 3])), "g": g, "big": 2**70, "c": 1 + 2j}
    got = roundtrip(value)
    assert got["a"][:2] == [1, 2.5] and math.isnan(got["a"][2]) and got["a"][3] == -math.inf
    assert got["a"][4:] == [None, True, "s"]
    assert got[3] == (torch.float16, torch.device("cpu"), (2, 3))
    assert got["big"] == 2**70 and got["c"] == 1 + 2j
    assert torch.equal(torch.rand(4, generator=got["g"]), torch.rand(4, generator=g))


def test_codec_unsupported_and_meta():
    got = roundtrip(object())
    assert isinstance(got, codec.Unsupported) and got.type_name == "object"
    meta = roundtrip(torch.empty(2, 3, device="meta"))
    assert meta.device.type == "meta" and meta.shape == (2, 3)


@pytest.mark.parametrize("frame", [b"XXXX" + b"\0" * 20, codec.MAGIC + b"\xff\xff\xff\xff\0\0\0\0"])
def test_codec_rejects_malformed_frames(frame):
    reader = codec.FrameReader()
    reader.feed(frame)
    with pytest.raises(codec.CodecError):
        reader.pop()


def test_codec_rejects_layout_outside_buffer():
    enc = codec.Encoder()
    header = enc.value(torch.zeros(4))
    header["shape"] = [100]
    with pytest.raises(codec.CodecError):
        codec.Decoder(enc.buffers).value(header)


RULES = [Rule("torch.matmul", "no matmul"), Rule("@"), Rule("softmax"),
         Rule("torch.nn.functional.scaled_dot_product_attention")]


@pytest.mark.parametrize("source, rule", [
    ("import torch\ny = torch.matmul(a, b)", "torch.matmul"),
    ("import torch as T\ny = T.matmul(a, b)", "torch.matmul"),
    ("from torch import matmul as mm\ny = mm(a, b)", "torch.matmul"),
    ("y = a @ b", "@"),
    ("a @= b", "@"),
    ("import operator\ny = operator.matmul(a, b)", "@"),
    ("y = x.softmax(-1)", "softmax"),
    ("import torch.nn.functional as F\ny = F.softmax(x, -1)", "softmax"),
    ("from torch.nn import functional\ny = functional.scaled_dot_product_attention(q, k, v)",
     "torch.nn.functional.scaled_dot_product_attention"),
    ("import torch\nf = getattr(torch, 'mat' + 'mul')", "torch.matmul"),
    ("import torch\nf = getattr(torch, f'{\"mat\"}mul')", "torch.matmul"),
    ("import torch\nf = getattr(torch, ''.join(['ma', 'tmul']))", "torch.matmul"),
    ("import torch\nf = getattr(torch, 'lumtam'[::-1])", "torch.matmul"),
    ("import torch\nname = input()\nf = getattr(torch, name)", "dynamic lookup"),
    ("import inferview.reference.attention", "import inferview"),
    ("from inferview.reference import attention", "import inferview"),
    ("import importlib\nimportlib.import_module('inferview.graders')", "import inferview"),
    ("m = __import__('graders')", "import graders"),
])
def test_scan_finds_forbidden_uses(source, rule):
    found = scan_source(source, RULES)
    assert rule in {v.rule for v in found}, found
    assert all(v.line for v in found)


def test_scan_allows_clean_code_and_names_lines():
    src = "import torch\n\ndef f(q, k):\n    s = (q * k).sum(-1)\n    return torch.exp(s)\n"
    assert scan_source(src, RULES) == []
    found = scan_source("import torch\n\n\nz = x @ y\n", RULES)
    assert found[0].line == 4 and "line 4" in found[0].describe()


def test_chi_square_pools_small_expected_counts():
    probs = [0.5, 0.3, 0.17, 0.01, 0.01, 0.01]
    r = stats.chi_square_gof([50, 30, 17, 1, 1, 1], probs)
    assert r.bins == 3 and r.dof == 2 and r.p_value > 0.9  # 1+1+1 pooled into the 17 bin
    assert stats.chi_square_gof([0, 100, 0, 0, 0, 0], probs).p_value < 1e-10


def test_chi_square_impossible_outcome():
    r = stats.chi_square_gof([5, 5, 1], [0.5, 0.5, 0.0])
    assert r.p_value == 0.0 and r.impossible == 1


def test_binomial_and_ks():
    assert stats.binomial_test(50, 100, 0.5) == pytest.approx(1.0)
    assert stats.binomial_test(90, 100, 0.5) < 1e-10
    assert stats.binomial_test(0, 10, 0.0) == 1.0 and stats.binomial_test(1, 10, 0.0) == 0.0
    rng = np.random.default_rng(0)
    assert stats.ks_uniform(rng.random(500)) > 1e-3
    assert stats.ks_uniform(rng.random(500) ** 2) < 1e-6


def test_chi_square_false_failure_rate_is_as_stated():
    """Under the null, p < 0.05 about 5 % of the time (pooling keeps the approximation)."""
    rng = np.random.default_rng(1)
    probs = np.array([0.4, 0.3, 0.2, 0.05, 0.03, 0.02])
    rejections = sum(
        stats.chi_square_gof(np.bincount(rng.choice(6, 200, p=probs), minlength=6), probs).p_value
        < 0.05 for _ in range(400))
    assert 5 <= rejections <= 40


def test_tolerances_table_matches_torch_defaults():
    assert tolerances.for_dtype(torch.float32) == (1.3e-6, 1e-5)
    assert tolerances.for_dtype(torch.bfloat16) == (1.6e-2, 1e-5)
    assert tolerances.for_dtype(torch.int32) == (0.0, 0.0)
    exact = torch.randn(64, dtype=torch.float64)
    base = exact.float()
    ok, err, berr = tolerances.within_baseline_error(base, base, exact)
    assert ok and err == berr
    bad = base + 1e-2
    assert not tolerances.within_baseline_error(bad, base, exact)[0]


def test_expect_close_reports_mismatches():
    want = torch.zeros(3, 4)
    got = want.clone()
    got[1, 2] = 1.0
    with pytest.raises(CheckFailed, match=r"1 of 12 elements differ[\s\S]*at \(1, 2\)"):
        expect_close(got, want, what="out")
    with pytest.raises(CheckFailed, match="expected shape"):
        expect_close(torch.zeros(4, 3), want)
    with pytest.raises(CheckFailed, match="expected dtype"):
        expect_close(want.double(), want)
    with pytest.raises(CheckFailed, match="expected a tensor"):
        expect_close(None, want)
    with pytest.raises(CheckFailed, match="NaN"):
        expect_close(torch.full((3, 4), float("nan")), want)
    expect_close(want + 1e-7, want)
    expect_close((want, 1.0), (want, 1.0))
    with pytest.raises(CheckFailed):
        expect_equal(True, 1)
    with pytest.raises(CheckFailed):
        expect_shape(want, (4, 3))


def test_entry_point_messages():
    class Spec:
        entry_points = [EntryPoint(name="KVCache", kind="class", signature="(self, batch_size, heads)",
                                   methods=["update"]),
                        EntryPoint(name="attend", signature="(q, k, v, causal=False)")]

    info = {"names": ["KvCache", "attend"], "entry_points": {
        "KVCache": {"exists": False},
        "attend": {"exists": True, "is_class": False, "callable": True,
                   "params": [["q", "POSITIONAL_OR_KEYWORD", False],
                              ["k", "POSITIONAL_OR_KEYWORD", False]]}}}
    msgs = entry_point_problems(Spec, info)
    assert msgs[0] == "KVCache not defined; did you mean KvCache?"
    assert "wrong signature: attend(q, k)" in msgs[1] and "'v' is missing" in msgs[1]


def test_signature_accepts_extra_defaults_and_varargs():
    ep = EntryPoint(name="f", signature="(q, k, causal=False)")
    ok = [["q", "POSITIONAL_OR_KEYWORD", False], ["k", "POSITIONAL_OR_KEYWORD", False],
          ["causal", "POSITIONAL_OR_KEYWORD", True], ["extra", "KEYWORD_ONLY", True]]
    assert _signature_problem(ep, ok) is None
    assert _signature_problem(ep, [["args", "VAR_POSITIONAL", False],
                                   ["kwargs", "VAR_KEYWORD", False]]) is None
    swapped = [["k", "POSITIONAL_OR_KEYWORD", False], ["q", "POSITIONAL_OR_KEYWORD", False],
               ["causal", "POSITIONAL_OR_KEYWORD", True]]
    assert "parameter 1 should be 'q'" in _signature_problem(ep, swapped)
    assert "no default" in _signature_problem(ep, ok[:3] + [["x", "POSITIONAL_OR_KEYWORD", False]])


@settings(max_examples=20, deadline=None)
@given(shape=gs.shapes(max_dims=3), seed=gs.seeds(), dtype=gs.dtypes())
def test_tensor_strategy_is_a_function_of_its_arguments(shape, seed, dtype):
    a = gs.tensor(shape, seed, dtype)
    b = gs.tensor(shape, seed, dtype)
    assert a.shape == shape and a.dtype == dtype and torch.equal(a, b)
    nc = gs.non_contiguous(a)
    assert torch.equal(nc, a)


@given(t=gs.tensors(shape=st.just((2, 3))))
@settings(max_examples=5, deadline=None)
def test_tensors_strategy(t):
    assert t.shape == (2, 3)


def test_client_and_headless_modules_do_not_import_torch_or_textual():
    code = ("import sys\nimport inferview.graders.client\nimport inferview.graders\n"
            "bad = [m for m in ('torch', 'textual') if m in sys.modules]\nprint(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
    code = ("import sys\nimport inferview.graders.engine\n"
            "print('textual' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


def test_codec_rejects_a_nesting_bomb():
    head = ("[" * 100_000 + "]" * 100_000).encode()
    frame = codec.MAGIC + len(head).to_bytes(4, "big") + (0).to_bytes(4, "big") + head
    reader = codec.FrameReader()
    reader.feed(frame)
    with pytest.raises(codec.CodecError):
        reader.pop()


def test_counterexample_of_an_explicit_example_reads_like_a_drawn_one():
    from hypothesis import example
    from inferview.graders.api import Ctx
    from inferview.graders.engine import _format_counterexample

    ctx = Ctx.__new__(Ctx)
    ctx.notes = []

    @settings(database=None, max_examples=1)
    @given(case=st.just((9, 9)))
    @example(case=(1, 2))
    def tracking(ctx, case):
        raise CheckFailed("wrong")

    with pytest.raises(CheckFailed) as info:
        tracking(ctx=ctx)
    text = _format_counterexample(info.value, ctx, "tracking", 3)
    assert text.splitlines() == ["case=(1, 2)", "replay: --seed 3"], text


def test_gpu_triton_workers_share_a_kernel_cache_and_cpu_workers_interpret(tmp_path, monkeypatch):
    """On a GPU a re-grade reuses compiled kernels; on a CPU Triton interprets and caches nothing."""
    from inferview.graders.process import WorkerProcess

    monkeypatch.setenv("INFERVIEW_HOME", str(tmp_path / "home"))
    gpu, cpu = WorkerProcess(triton=True, device="cuda"), WorkerProcess(triton=True, device="cpu")
    try:
        env = gpu.env()
        assert env["TRITON_CACHE_DIR"] == str(tmp_path / "home" / "cache" / "triton")
        assert "TRITON_INTERPRET" not in env and (tmp_path / "home" / "cache" / "triton").is_dir()
        env = cpu.env()
        assert env["TRITON_INTERPRET"] == "1" and env["CUDA_VISIBLE_DEVICES"] == ""
        assert env["TRITON_CACHE_DIR"].startswith(str(cpu.tmp))
    finally:
        gpu.close()
        cpu.close()
    monkeypatch.setenv("INFERVIEW_HOME", str(tmp_path / "a-file"))
    (tmp_path / "a-file").write_text("")
    gpu = WorkerProcess(triton=True, device="cuda")
    try:  # no usable data folder: the run's own temporary folder still works
        assert gpu.env()["TRITON_CACHE_DIR"].startswith(str(gpu.tmp))
    finally:
        gpu.close()

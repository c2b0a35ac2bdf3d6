"""``inferview bench``: the reference kernels' speed on the present device.

Three measurements, each tied to an interview claim:

1. **Attention throughput** — the Triton flash-attention kernel (:mod:`.flash_attention`) against
   PyTorch's ``scaled_dot_product_attention`` and against the device's dense bf16 tensor-core peak.
   FLOPs are ``4 * B * H * Tq * Tk * D`` (halved for causal), the FlashAttention papers' convention.
2. **Decode with and without a KV cache** — the tiny decoder (:mod:`.tiny_decoder`) at growing
   context lengths: a cached step encodes one token, an uncached step re-encodes the whole prefix,
   so over a generation total work is linear with the cache and quadratic without it.
3. **Speculative decoding** — speed-up against acceptance rate, from
   ``inferview.reference.speculative.speculative_bench`` when that module is installed.

On a CPU everything runs at small sizes in seconds and Triton runs in its interpreter, so the
kernel numbers there say nothing about kernel speed; the real figures are GPU figures.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

# Dense (no sparsity) bf16 tensor-core peaks in TFLOP/s, matched by substring of the device name,
# most specific first. Sources: NVIDIA H100 and H200 Tensor Core GPU datasheets (the 1,979 / 1,671 /
# 1,513 TFLOP/s "with sparsity" figures halved), NVIDIA A100 datasheet (312), NVIDIA L4 datasheet
# (242 with sparsity -> 121), NVIDIA L40S datasheet (733 with sparsity -> 362), NVIDIA Ada Lovelace
# architecture whitepaper, appendix (RTX 4090: 165.2 with FP32 accumulate).
PEAK_BF16_TFLOPS: list[tuple[str, float, str]] = [
    ("H200 NVL", 835.5, "NVIDIA H200 datasheet (NVL), dense bf16"),
    ("H200", 989.4, "NVIDIA H200 datasheet (SXM), dense bf16"),
    ("H100 NVL", 835.5, "NVIDIA H100 datasheet (NVL), dense bf16"),
    ("H100 PCIe", 756.5, "NVIDIA H100 datasheet (PCIe), dense bf16"),
    ("H100", 989.4, "NVIDIA H100 datasheet (SXM), dense bf16"),
    ("A100", 312.0, "NVIDIA A100 datasheet, dense bf16"),
    ("L40S", 362.1, "NVIDIA L40S datasheet, dense bf16"),
    ("L4", 121.0, "NVIDIA L4 datasheet, dense bf16"),
    ("RTX 4090", 165.2, "NVIDIA Ada whitepaper, bf16 with fp32 accumulate"),
]


def peak_tflops(device_name: str) -> tuple[float | None, str]:
    """Known dense bf16 peak for ``device_name`` and its source, or ``(None, reason)``."""
    for key, value, source in PEAK_BF16_TFLOPS:
        if key.lower() in device_name.lower():
            return value, source
    return None, "no published peak in the table for this device"


@dataclass(frozen=True)
class BenchSizes:
    """Problem sizes for one run: small on a CPU (or with ``quick``), realistic on a GPU."""

    attention: list[tuple[int, int, int, int, bool]]  # (batch, heads, seq, head_dim, causal)
    decode_contexts: list[int]
    decoder_dim: int
    decoder_layers: int
    reps: int

    @staticmethod
    def for_device(on_cuda: bool, quick: bool = False) -> BenchSizes:
        if quick:
            return BenchSizes([(1, 2, 64, 32, True)], [64, 256, 1024], 32, 1, 5)
        if not on_cuda:
            return BenchSizes([(1, 2, 128, 64, False), (1, 2, 128, 64, True)], [64, 128, 256, 512],
                              64, 2, 3)
        return BenchSizes(
            [(4, 16, 1024, 64, False), (4, 16, 4096, 64, True), (2, 16, 4096, 128, True),
             (1, 16, 16384, 128, True)],
            [512, 1024, 2048, 4096, 8192], 512, 8, 20)


@dataclass
class BenchReport:
    """Everything ``inferview bench`` prints (``--json`` prints ``asdict`` of it)."""

    device: str
    device_name: str
    peak_tflops: float | None
    peak_source: str
    attention: list[dict[str, Any]] = field(default_factory=list)
    decode: list[dict[str, Any]] = field(default_factory=list)
    speculative: list[dict[str, Any]] | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _timer(device: str) -> Callable[[Callable[[], Any], int], float]:
    import torch

    def measure(fn: Callable[[], Any], reps: int) -> float:
        """Median seconds per call after one warm-up call."""
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            if device == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        return sorted(times)[len(times) // 2]

    return measure


def bench_attention(device: str, sizes: BenchSizes, peak: float | None) -> list[dict[str, Any]]:
    """TFLOP/s of the Triton kernel and of SDPA on each attention shape."""
    import torch
    import torch.nn.functional as F
    from inferview.reference.attention import attention_flops
    from inferview.reference.flash_attention import flash_attention

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    measure = _timer(device)
    rows = []
    for b, h, t, d, causal in sizes.attention:
        g = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(b, h, t, d, generator=g).to(device=device, dtype=dtype) for _ in range(3))
        flops = attention_flops(b, h, t, t, d, causal=causal)
        t_tri = measure(lambda: flash_attention(q, k, v, causal=causal), sizes.reps)  # noqa: B023
        t_sdpa = measure(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), sizes.reps)  # noqa: B023
        tri, sdpa = flops / t_tri / 1e12, flops / t_sdpa / 1e12
        rows.append({
            "shape": f"B={b} H={h} T={t} D={d}", "causal": causal, "dtype": str(dtype).replace("torch.", ""),
            "triton_ms": t_tri * 1e3, "sdpa_ms": t_sdpa * 1e3, "triton_tflops": tri, "sdpa_tflops": sdpa,
            "triton_pct_of_peak": (100 * tri / peak) if peak else None,
            "sdpa_pct_of_peak": (100 * sdpa / peak) if peak else None,
        })
    return rows


def bench_decode(device: str, sizes: BenchSizes) -> list[dict[str, Any]]:
    """One decode step's time at each context length, with and without the KV cache."""
    import torch
    from inferview.reference.tiny_decoder import TinyDecoder, TinyDecoderConfig

    measure = _timer(device)
    longest = max(sizes.decode_contexts) + 1
    cfg = TinyDecoderConfig(dim=sizes.decoder_dim, num_layers=sizes.decoder_layers, num_heads=8,
                            num_kv_heads=2, ffn_dim=4 * sizes.decoder_dim, max_seq_len=longest)
    model = TinyDecoder(cfg, device=device)
    rows = []
    with torch.no_grad():
        # warm the model once, untimed: the first forward of a process pays one-off set-up costs
        # that would otherwise land in the first row
        warm = model.prompt(1, longest, seed=0)
        model.forward(warm)
        model.forward(warm[:, :-1], model.new_caches(1, longest))
        for ctx_len in sizes.decode_contexts:
            tokens = model.prompt(1, ctx_len + 1, seed=ctx_len)
            caches = model.new_caches(1, ctx_len + 1)
            model.forward(tokens[:, :ctx_len], caches)  # prefill, not timed

            def cached_step(caches=caches, tokens=tokens, ctx_len=ctx_len) -> None:
                for c in caches:
                    c.seq_len = ctx_len  # rewind: every repetition decodes the same position
                model.forward(tokens[:, ctx_len:], caches, start_pos=ctx_len)

            t_cached = measure(cached_step, sizes.reps)
            t_full = measure(lambda tokens=tokens: model.forward(tokens), sizes.reps)
            rows.append({"context": ctx_len, "cached_step_ms": t_cached * 1e3,
                         "uncached_step_ms": t_full * 1e3, "speedup": t_full / t_cached})
    return rows


def bench_speculative(device: str, quick: bool = False) -> tuple[list[dict[str, Any]] | None, str | None]:
    """Rows from ``inferview.reference.speculative.speculative_bench``, or a note why there are none."""
    try:
        from inferview.reference.speculative import speculative_bench
    except ImportError as exc:
        return None, f"speculative decoding: not measured ({exc})"
    kwargs: dict[str, Any] = {"alphas": (0.6, 0.9), "gammas": (1, 4), "batch": 256} if quick else {}
    return list(speculative_bench(device, **kwargs)), None


GROWTH_VISIBLE = 1.5
"""Below this growth of the uncached step, per-call overhead hides the cost of the prefix."""


def _ratio(x: float) -> str:
    return f"{x:.1f}" if x < 10 else f"{x:.0f}"


def growth_note(first: dict[str, Any], last: dict[str, Any]) -> str:
    """What the decode rows show as the context grows (with the measured ratios, to 2 figures)."""
    grow = last["context"] / first["context"]
    full = last["uncached_step_ms"] / first["uncached_step_ms"]
    cached = last["cached_step_ms"] / first["cached_step_ms"]
    text = (f"Context x{grow:g}: the uncached step grew x{_ratio(full)} (it re-encodes the prefix), "
            f"the cached step x{_ratio(cached)} (one token, reading a longer cache).")
    if full < GROWTH_VISIBLE:
        return text + (" At these sizes fixed per-call costs dominate both; run without --quick (or "
                       "on a GPU at longer contexts) to see the uncached step grow with the context.")
    return text + " Summed over a generation: quadratic versus linear."


def run_bench(device: str | None = None, quick: bool = False) -> BenchReport:
    """Run every section on ``device`` (default: CUDA when present)."""
    import torch
    from inferview.reference.flash_attention import interpreting

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    on_cuda = device == "cuda"
    name = torch.cuda.get_device_name() if on_cuda else "CPU"
    peak, source = peak_tflops(name) if on_cuda else (None, "CPU: no tensor-core peak")
    report = BenchReport(device, name, peak, source)
    sizes = BenchSizes.for_device(on_cuda, quick)
    if not on_cuda or interpreting():
        report.notes.append("Triton runs in its CPU interpreter here: kernel timings are not kernel "
                            "speeds. Attention TFLOP/s and % of peak are GPU figures; run on a CUDA GPU.")
    report.attention = bench_attention(device, sizes, peak)
    report.decode = bench_decode(device, sizes)
    if len(report.decode) >= 2:
        a, b = report.decode[0], report.decode[-1]
        report.notes.append(growth_note(a, b))
    report.speculative, note = bench_speculative(device, quick)
    if note:
        report.notes.append(note)
    return report

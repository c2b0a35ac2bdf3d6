"""``inferview bench [--json] [--quick] [--device auto|cpu|cuda]``: reference kernels' speed here.

torch is imported only when the command runs (``inferview.reference.bench``).
"""

from __future__ import annotations

import json
import os

import click


def _fmt(x: float | None, spec: str = ".1f") -> str:
    return "-" if x is None else format(x, spec)


def _tflops(x: float) -> str:
    return "<0.01" if x < 0.01 else format(x, ".3g")


@click.command("bench")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--quick", is_flag=True, default=lambda: os.environ.get("INFERVIEW_BENCH_QUICK") == "1",
              help="Tiny sizes (a few seconds anywhere); also set by INFERVIEW_BENCH_QUICK=1.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="Where to run.")
def command(as_json: bool, quick: bool, device: str) -> None:
    """Attention TFLOP/s of the Triton kernel vs SDPA and the device's peak, decode step time with and
    without a KV cache across context lengths, and speculative-decoding speed-up vs acceptance rate."""
    from inferview.reference.bench import run_bench

    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise click.UsageError("--device cuda: no CUDA GPU is available")
    report = run_bench(None if device == "auto" else device, quick=quick)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
        return

    from rich.console import Console
    from rich.table import Table

    console = Console()
    peak = f"{report.peak_tflops:g} TFLOP/s dense bf16 ({report.peak_source})" if report.peak_tflops \
        else report.peak_source
    console.print(f"[bold]Device:[/bold] {report.device_name} · peak: {peak}")

    dtype = report.attention[0]["dtype"] if report.attention else ""
    t = Table(title=f"Attention forward, {dtype} (TF/s = TFLOP/s; %pk = of peak)", title_justify="left")
    for col in ("B·H·T·D", "causal", "Triton ms", "TF/s", "%pk", "SDPA ms", "TF/s", "%pk"):
        t.add_column(col, justify="left" if col == "B·H·T·D" else "right", no_wrap=True)
    for r in report.attention:
        shape = "·".join(part.split("=")[1] for part in r["shape"].split())
        t.add_row(shape, "yes" if r["causal"] else "no", _fmt(r["triton_ms"], ".2f"), _tflops(r["triton_tflops"]),
                  _fmt(r["triton_pct_of_peak"]), _fmt(r["sdpa_ms"], ".2f"), _tflops(r["sdpa_tflops"]),
                  _fmt(r["sdpa_pct_of_peak"]))
    console.print(t)

    d = Table(title="One decode step of the tiny decoder", title_justify="left")
    for col in ("context", "with KV cache ms", "without cache ms", "cache speed-up"):
        d.add_column(col, justify="right")
    for r in report.decode:
        d.add_row(str(r["context"]), _fmt(r["cached_step_ms"], ".2f"), _fmt(r["uncached_step_ms"], ".2f"),
                  f"x{r['speedup']:.1f}")
    console.print(d)

    if report.speculative:
        s = Table(title="Speculative decoding: tokens per target step and speed-up (measured / theory)",
                  title_justify="left")
        for col in ("alpha", "gamma", "tokens/step", "theory", "speed-up", "theory", "verify ms"):
            s.add_column(col, justify="right")
        for r in report.speculative:
            s.add_row(_fmt(r.get("alpha"), "g"), str(r.get("gamma", "-")), _fmt(r.get("tokens_per_step"), ".2f"),
                      _fmt(r.get("tokens_per_step_theory"), ".2f"), _fmt(r.get("walltime_factor"), ".2f"),
                      _fmt(r.get("walltime_factor_theory"), ".2f"), _fmt(r.get("verify_ms"), ".2f"))
        console.print(s)
        ratio = report.speculative[0].get("cost_ratio")
        if ratio is not None:
            console.print(f"[dim]Speed-up assumes a draft costing {ratio:g} of a target step "
                          "(Leviathan et al. 2023, Theorem 3.8).[/dim]")
    for note in report.notes:
        console.print(f"[dim]- {note}[/dim]")

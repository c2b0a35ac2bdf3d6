"""The calculator: KV-cache and weight memory over model presets (or a config.json), with the
largest batch and context that fit a chosen GPU, and a plot of memory against context length.

"Practise the estimate once with real numbers" (seed: the KV cache): every figure here comes from
``inferview.reference.estimators``, the same functions the drills are graded against.
"""

from __future__ import annotations

from inferview.reference import presets
from inferview.tui.calculation import (
    DTYPES,
    KV_DTYPES,
    WEIGHT_SCOPES,
    CalcInputs,
    CalcResult,
    calculate,
    memory_curve,
)
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Label, Select, Static
from textual_plotext import PlotextPlot

from inferview.model_config import parse_count
from inferview.practice.units import format_bytes

DEFAULT_MODEL = "llama-3-8b"
DEFAULT_GPU = "h100-sxm"


def _fmt_int(n: int | None) -> str:
    return "no limit" if n is None else f"{n:,}"


def _short_count(n: int) -> str:
    """1536 -> "1.5k", 131072 -> "128k" (binary k, as context lengths are quoted)."""
    if n >= 1024 * 1024:
        return f"{n / 1024 / 1024:.3g}M"
    if n >= 1024:
        return f"{n / 1024:.3g}k"
    return str(n)


class CalculatorScreen(Screen[None]):
    """Pick a model, dtypes, batch, context and GPU; read the bytes."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="calc-main"):
            with Vertical(id="calc-form"):
                yield Label("Model preset", id="calc-model-label")
                yield Select([(p.title, name) for name, p in presets.MODELS.items()], value=DEFAULT_MODEL,
                             allow_blank=False, compact=True, id="calc-model")
                yield Label("…or config.json path")
                yield Input(placeholder="~/models/x/config.json", compact=True, id="calc-config")
                yield Label("KV cache dtype")
                yield Select([(d, d) for d in KV_DTYPES], value="bf16", allow_blank=False,
                             compact=True, id="calc-kv-dtype")
                yield Label("Weights dtype")
                yield Select([(d, d) for d in DTYPES], value="bf16", allow_blank=False, compact=True,
                             id="calc-w-dtype")
                yield Label("…applied to")
                yield Select([(s, s) for s in WEIGHT_SCOPES], value="all", allow_blank=False,
                             compact=True, id="calc-w-scope")
                yield Label("Batch (sequences)")
                yield Input("1", compact=True, id="calc-batch")
                yield Label("Context (8k = 8192)")
                yield Input("8192", compact=True, id="calc-context")
                yield Label("GPU")
                yield Select([(g.title, name) for name, g in presets.GPUS.items()], value=DEFAULT_GPU,
                             allow_blank=False, compact=True, id="calc-gpu")
                yield Label("GPUs")
                yield Input("1", compact=True, id="calc-gpus")
            with Vertical(id="calc-out"):
                with VerticalScroll(id="calc-numbers"):
                    yield Static(id="calc-result")
                yield PlotextPlot(id="calc-plot")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Calculator"
        self.query_one("#calc-form").border_title = "Inputs"
        self.query_one("#calc-numbers").border_title = "Memory"
        self.result: CalcResult | None = None
        self.error: str | None = None
        self.recalculate()
        self.query_one("#calc-model", Select).focus()

    def inputs(self) -> CalcInputs:
        """The form's values; raises ValueError naming the field that is wrong."""
        return CalcInputs(
            model=str(self.query_one("#calc-model", Select).value),
            config_path=self.query_one("#calc-config", Input).value.strip(),
            kv_dtype=str(self.query_one("#calc-kv-dtype", Select).value),
            weight_dtype=str(self.query_one("#calc-w-dtype", Select).value),
            weight_scope=str(self.query_one("#calc-w-scope", Select).value),
            batch=parse_count(self.query_one("#calc-batch", Input).value, "batch"),
            context=parse_count(self.query_one("#calc-context", Input).value, "context"),
            gpu=str(self.query_one("#calc-gpu", Select).value),
            gpus=parse_count(self.query_one("#calc-gpus", Input).value, "GPUs"),
        )

    def recalculate(self) -> None:
        """Recompute everything from the form and redraw."""
        out = self.query_one("#calc-result", Static)
        # a config.json path overrides the preset: say so rather than show a preset not used
        overridden = bool(self.query_one("#calc-config", Input).value.strip())
        self.query_one("#calc-model", Select).disabled = overridden
        self.query_one("#calc-model-label", Label).update(
            "Preset (config.json used)" if overridden else "Model preset")
        try:
            inputs = self.inputs()
            result = calculate(inputs)
        except ValueError as exc:
            self.result, self.error = None, str(exc)
            out.update(Text(str(exc), style="bold red"))
            self._plot(None, None)
            return
        self.result, self.error = result, None
        out.update(self._table(inputs, result))
        self._plot(inputs, result)

    def _table(self, inputs: CalcInputs, r: CalcResult) -> Table:
        table = Table.grid(padding=(0, 1))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        active = f", {r.params_active / 1e9:.1f}B active" if r.moe else ""
        table.add_row("Model", f"{r.title} ({r.params_total / 1e9:.1f}B params{active})")
        table.add_row("KV/token", f"{format_bytes(r.kv_per_token)} ({r.kv_per_token:,.0f} B)")
        table.add_row("KV cache", f"{format_bytes(r.kv_cache)} ({r.kv_cache:,} B)")
        table.add_row("Weights", f"{format_bytes(r.weights)} ({r.weights:,} B)")
        total = r.weights + r.kv_cache
        fits = total <= r.gpu_bytes
        verdict = Text(f"{format_bytes(total)} of {format_bytes(r.gpu_bytes)}: ")
        verdict.append("fits" if fits else "does not fit", style="bold green" if fits else "bold red")
        table.add_row("Total", verdict)
        if r.context_limit and inputs.context > r.context_limit:
            table.add_row("Context", Text(f"{inputs.context:,} tokens is past the model's limit "
                                          f"(max_position_embeddings {r.context_limit:,})",
                                          style="bold yellow"))
        table.add_row("Max batch", f"{r.max_batch:,} at {inputs.context:,} tokens")
        ctx = _fmt_int(r.max_context)
        if r.context_limit and r.max_context == r.context_limit:
            ctx += " (model limit)"
        table.add_row("Max context", f"{ctx}, batch {inputs.batch:,}")
        return table

    def _plot(self, inputs: CalcInputs | None, result: CalcResult | None) -> None:
        plot = self.query_one("#calc-plot", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        if inputs is None or result is None:
            plot.refresh()
            return
        xs, ys = memory_curve(inputs, result)
        weights = result.weights / 2**30
        plt.title(f"GiB (weights + KV cache, batch {inputs.batch}) vs context")
        plt.plot(xs, [weights + y for y in ys], label="weights + KV", marker="braille")
        plt.plot(xs, [result.gpu_bytes / 2**30] * len(xs), label="GPU memory", marker="braille")
        ticks = [xs[0]] + [xs[round(i * (len(xs) - 1) / 4)] for i in range(1, 5)]
        plt.xticks(ticks, [_short_count(t) for t in ticks])
        plt.xlabel("context (tokens)")
        top = max(result.gpu_bytes / 2**30, weights + ys[-1])
        plt.ylim(0, top * 1.25)
        plot.refresh()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.recalculate()

    def on_select_changed(self, event: Select.Changed) -> None:
        self.recalculate()

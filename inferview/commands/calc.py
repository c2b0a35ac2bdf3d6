"""``inferview calc``: the KV-cache and weight-memory calculator over model presets.

``inferview calc kv --model NAME | --config config.json --seq-len N [--batch B] [--dtype D]
[--weight-dtype D [--weight-scope all|linear|experts]] [--gpu NAME [--gpus N]] [--json]`` and
``inferview calc models [--json]``. Every number comes from ``inferview.reference.estimators``;
torch is never imported.

Formats (``--dtype`` for the cache, ``--weight-dtype`` for the weights) include the block-scaled
ones with their scales: ``mxfp4`` 4.25 bits, ``nvfp4`` 4.5, ``int4-g128`` 4.125 (``int4`` alone
ignores scales), and for an MLA cache ``fp8-mla``, FlashMLA's 656-byte layout for DeepSeek-V3.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from inferview.model_config import ConfigError, parse_count, read_config
from inferview.practice.units import format_bytes, format_count, format_value
from inferview.reference import estimators as est
from inferview.reference.presets import GPUS, MODELS, get_gpu, get_model


class TokenCount(click.ParamType):
    """A positive whole number of tokens: ``8192``, ``128k`` (131,072), ``1.5k``, ``1M``."""

    name = "tokens"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            if value < 1:
                self.fail(f"{value!r} must be at least 1", param, ctx)
            return value
        try:
            return parse_count(str(value), "value")
        except ValueError as exc:
            self.fail(str(exc).removeprefix("value: "), param, ctx)


def _load_config(path: Path) -> dict[str, Any]:
    """The language model's config from ``path`` (a usage error, exit 2, when it cannot be used)."""
    try:
        return read_config(path)[1]
    except (FileNotFoundError, ConfigError) as exc:
        raise click.UsageError(str(exc)) from None


SCOPES = est.WEIGHT_SCOPES
"""What ``--weight-dtype`` applies to: every parameter, the transformer blocks' linear layers (as
GPTQ/AWQ/FP8 checkpoints quantize them, embeddings and output head kept in bf16), or the routed
experts only (as gpt-oss ships MXFP4)."""


def _gpu_report(config: dict[str, Any], seq_len: int, batch: int, dtype: str, wdtype: str,
                gpu_name: str, weights: int, gpus: int = 1) -> dict[str, Any]:
    g = get_gpu(gpu_name)
    kv = est.kv_cache_bytes(config, seq_len, batch, dtype)
    memory = g.memory_bytes * gpus  # weights and cache sharded across them, as the app counts
    budget = memory - weights
    limit = config.get("max_position_embeddings")
    max_ctx = est.max_context_length(config, memory, weights, batch, dtype)
    return {
        "name": g.name, "title": g.title if gpus == 1 else f"{gpus} x {g.title}", "gpus": gpus,
        "memory_bytes": memory, "source": g.source,
        "budget_bytes": budget,
        "fits": budget >= kv,
        "max_batch_size": est.max_batch_size(config, seq_len, memory, weights, dtype),
        "max_context_tokens": max_ctx,
        "max_position_embeddings": limit,
    }


def kv_report(config: dict[str, Any], seq_len: int, batch: int, dtype: str, wdtype: str,
              gpu: str | None, name: str, source: str, gpus: int = 1,
              weight_scope: str = "all") -> dict[str, Any]:
    """Everything ``calc kv`` prints, as a JSON-ready dict (bytes as exact integers)."""
    kv = est.kv_cache_bytes(config, seq_len, batch, dtype)
    pc = est.param_counts(config)
    weights = est.scoped_weight_bytes(config, wdtype, weight_scope)
    kinds = est.layer_kinds(config)
    fmt = est.get_dtype(dtype)
    report: dict[str, Any] = {
        "model": name, "source": source, "seq_len": seq_len, "batch": batch, "dtype": dtype,
        "kv_cache_bytes": kv,
        "kv_cache_human": format_value(kv, "bytes"),
        "max_position_embeddings": config.get("max_position_embeddings"),
        "kv_bytes_per_token": est.kv_bytes_per_token(config, dtype),
        "layers": len(kinds),
        "sliding_layers": kinds.count("sliding_attention"),
        "sliding_window": config.get("sliding_window") if "sliding_attention" in kinds else None,
        "chunked_layers": kinds.count("chunked_attention"),
        "attention_chunk_size": (config.get("attention_chunk_size")
                                 if "chunked_attention" in kinds else None),
        "attention": "mla" if est.is_mla(config) else "mha/gqa/mqa",
        "values_per_token_per_layer": est.kv_values_per_token(config),
        "kv_bytes_per_token_per_layer": float(est.kv_bits_per_token_layer(config, dtype) / 8),
        "dtype_bits": None if fmt.mla_only else est.dtype_bits(dtype),
        "num_key_value_heads": None if est.is_mla(config) else est.num_kv_heads(config),
        "head_dim": None if est.is_mla(config) else est.head_dim(config),
        "params_total": pc.total,
        "params_active": pc.active(include_embedding=False),
        "moe": pc.routed_experts > 0,
        "moe_layers": sum(est.moe_layers(config, 1 if pc.routed_experts else 0)),
        "weight_dtype": wdtype,
        "weight_scope": weight_scope,
        "weight_bytes": weights,
        "weight_human": format_value(weights, "bytes"),
    }
    if gpu:
        report["gpu"] = _gpu_report(config, seq_len, batch, dtype, wdtype, gpu, weights, gpus)
    return report


def _print_kv(r: dict[str, Any]) -> None:
    click.echo(f"{r['model']}  ({r['source']})")
    if r["attention"] == "mla":
        shape = f"{r['layers']} layers x {r['values_per_token_per_layer']} latent values (MLA)"
    else:
        shape = (f"{r['layers']} layers x 2 (K,V) x {r['num_key_value_heads']} KV heads x "
                 f"{r['head_dim']} dims")
    click.echo(f"  KV cache        {r['kv_cache_bytes']:,} bytes = {r['kv_cache_human']}")
    click.echo(f"                  batch {r['batch']} x {r['seq_len']:,} tokens, {r['dtype']}")
    limit = r.get("max_position_embeddings")
    if isinstance(limit, int) and r["seq_len"] > limit:
        click.echo(f"                  (past the model's max_position_embeddings, {limit:,})")
    each = (f"x {r['dtype_bits'] / 8:g} bytes" if r["dtype_bits"] is not None
            else f"= {r['kv_bytes_per_token_per_layer']:g} bytes per layer in {r['dtype']}")
    click.echo(f"  per token       {format_value(r['kv_bytes_per_token'], 'bytes/token')} "
               f"({shape} {each})")
    if r["sliding_layers"]:
        click.echo(f"  sliding window  {r['sliding_layers']} of {r['layers']} layers keep only the "
                   f"last {r['sliding_window']:,} tokens")
    if r["chunked_layers"]:
        click.echo(f"  chunked         {r['chunked_layers']} of {r['layers']} layers attend within "
                   f"{r['attention_chunk_size']:,}-token chunks and keep at most one chunk")
    bounded = r["sliding_layers"] + r["chunked_layers"]
    if bounded:
        full = r["layers"] - bounded
        beyond = r["kv_bytes_per_token"] * full / r["layers"]
        click.echo(f"                  past the {'window' if r['sliding_layers'] else 'chunk'} a "
                   f"token costs {format_value(beyond, 'bytes/token') if full else 'nothing more'}"
                   f" ({full} full-attention layers)")
    click.echo(f"  parameters      {format_count(r['params_total'])} total"
               + (f", {format_count(r['params_active'])} active per token, not counting the input embedding"
                  if r["moe"] else ""))
    if r["moe"] and r["moe_layers"] != r["layers"]:
        click.echo(f"                  experts in {r['moe_layers']} of {r['layers']} layers, "
                   "dense MLPs in the others")
    scope = {"all": "", "linear": " (linear layers; embeddings, head, norms in bf16)",
             "experts": " (routed experts; everything else in bf16)"}[r["weight_scope"]]
    click.echo(f"  weights         {r['weight_human']} in {r['weight_dtype']}{scope}")
    g = r.get("gpu")
    if g:
        click.echo(f"  on {g['title']} ({format_bytes(g['memory_bytes'])}):")
        if g["budget_bytes"] < 0:
            click.echo("    the weights alone do not fit")
            return
        click.echo(f"    left for the cache   {format_value(g['budget_bytes'], 'bytes')}"
                   f" -> this cache {'fits' if g['fits'] else 'does NOT fit'}")
        click.echo(f"    largest batch        {g['max_batch_size']:,} at {r['seq_len']:,} tokens")
        ctx = g["max_context_tokens"]
        if ctx is None:
            ctx_text = "not bounded by memory (every layer slides)"
        else:
            ctx_text = f"{ctx:,} tokens"
            if g["max_position_embeddings"] and ctx > g["max_position_embeddings"]:
                ctx_text += f" (the model's limit is {g['max_position_embeddings']:,})"
        click.echo(f"    longest context      {ctx_text} at batch {r['batch']}")


@click.group("calc")
def command() -> None:
    """KV-cache and weight-memory calculator over real model configurations."""


@command.command("kv")
@click.option("--model", "model", default=None, help="Preset name (see 'inferview calc models').")
@click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="A Hugging Face config.json instead of a preset.")
@click.option("--seq-len", "seq_len", type=TokenCount(), required=True,
              help="Tokens per sequence (128k = 131072).")
@click.option("--batch", "batch", type=click.IntRange(min=1), default=1, show_default=True,
              help="Sequences in the batch.")
@click.option("--dtype", "dtype", type=click.Choice(est.KV_DTYPES, case_sensitive=False),
              default="bf16", show_default=True,
              help="KV-cache format (block scales counted; fp8-mla: FlashMLA's MLA cache).")
@click.option("--weight-dtype", "weight_dtype", type=click.Choice(est.WEIGHT_DTYPES, case_sensitive=False),
              default="bf16", show_default=True,
              help="Weight format: mxfp4 4.25 bits, nvfp4 4.5, int4-g128 4.125 (scales counted).")
@click.option("--weight-scope", "weight_scope", type=click.Choice(SCOPES, case_sensitive=False),
              default="all", show_default=True,
              help="What --weight-dtype applies to: all parameters, linear layers (embeddings and "
                   "head in bf16, as GPTQ/AWQ/FP8 checkpoints), or the routed experts (gpt-oss).")
@click.option("--gpu", "gpu", default=None, help="GPU preset: show the largest batch and context that fit.")
@click.option("--gpus", "gpus", type=click.IntRange(min=1, max=4096), default=1, show_default=True,
              help="How many of those GPUs (weights and cache sharded across them), as in the app.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (exact byte counts).")
def kv_cmd(model: str | None, config_path: Path | None, seq_len: int, batch: int, dtype: str,
           weight_dtype: str, weight_scope: str, gpu: str | None, gpus: int, as_json: bool) -> None:
    """KV-cache bytes, per-token cost and what fits on a GPU (or --gpus N of them)."""
    if (model is None) == (config_path is None):
        raise click.UsageError("give exactly one of --model NAME or --config PATH")
    if gpus != 1 and gpu is None:
        raise click.UsageError("--gpus needs --gpu NAME (which GPU)")
    if gpu is not None:
        try:
            get_gpu(gpu)
        except KeyError as exc:
            raise click.UsageError(exc.args[0]) from exc
    if model is not None:
        try:
            preset = get_model(model)
        except KeyError as exc:
            raise click.UsageError(exc.args[0]) from exc
        config, name, source = preset.config_copy(), preset.title, preset.source
    else:
        assert config_path is not None
        config, name, source = _load_config(config_path), config_path.name, str(config_path)
    try:
        report = kv_report(config, seq_len, batch, dtype.lower(), weight_dtype.lower(), gpu, name,
                           source, gpus, weight_scope.lower())
    except OverflowError as exc:
        raise click.UsageError(f"{name}: a number in the config is too large to be a "
                                   "layer, head or dimension count") from exc
    except (ValueError, TypeError, ZeroDivisionError) as exc:
        raise click.UsageError(f"{name}: {exc}") from exc  # the input's fault: exit 2
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        _print_kv(report)


@command.command("models")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def models_cmd(as_json: bool) -> None:
    """List the model and GPU presets with their sources."""
    models = []
    for p in MODELS.values():
        c = p.config
        pc = est.param_counts(c)
        models.append({
            "name": p.name, "title": p.title, "layers": c["num_hidden_layers"],
            "attention": "mla" if est.is_mla(c) else f"{c['num_attention_heads']}q/{est.num_kv_heads(c)}kv",
            "kv_bytes_per_token_bf16": est.kv_bytes_per_token(c),
            "params_total": pc.total, "params_active": pc.active(include_embedding=False),
            "moe": pc.routed_experts > 0, "source": p.source, "notes": p.notes,
        })
    gpus = [{"name": g.name, "title": g.title, "memory_bytes": g.memory_bytes,
             "bf16_flops": g.bf16_flops, "bandwidth_bytes_per_s": g.bandwidth_bytes_per_s,
             "source": g.source} for g in GPUS.values()]
    if as_json:
        click.echo(json.dumps({"models": models, "gpus": gpus}, indent=2))
        return
    click.echo("Models")
    for m in models:
        act = "" if not m["moe"] else f" ({format_count(m['params_active'])} active)"
        click.echo(f"  {m['name']:<16} {m['title']:<25} {m['layers']:>3} layers  {m['attention']:<9} "
                   f"{format_value(m['kv_bytes_per_token_bf16'], 'bytes/token'):<16} "
                   f"{format_count(m['params_total'])}{act}")
        click.echo(f"  {'':<16} source: {m['source']}")
    click.echo("  KV cache per token in bf16. MoE \"active\": parameters one token's matmuls use (the output\n"
               "  head counted, the input-embedding lookup not), so a paper that counts the embedding\n"
               "  (Mixtral's 12.9B) reads higher.")
    click.echo("GPUs")
    for g in gpus:
        click.echo(f"  {g['name']:<10} {g['title']:<26} {g['memory_bytes'] / 2**30:g} GiB  "
                   f"{g['bandwidth_bytes_per_s'] / 1e12:g} TB/s  {g['bf16_flops'] / 1e12:g} TFLOP/s bf16")
        click.echo(f"  {'':<10} source: {g['source']}")

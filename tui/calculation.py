"""The calculator screen's arithmetic: every number from ``inferview.reference.estimators``.

Kept apart from the widgets so that what the screen shows is exactly what the estimators return
(the KV-cache formula of the seed's "why does the cache take so much memory": layers x KV heads x
head dim x 2 (keys and values) x bytes per value x tokens x batch, with GQA/MQA, sliding windows and
MLA handled by the estimators). No textual, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inferview.reference import estimators as est
from inferview.reference import presets

from inferview.model_config import read_config

DTYPES = list(est.WEIGHT_DTYPES)
"""Weight formats (block-scaled ones count their scales: mxfp4 4.25 bits, nvfp4 4.5, int4-g128 4.125)."""
KV_DTYPES = list(est.KV_DTYPES)
"""KV-cache formats: the weight formats plus ``fp8-mla`` (FlashMLA's MLA cache, MLA models only)."""
WEIGHT_SCOPES = list(est.WEIGHT_SCOPES)
"""What the weight format applies to: all parameters, the linear layers, or the routed experts."""


@dataclass(frozen=True)
class CalcInputs:
    """What the user chose."""

    model: str
    """A preset name (see ``inferview.reference.presets.MODELS``)."""
    config_path: str = ""
    """The path of a Hugging Face ``config.json``; when set it replaces ``model``."""
    kv_dtype: str = "bf16"
    weight_dtype: str = "bf16"
    batch: int = 1
    context: int = 8192
    gpu: str = "h100-sxm"
    gpus: int = 1
    """How many GPUs share the weights and the cache (tensor parallel: memory adds up)."""
    weight_scope: str = "all"
    """``all``, ``linear`` (embeddings and output head in bf16) or ``experts`` (routed experts)."""


@dataclass(frozen=True)
class CalcResult:
    """What the screen shows."""

    title: str
    config: dict[str, Any]
    kv_per_token: float
    kv_cache: int
    params_total: int
    params_active: int
    moe: bool
    weights: int
    gpu_title: str
    gpu_bytes: int
    max_batch: int
    max_context: int | None
    context_limit: int | None


def load_config(model: str, config_path: str = "") -> tuple[str, dict[str, Any]]:
    """(title, config) for a preset name or a ``config.json`` path; raises ValueError clearly."""
    if config_path.strip():
        try:
            return read_config(config_path.strip())
        except FileNotFoundError as exc:
            raise ValueError(str(exc)) from None
    try:
        preset = presets.get_model(model.strip())
    except KeyError as exc:
        raise ValueError(str(exc).strip("'\"")) from None
    return preset.title, preset.config_copy()


def calculate(inputs: CalcInputs) -> CalcResult:
    """Every number of the calculator for ``inputs``; raises ValueError with a readable message."""
    title, config = load_config(inputs.model, inputs.config_path)
    gpu = presets.get_gpu(inputs.gpu)
    if inputs.gpus < 1:
        raise ValueError("at least one GPU")
    try:
        params = est.param_counts(config)
        weights = est.scoped_weight_bytes(config, inputs.weight_dtype, inputs.weight_scope)
        kv = est.kv_cache_bytes(config, inputs.context, inputs.batch, inputs.kv_dtype)
        per_token = est.kv_bytes_per_token(config, inputs.kv_dtype)
        gpu_bytes = gpu.memory_bytes * inputs.gpus
        limit = config.get("max_position_embeddings")
        limit = int(limit) if isinstance(limit, int) and limit > 0 else None
        max_batch = est.max_batch_size(config, inputs.context, gpu_bytes, weights, inputs.kv_dtype)
        max_ctx = est.max_context_length(config, gpu_bytes, weights, inputs.batch, inputs.kv_dtype, limit=limit)
    except KeyError as exc:
        raise ValueError(f"the config lacks {exc}") from None
    except (TypeError, ZeroDivisionError) as exc:
        raise ValueError(f"the config is not usable: {exc}") from None
    return CalcResult(
        title=title, config=config, kv_per_token=per_token, kv_cache=kv, params_total=params.total,
        params_active=params.active(include_embedding=False), moe=params.routed_experts > 0, weights=weights,
        gpu_title=gpu.title if inputs.gpus == 1 else f"{inputs.gpus} x {gpu.title}",
        gpu_bytes=gpu_bytes, max_batch=max_batch, max_context=max_ctx, context_limit=limit,
    )


def memory_curve(inputs: CalcInputs, result: CalcResult, points: int = 49) -> tuple[list[int], list[float]]:
    """Context lengths from 1 to twice the chosen context (or the model's limit) and the KV cache
    in GiB at each, for the chosen batch and dtype."""
    end = max(2 * inputs.context, 1024)
    if result.context_limit:
        end = max(min(end, result.context_limit), inputs.context)
    xs = sorted({max(1, round(end * i / (points - 1))) for i in range(points)})
    ys = [est.kv_cache_bytes(result.config, x, inputs.batch, inputs.kv_dtype) / 2**30 for x in xs]
    return xs, ys

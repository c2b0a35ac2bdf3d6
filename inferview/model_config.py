"""Reading what the calculator is given: a Hugging Face ``config.json``, and token counts.

One reader for the CLI (``inferview calc``) and the app's Calculator, so both treat every file the
same way. A multimodal config (Llama 4, Gemma 3, Qwen2.5-VL...) nests the language model's own
config under ``text_config``: that inner config is the one the cache and weight estimates need.
Torch-free and textual-free.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

REQUIRED = ("num_hidden_layers", "num_attention_heads", "hidden_size")


class ConfigError(ValueError):
    """A config file the calculator cannot use; ``str()`` names the file and the problem."""


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def shape_problem(cfg: dict[str, Any]) -> str | None:
    """Head and layer counts no transformer can have (the estimators would report 0 bytes or round
    a head_dim down), or None."""
    layers, heads, hidden = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
    kv = cfg.get("num_key_value_heads")
    if _is_count(layers) and layers < 1:
        return f"num_hidden_layers must be at least 1, got {layers}"
    if not _is_count(heads) or heads < 1:
        return None
    if _is_count(kv):
        if not 1 <= kv <= heads:
            return f"num_key_value_heads must be between 1 and num_attention_heads ({heads}), got {kv}"
        if heads % kv:
            return (f"num_attention_heads ({heads}) must be a multiple of num_key_value_heads ({kv}): "
                    "each KV head serves a whole group of query heads")
    if cfg.get("head_dim") is None and _is_count(hidden) and hidden % heads:
        return (f"hidden_size ({hidden}) is not a multiple of num_attention_heads ({heads}); "
                "give head_dim in the config")
    return None


def read_config(path: Path | str) -> tuple[str, dict[str, Any]]:
    """(title, language-model config) from a ``config.json`` or the folder holding one."""
    path = Path(path).expanduser()
    if path.is_dir():
        path = path / "config.json"
    if not path.exists():
        raise FileNotFoundError(f"config file not found: {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object (a config.json)")
    if "num_hidden_layers" not in data and isinstance(data.get("text_config"), dict):
        data = dict(data["text_config"])
    for key in REQUIRED:
        if key not in data:
            raise ConfigError(f"{path}: missing {key!r} (is this a Hugging Face config.json?)")
    problem = shape_problem(data)
    if problem:
        raise ConfigError(f"{path}: {problem}")
    return f"{path.parent.name}/{path.name}", data


_COUNT = re.compile(r"^(-?\d+(?:\.\d+)?)([km]?)$")
SCALE = {"": 1, "k": 1024, "m": 1024 * 1024}
"""Token counts are quoted in binary units: "128k" = 131,072 and "1M" = 1,048,576 tokens."""


def parse_count(text: str, what: str = "value") -> int:
    """A positive whole number: ``8192``, ``8,192``, ``128k``, ``1.5k`` (1,536), ``1M``."""
    t = str(text).strip().lower().replace(",", "").replace("_", "")
    m = _COUNT.match(t)
    if not m:
        raise ValueError(f"{what}: {text!r} is not a whole number (e.g. 8192, 128k or 1M)")
    exact = float(m.group(1)) * SCALE[m.group(2)] if "." in m.group(1) else int(m.group(1)) * SCALE[m.group(2)]
    if isinstance(exact, float):
        if not exact.is_integer():
            raise ValueError(f"{what}: {text!r} is not a whole number of tokens")
        exact = int(exact)
    if exact < 1:
        raise ValueError(f"{what} must be at least 1")
    return exact

"""User settings: environment variables, or the same keys in ``<data folder>/config.toml``.

```toml
# <data folder>/config.toml
INFERVIEW_JUDGE_URL = "http://127.0.0.1:11434/v1"   # an OpenAI-compatible server you run
INFERVIEW_JUDGE_MODEL = "qwen2.5:7b-instruct"
INFERVIEW_JUDGE_TIMEOUT = 30                          # seconds per request
INFERVIEW_REMOTE = "gpu-box"                          # grade there over ssh (inferview.remote)
INFERVIEW_REMOTE_COMMAND = "~/inferview/.venv/bin/inferview"   # its inferview; default inferview
INFERVIEW_SSH_COMMAND = "ssh"                         # the ssh client, with options of its own
```

An environment variable wins over the file. A file that cannot be read or parsed is reported in
one line (``SettingsError``) by whatever needs a setting, never silently ignored.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from inferview import paths

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CONFIG_NAME = "config.toml"


class SettingsError(ValueError):
    """The settings file is broken; ``str()`` names the file and the problem."""


def config_path() -> Path:
    """Where the settings file lives."""
    return paths.data_dir() / CONFIG_NAME


def _file_settings() -> dict[str, Any]:
    path = config_path()
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read it: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML: {exc}") from None
    return data


def get(key: str, default: Any = None) -> Any:
    """The setting ``key`` (e.g. ``INFERVIEW_JUDGE_URL``): the environment's, else the file's."""
    value = os.environ.get(key)
    if value not in (None, ""):
        return value
    return _file_settings().get(key, default)

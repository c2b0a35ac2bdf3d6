"""Where grading runs: a remote host from ``--remote HOST`` or the settings, or this machine.

```toml
# <data folder>/config.toml
INFERVIEW_REMOTE = "gpu-box"                          # a host as ``ssh`` knows it
INFERVIEW_REMOTE_COMMAND = "~/inferview/.venv/bin/inferview"   # default: inferview
INFERVIEW_SSH_COMMAND = "ssh"                         # the client, with options (-F FILE...)
```

``--remote HOST`` and ``--remote-command CMD`` (``grade``, ``watch``, ``challenge``, ``doctor``)
win over the settings; ``--remote ''`` grades on this machine whatever the settings say.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from inferview import settings
from inferview.grading import GradingUsageError

DEFAULT_COMMAND = "inferview"
HOST_KEY = "INFERVIEW_REMOTE"
COMMAND_KEY = "INFERVIEW_REMOTE_COMMAND"
SSH_KEY = "INFERVIEW_SSH_COMMAND"
CONNECT_TIMEOUT_S = 10

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class RemoteConfig:
    """A remote grading host."""

    host: str
    """The ssh destination (``gpu-box``, ``me@10.0.0.5``): ``~/.ssh/config`` applies to it."""
    command: str = DEFAULT_COMMAND
    """The remote's inferview, as its shell runs it (a path when it is not on the PATH of a
    non-interactive shell)."""
    ssh: tuple[str, ...] = ("ssh",)
    """The local client and any options of its own."""
    connect_timeout_s: int = CONNECT_TIMEOUT_S

    def __post_init__(self) -> None:
        if not self.host or self.host.startswith("-") or any(c.isspace() or ord(c) < 32
                                                              for c in self.host):
            raise GradingUsageError(f"not an ssh host: {self.host!r}")
        if not self.command.strip():
            raise GradingUsageError("the remote command is empty (default: inferview)")
        if not self.ssh:
            raise GradingUsageError(f"{SSH_KEY} is empty (default: ssh)")


def _setting(key: str) -> str | None:
    value = settings.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise settings.SettingsError(f"{settings.config_path()}: {key} must be a string")
    return value.strip() or None


def resolve(host: str | None = None, command: str | None = None) -> RemoteConfig | None:
    """The remote to grade on: ``host`` (``--remote``) over ``INFERVIEW_REMOTE``, ``command``
    over ``INFERVIEW_REMOTE_COMMAND``; None grades on this machine (no host set, or ``host``
    is ``""``). Raises ``SettingsError`` for a broken settings file and ``GradingUsageError``
    for a host or command that cannot be one."""
    if host is not None:
        host = host.strip()
        if not host:
            return None
    else:
        host = _setting(HOST_KEY)
        if host is None:
            return None
    command = (command.strip() if command is not None else None) or _setting(COMMAND_KEY) \
        or DEFAULT_COMMAND
    ssh_text = _setting(SSH_KEY) or "ssh"
    try:
        ssh = tuple(shlex.split(ssh_text))
    except ValueError as exc:
        raise GradingUsageError(f"{SSH_KEY} cannot be split into words: {exc}") from None
    return RemoteConfig(host, command, ssh)


def resolve_or_exit(host: str | None, command: str | None) -> RemoteConfig | None:
    """:func:`resolve` for a command: a broken setting or host ends with one line, status 2."""
    try:
        return resolve(host, command)
    except (settings.SettingsError, GradingUsageError) as exc:
        click.echo(f"inferview: {exc}", err=True)
        raise SystemExit(2) from None


def remote_options(func: F) -> F:
    """``--remote HOST`` and ``--remote-command CMD``, the same on every command that grades."""
    func = click.option(
        "--remote-command", "remote_command", metavar="CMD", default=None,
        help=f"The remote's inferview (default: {COMMAND_KEY}, else inferview), e.g. "
             "~/inferview/.venv/bin/inferview.")(func)
    return click.option(
        "--remote", "remote", metavar="HOST", default=None,
        help=f"Grade on HOST over ssh (default: {HOST_KEY}; '' grades here).")(func)

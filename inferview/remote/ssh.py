"""Running a command on a remote host with the system's ``ssh``, and what its failures mean.

The user's ``~/.ssh/config``, keys, agent and jump hosts apply as they are: inferview adds only
``BatchMode`` (never a password prompt), no pseudo-terminal and no configured ``RemoteCommand`` (it
sends its own), a connect timeout and keep-alives. Every failure becomes
one line that says what to do (:func:`explain`).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from dataclasses import dataclass

from inferview import __version__
from inferview.remote.config import SSH_KEY, RemoteConfig


class RemoteFailure(Exception):
    """A remote command could not be run or answered nothing usable; ``str()`` is one line."""


class VersionMismatch(RemoteFailure):
    """The remote runs another inferview version (its challenges may differ)."""


SSH_FAILED = 255
"""ssh's own exit status: it could not connect, log in, or the connection broke."""

_VERSION = re.compile(r"inferview, version (\S+)")
_UNREACHABLE = ("connection refused", "could not resolve", "no route to host", "timed out",
                "network is unreachable", "name or service not known", "connection reset",
                "no address associated", "temporary failure in name resolution")
_LOST = ("closed by", "broken pipe", "not responding", "connection to", "reset by peer",
         "disconnect", "connection closed")


def argv(config: RemoteConfig, remote_command: str) -> list[str]:
    """The local command line that runs ``remote_command`` (one string, which the remote's shell
    parses) on ``config.host``."""
    return [*config.ssh, "-T", "-o", "BatchMode=yes", "-o", "RemoteCommand=none",
            "-o", f"ConnectTimeout={config.connect_timeout_s}",
            "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3",
            "--", config.host, remote_command]


def spawn(config: RemoteConfig, remote_command: str) -> subprocess.Popen[bytes]:
    """Start ssh with pipes on all three streams, in a session of its own (:func:`stop` ends it
    and any proxy it started). Raises ``FileNotFoundError`` with a one-line reason."""
    try:
        return subprocess.Popen(argv(config, remote_command), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except FileNotFoundError:
        raise FileNotFoundError(f"no ssh client: {config.ssh[0]} not found (install OpenSSH's "
                                f"client, or set {SSH_KEY})") from None


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End ssh and its process group (a ProxyCommand...), and reap it."""
    if proc.poll() is None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(timeout=2)
                break
            except subprocess.TimeoutExpired:
                continue
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


@dataclass
class Reply:
    """What a short remote command answered."""

    rc: int
    stdout: str
    stderr: str


def run(config: RemoteConfig, remote_command: str, timeout_s: float = 60) -> Reply:
    """Run a short remote command to its end (``TimeoutError`` past ``timeout_s``)."""
    proc = spawn(config, remote_command)
    try:
        out, err = proc.communicate(b"", timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"{config.host} did not answer within {timeout_s:.0f} s") from None
    finally:
        stop(proc)
    return Reply(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


def last_line(text: str) -> str:
    """The last line worth showing of ssh's or the remote's stderr."""
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith(("Warning: Permanently added",
                                                             "@inferview "))]
    return lines[-1] if lines else ""


def explain(config: RemoteConfig, rc: int, stderr: str, *, connected: bool = False) -> str:
    """One line for a remote command that ended with status ``rc`` without an answer.
    ``connected``: the remote had already answered (a failure now is a lost connection)."""
    host, line = config.host, last_line(stderr)
    low = line.lower()
    said = f" ({line})" if line else ""
    if rc == SSH_FAILED or rc < 0:
        if rc < 0:
            return f"connection to {host} lost: ssh was stopped by signal {-rc}"
        if "permission denied" in low or "too many authentication failures" in low:
            return (f"{host} refused the key{said}: make `ssh {host}` work without a password "
                    "(ssh-add, or IdentityFile in ~/.ssh/config)")
        if "host key verification failed" in low or "remote host identification has changed" in low:
            return (f"{host}: host key verification failed: run `ssh {host}` once to check and "
                    "accept its key")
        if not connected and any(k in low for k in _UNREACHABLE):
            return f"cannot reach {host}{said}"
        if connected or any(k in low for k in _LOST):
            return f"connection to {host} lost{said}"
        return f"ssh to {host} failed{said}"
    if rc == 127:
        return (f"{host} has no inferview at `{config.command}`{said}: set the remote command, "
                "e.g. --remote-command ~/inferview/.venv/bin/inferview")
    if rc == 126:
        return f"{host}: `{config.command}` cannot be run{said}"
    return f"{host}: {line.removeprefix('inferview: ') or f'the remote command ended with status {rc}'}"


def remote_version(config: RemoteConfig, timeout_s: float = 60) -> str:
    """The remote inferview's version (``<command> --version``: no torch, quick). Raises
    ``RemoteFailure`` when ssh or the command fails and ``VersionMismatch`` when it differs from
    this one's, each with one line."""
    try:
        reply = run(config, f"{config.command} --version", timeout_s)
    except (FileNotFoundError, TimeoutError) as exc:
        raise RemoteFailure(str(exc)) from None
    found = _VERSION.search(reply.stdout)
    if reply.rc != 0 or found is None:
        if reply.rc == 0:
            raise RemoteFailure(f"{config.host}: `{config.command} --version` did not print an "
                                  f"inferview version ({reply.stdout.strip()[:80]!r})")
        raise RemoteFailure(explain(config, reply.rc, reply.stderr))
    theirs = found.group(1)
    if theirs != __version__:
        raise VersionMismatch(f"version mismatch: {config.host} runs inferview {theirs}, this is "
                         f"{__version__}: install {__version__} there (its challenges must match)")
    return theirs

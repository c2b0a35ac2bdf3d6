"""``inferview doctor [--remote HOST] [--json]``: what the machine that grades has.

It reports on the machine grading goes to: this one, or the remote host of ``--remote`` (or
``INFERVIEW_REMOTE``), where it checks that the remote runs this inferview version and names its
GPUs. Exit 0 when all is well, 1 when the remote cannot be reached or runs another version (one
line on stderr), 2 for a usage error. The only command besides grading that imports torch.
"""

from __future__ import annotations

import json
import shlex
import sys
from typing import TYPE_CHECKING

import click

from inferview.remote.config import remote_options

if TYPE_CHECKING:
    from inferview.machine import MachineInfo


@click.command(name="doctor")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@remote_options
def command(as_json: bool, remote: str | None, remote_command: str | None) -> None:
    """Show inferview's version, Python, torch, CUDA and GPUs, and Triton; with --remote HOST
    (or INFERVIEW_REMOTE), those of HOST, after checking it runs the same inferview version."""
    from inferview.machine import probe
    from inferview.remote.config import resolve_or_exit

    config = resolve_or_exit(remote, remote_command)
    if config is None:
        _show(probe(), as_json)
        return
    from inferview.machine import MachineInfo
    from inferview.remote import ssh

    try:
        ssh.remote_version(config)
        # ``--remote ''``: the remote reports on itself, whatever its own settings say
        reply = ssh.run(config, f"{config.command} doctor --json --remote {shlex.quote('')}")
    except (ssh.RemoteFailure, TimeoutError) as exc:
        click.echo(f"inferview: {exc}", err=True)
        sys.exit(1)
    try:
        info = MachineInfo.from_json(json.loads(reply.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        click.echo(f"inferview: {ssh.explain(config, reply.rc, reply.stderr, connected=True)}",
                   err=True)
        sys.exit(1)
    _show(info, as_json, remote=config.host)


def _show(info: MachineInfo, as_json: bool, remote: str | None = None) -> None:
    if as_json:
        data = info.to_json() | ({"remote": remote} if remote else {})
        sys.stdout.write(json.dumps(data) + "\n")
        return
    if remote:
        click.echo(f"{remote}: inferview {info.version}, the same version as here; "
                   f"grading runs on {info.device}")
    for label, value in info.lines():
        click.echo(f"  {label:<10} {value}")

"""``inferview serve [--host H] [--port N] [--public]``: the app in a web page.

Each browser tab gets its own app process on this machine (so the app can run on a GPU machine and
be used from a laptop's browser through an SSH tunnel). The server has no authentication: it
listens on loopback unless ``--public`` says otherwise.
"""

from __future__ import annotations

import sys

import click

from inferview.webserve import DEFAULT_HOST, DEFAULT_PORT


@click.command(name="serve")
@click.option("--host", default=DEFAULT_HOST, show_default=True,
              help="Address to listen on; anything but loopback needs --public.")
@click.option("--port", type=click.IntRange(1, 65535), default=DEFAULT_PORT, show_default=True,
              help="Port to listen on.")
@click.option("--public", is_flag=True,
              help="Allow an address other machines can reach. There is no authentication: "
                   "anyone who reaches the port can use the app and run code through grading.")
def command(host: str, port: int, public: bool) -> None:
    """Serve the app in a web page (one app per browser tab). Ctrl+C stops.

    From a laptop, through an SSH tunnel, then open http://127.0.0.1:8000 (-t lets Ctrl+C reach
    the server):

    \b
        ssh -t -L 8000:127.0.0.1:8000 HOST inferview serve
    """
    from inferview.webserve import ServeError, check_port_free, check_target, serve

    try:
        target = check_target(host, port, public)
        check_port_free(target)
        if not target.loopback:
            click.echo(f"inferview: warning: {target.url} has no authentication: anyone who can "
                       "reach this port can use the app and run code on this machine through "
                       "grading", err=True)
        serve(target)
    except ServeError as exc:
        click.echo(f"inferview: {exc}", err=True)
        sys.exit(exc.exit_code)

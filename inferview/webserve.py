"""The app in a web page: ``inferview serve`` runs a small web server (textual-serve) that starts
one app process per browser tab and relays its screen and keys over a WebSocket.

The server has no authentication of its own: whoever reaches the port can use the app, and through
grading run code on this machine. So it binds to loopback unless told otherwise with ``--public``,
and is meant to be reached through an SSH tunnel. This module never imports torch (nor does the app
it starts).
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import shlex
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

QUIT_WAIT_S = 10.0
"""On shutdown, how long the open tabs' apps get to quit once asked."""
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
PAGE_FOLDER = Path(__file__).parent / "web"
"""Holds ``app_index.html``: the page that hosts the terminal. Unlike textual-serve's own it loads
nothing from the internet (its font comes from the server) and finds the WebSocket from the
address in the browser, so it works through a tunnel on another local port or a proxy."""


class ServeError(Exception):
    """The server cannot start as asked; ``str()`` is the one line to show, ``exit_code`` the
    exit status (2 for a usage mistake, 1 for a problem of the machine)."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class ServeTarget:
    """Where the server listens, checked."""

    host: str
    port: int
    loopback: bool
    """True when only this machine can connect (127.0.0.0/8, ::1, ``localhost``)."""

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def _addresses(host: str, port: int) -> list[tuple[Any, ...]]:
    try:
        return socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                  flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ServeError(f"cannot listen on {host!r}: {exc.strerror}", exit_code=2) from None


def is_loopback(host: str, port: int = DEFAULT_PORT) -> bool:
    """True when every address ``host`` stands for is a loopback address."""
    if host.lower() == "localhost":
        return True
    if not host:  # every interface
        return False
    addresses = {info[4][0] for info in _addresses(host, port)}
    return all(ipaddress.ip_address(a.split("%", 1)[0]).is_loopback for a in addresses)


def check_target(host: str, port: int, public: bool) -> ServeTarget:
    """Apply the binding rule: loopback always; any other address only with ``public``."""
    loopback = is_loopback(host, port)
    if not loopback and not public:
        raise ServeError(
            f"refusing to listen on {host or 'every interface'}: the web app has no "
            "authentication, so anyone who can reach the port could use it and run code here "
            "through grading; reach it through an SSH tunnel instead, or pass --public to "
            "accept that", exit_code=2)
    return ServeTarget(host, port, loopback)


def check_port_free(target: ServeTarget) -> None:
    """Fail with one line when ``target``'s port is taken (or its address is not this
    machine's), by binding it the way the server will (``SO_REUSEADDR``, so a port a stopped
    server left in TIME_WAIT is free), then letting go."""
    for family, kind, proto, _name, address in _addresses(target.host, target.port):
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                raise ServeError(bind_error_message(target, exc)) from None


def bind_error_message(target: ServeTarget, exc: OSError) -> str:
    """The one line for a failed bind, whether found by the probe or by the server itself."""
    where = f"{target.host or 'every interface'}:{target.port}"
    if exc.errno == errno.EADDRINUSE:
        return f"port {target.port} is already in use on {target.host or 'this machine'}; " \
               f"choose another with --port"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {where}: {target.host} is not an address of this machine"
    if exc.errno == errno.EACCES:
        return f"cannot listen on {where}: permission denied (ports below 1024 need privileges)"
    return f"cannot listen on {where}: {exc.strerror or exc}"


def app_command() -> str:
    """The shell command each browser tab runs: this same Python's inferview, so a virtual
    environment works without being on PATH."""
    return shlex.join([sys.executable, "-m", "inferview"])


def build_server(target: ServeTarget) -> Any:
    """A textual-serve ``Server`` for the app on ``target``, with inferview's page."""
    from textual_serve.server import Server

    class AppServer(Server):
        """textual-serve's server with one start-up line instead of a banner, plain warnings
        instead of per-request logs, and a shutdown that asks every open tab's app to quit
        (left alone, a connected tab keeps the server waiting for it)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.sessions: set[asyncio.Task[Any]] = set()
            """One task per connected tab (its WebSocket handler)."""

        async def handle_websocket(self, request: Any) -> Any:
            session = asyncio.current_task()
            assert session is not None
            self.sessions.add(session)
            try:
                return await super().handle_websocket(request)
            finally:
                self.sessions.discard(session)

        async def on_shutdown(self, app: Any) -> None:
            # a cancelled session closes its socket and tells its app to quit (textual-serve's
            # own clean-up), then waits for the app to exit
            open_sessions = list(self.sessions)
            for session in open_sessions:
                session.cancel()
            if open_sessions:
                await asyncio.wait(open_sessions, timeout=QUIT_WAIT_S)

        def initialize_logging(self) -> None:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("inferview serve: %(message)s"))
            for name in ("textual-serve", "aiohttp"):
                logger = logging.getLogger(name)
                logger.handlers[:] = [handler]
                logger.setLevel(logging.WARNING)
                logger.propagate = False

        async def on_startup(self, app: Any) -> None:
            print(f"inferview: serving the app on {target.url} (Ctrl+C stops)", flush=True)

    return AppServer(app_command(), host=target.host, port=target.port, title="inferview",
                     public_url=target.url, templates_path=PAGE_FOLDER)


def serve(target: ServeTarget) -> None:
    """Serve until Ctrl+C (or SIGTERM); each open tab's app is asked to quit on the way out."""
    server = build_server(target)
    try:
        server.serve()
    except OSError as exc:  # lost the port between the check and the bind
        raise ServeError(bind_error_message(target, exc)) from None
    except KeyboardInterrupt:  # a second Ctrl+C while shutting down
        pass

"""``inferview serve`` end to end: a real server process and the system's Chromium, headless.

The page loads (from the server alone, nothing from the internet), shows Home, a key press
navigates; a second tab reached through a relay on another port (as an SSH tunnel may be) gets an
app of its own; SIGINT stops the server and the apps it started, without a traceback.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from inferview.tests.browser.relay import Relay
from inferview.tests.browser.terminal_page import wait_for_text

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    """A running ``inferview serve`` in its own process group (its apps join that group)."""

    process: subprocess.Popen
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def interrupt(self, group: bool, timeout: float = 15.0) -> int:
        """SIGINT to the server alone (``kill -INT``), or to its whole group as Ctrl+C in a
        terminal sends it; the server's exit status."""
        if group:
            os.killpg(self.process.pid, signal.SIGINT)
        else:
            self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout)

    def group_alive(self) -> bool:
        try:
            os.killpg(self.process.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def kill(self) -> None:
        if self.group_alive():
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGINT)
                try:
                    self.process.wait(5)
                except subprocess.TimeoutExpired:
                    pass
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.process.poll() is None:
            self.process.wait(5)


def start_server(tmp_path: Path, *args: str) -> Served:
    port = free_port()
    log = tmp_path / "serve.log"
    env = dict(os.environ, INFERVIEW_HOME=str(tmp_path / "home"))
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "inferview", "serve", "--port", str(port), *args],
                                   stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=env, start_new_session=True)
    served = Served(process, port, log)
    deadline = time.monotonic() + 15
    while "serving the app on" not in served.output():
        if process.poll() is not None or time.monotonic() > deadline:
            served.kill()
            pytest.fail(f"inferview serve did not start:\n{served.output()}")
        time.sleep(0.05)
    return served


@pytest.fixture
def server(tmp_path):
    served = start_server(tmp_path)
    yield served
    served.kill()


@pytest.fixture
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if CHROMIUM is None:
        pytest.skip("no system Chromium (Debian's chromium package) on PATH")
    args = ["--disable-dev-shm-usage"] + (["--no-sandbox"] if os.geteuid() == 0 else [])
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def relay(server: Served):
    forward = Relay(server.port)
    yield forward
    forward.close()


def test_the_page_shows_home_and_a_key_navigates(server: Served, browser, relay: Relay) -> None:
    outside: list[str] = []

    def local_only(route) -> None:
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page = browser.new_page(viewport={"width": 1100, "height": 640})
    page.route("**/*", local_only)
    page.goto(server.url)
    assert page.title() == "inferview"
    page.wait_for_selector("body.-first-byte", timeout=20_000)
    wait_for_text(page, "inferview — Home", "Topics", "The KV cache", "challenges passed")
    page.keyboard.press("k")
    wait_for_text(page, "inferview — Calculator", "Model preset")
    page.keyboard.press("Escape")
    wait_for_text(page, "inferview — Home", "Topics")

    # a second tab, on the relay's port: its WebSocket goes there too, to an app of its own
    tunnelled = browser.new_page(viewport={"width": 1000, "height": 600})
    tunnelled.route("**/*", local_only)
    tunnelled.goto(f"http://127.0.0.1:{relay.port}/")
    socket_url = tunnelled.eval_on_selector("#terminal", "t => t.dataset.sessionWebsocketUrl")
    assert socket_url == f"ws://127.0.0.1:{relay.port}/ws"
    wait_for_text(tunnelled, "inferview — Home")
    tunnelled.keyboard.press("?")
    wait_for_text(tunnelled, "inferview — Help")
    assert "inferview — Home" in wait_for_text(page, "Topics")
    assert outside == [], "the page asked the internet for something"

    # signalled alone, the server still asks both tabs' apps to quit before it exits
    assert server.interrupt(group=False) == 0, server.output()
    deadline = time.monotonic() + 10
    while server.group_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not server.group_alive(), "an app started for a tab outlived the server"
    assert "Traceback" not in server.output(), server.output()


def test_public_warns_and_ctrl_c_stops_cleanly(tmp_path: Path) -> None:
    served = start_server(tmp_path, "--host", "0.0.0.0", "--public")
    try:
        assert served.interrupt(group=True) == 0
    finally:
        served.kill()
    out = served.output()
    assert "warning:" in out and "no authentication" in out, out
    assert f"serving the app on http://0.0.0.0:{served.port}" in out, out
    assert "Traceback" not in out, out

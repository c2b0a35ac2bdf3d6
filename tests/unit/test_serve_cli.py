"""``inferview serve``'s checks before it starts: loopback unless ``--public``, and one clear line
for a port in use or an address that is not this machine's. (The running server and the browser
are tested in ``tests/browser``.)"""

from __future__ import annotations

import shlex
import socket
import subprocess
import sys

import pytest

from inferview.cli import main
from inferview.webserve import app_command, is_loopback


def run_serve(capsys, *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(["serve", *args])
    return exc.value.code, capsys.readouterr().err


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "localhost", "LocalHost"])
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "", "::", "192.0.2.1", "10.0.0.1"])
def test_addresses_other_machines_may_reach(host: str) -> None:
    assert not is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1"])
def test_other_addresses_are_refused_without_public(capsys, host: str) -> None:
    code, err = run_serve(capsys, "--host", host)
    assert code == 2
    assert err.count("\n") == 1, err
    assert "refusing to listen" in err and "no authentication" in err and "--public" in err


def test_a_port_in_use_is_one_line(capsys) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = run_serve(capsys, "--port", str(port))
    assert code == 1
    assert err == f"inferview: port {port} is already in use on 127.0.0.1; choose another with --port\n"


def test_public_on_an_address_this_machine_lacks_is_one_line(capsys) -> None:
    code, err = run_serve(capsys, "--host", "192.0.2.1", "--public")  # TEST-NET-1: never local
    assert code == 1
    assert err == "inferview: cannot listen on 192.0.2.1:8000: 192.0.2.1 is not an address of this machine\n"


def test_a_port_out_of_range_is_a_usage_error(capsys) -> None:
    code, err = run_serve(capsys, "--port", "70000")
    assert code == 2
    assert "--port" in err


def test_each_tab_runs_this_python_s_inferview() -> None:
    assert shlex.split(app_command()) == [sys.executable, "-m", "inferview"]


def test_the_server_never_imports_torch() -> None:
    code = ("import sys\nfrom inferview.cli import cli\nimport inferview.commands.serve\n"
            "from inferview.webserve import build_server, check_target\n"
            "server = build_server(check_target('127.0.0.1', 8000, public=False))\n"
            "import textual_serve.app_service\n"
            "assert server.templates_path.joinpath('app_index.html').is_file()\n"
            "print('torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

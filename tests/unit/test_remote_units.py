"""Remote grading's pieces without a server: where grading goes (settings and options), the remote
command line, what ssh's failures mean, the event lines, stdin submissions, the caller watch, the
result's additive host and device, and the app's choice of backend."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from inferview import paths
from inferview.grading import CheckResult, GradeResult, GradingUsageError
from inferview.machine import MachineInfo, device_name
from inferview.remote import serve, ssh
from inferview.remote.backend import SSHBackend, Unusable
from inferview.remote.config import RemoteConfig, resolve
from inferview.settings import SettingsError
from inferview.submit import GradingUnavailable, ServiceBackend


@pytest.fixture(autouse=True)
def no_remote_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("INFERVIEW_REMOTE", "INFERVIEW_REMOTE_COMMAND", "INFERVIEW_SSH_COMMAND"):
        monkeypatch.delenv(key, raising=False)


def write_config(text: str) -> None:
    (paths.data_dir() / "config.toml").write_text(text)


def test_no_remote_unless_one_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve() is None
    write_config('INFERVIEW_REMOTE = "gpu-box"\nINFERVIEW_SSH_COMMAND = "ssh -F \'my config\'"\n')
    assert resolve() == RemoteConfig("gpu-box", "inferview", ("ssh", "-F", "my config"))
    monkeypatch.setenv("INFERVIEW_REMOTE", "other")  # the environment wins over the file
    monkeypatch.setenv("INFERVIEW_REMOTE_COMMAND", "~/v/bin/inferview")
    assert resolve() == RemoteConfig("other", "~/v/bin/inferview", ("ssh", "-F", "my config"))
    assert resolve("me@10.0.0.5", "x").host == "me@10.0.0.5"  # options win over both
    assert resolve("") is None  # --remote '' grades here whatever the settings say


@pytest.mark.parametrize("host", ["-oProxyCommand=evil", "two words", "line\nbreak"])
def test_a_host_that_is_not_one_is_a_usage_error(host: str) -> None:
    with pytest.raises(GradingUsageError, match="not an ssh host"):
        resolve(host)


def test_a_setting_of_the_wrong_type_names_the_file() -> None:
    write_config("INFERVIEW_REMOTE = 5\n")
    with pytest.raises(SettingsError, match="config.toml: INFERVIEW_REMOTE must be a string"):
        resolve()


def test_the_remote_command_line_is_quoted_for_the_remote_shell() -> None:
    backend = SSHBackend("gpu-box", "env A=1 ~/v/bin/inferview")
    line = backend.remote_command("kv-cache-size", "my solution.py", device="auto", seed=7,
                                  fail_fast=True)
    assert line.startswith("env A=1 ~/v/bin/inferview grade ")
    words = shlex.split(line.removeprefix("env A=1 ~/v/bin/inferview "))
    assert words == ["grade", "--json", "--no-record", "--events", "--remote", "", "--device", "auto",
                     "--stdin-name", "my solution.py", "--seed", "7", "--fail-fast", "--",
                     "kv-cache-size", "-"]
    assert backend.name == "ssh:gpu-box"
    argv = ssh.argv(backend.config, line)
    assert argv[0] == "ssh" and argv[-3:] == ["--", "gpu-box", line]
    assert {"BatchMode=yes", "RemoteCommand=none"} <= set(argv)


CFG = RemoteConfig("box", "inferview")


@pytest.mark.parametrize(("rc", "stderr", "connected", "says"), [
    (255, "ssh: connect to host box port 22: Connection refused\n", False, "cannot reach box ("),
    (255, "ssh: Could not resolve hostname box: Name or service not known", False, "cannot reach"),
    (255, "me@box: Permission denied (publickey).", False, "box refused the key"),
    (255, "Host key verification failed.", False, "host key verification failed"),
    (255, "Connection to box closed by remote host.", True, "connection to box lost ("),
    (255, "client_loop: send disconnect: Broken pipe", False, "connection to box lost"),
    (-9, "", True, "connection to box lost: ssh was stopped by signal 9"),
    (127, "bash: line 1: inferview: command not found", False, "box has no inferview at"),
    (1, "inferview: error: RuntimeError: boom", True, "box: error: RuntimeError: boom"),
])
def test_each_failure_is_one_line_that_says_what_happened(rc: int, stderr: str, connected: bool,
                                                          says: str) -> None:
    line = ssh.explain(CFG, rc, stderr, connected=connected)
    assert says in line and "\n" not in line, line


def test_event_lines_round_trip_and_other_lines_are_not_events() -> None:
    line = serve.event_line("progress", done=1, total=3, check="a\nb")
    assert "\n" not in line
    assert serve.parse_event(line) == {"event": "progress", "done": 1, "total": 3, "check": "a\nb"}
    for other in ("inferview: no such file", "@inferview not json", '@inferview {"x": 1}'):
        assert serve.parse_event(other) is None


@pytest.mark.parametrize("name", ["", "..", "a/b.py", "../up.py", "x\\y.py"])
def test_a_stdin_name_must_be_a_plain_file_name(name: str) -> None:
    with pytest.raises(ValueError, match="plain file name"):
        serve.check_stdin_name(name)


def test_the_stdin_submission_folder_goes_whichever_way_the_block_ends(tmp_path: Path,
                                                                      monkeypatch) -> None:
    import io
    import tempfile

    tmp_path = tmp_path / "tmp"
    tmp_path.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with serve.stdin_submission("s.py", io.BytesIO(b"x = 1\n")) as path:
        assert path.name == "s.py" and path.read_bytes() == b"x = 1\n"
    assert not path.parent.exists()
    with pytest.raises(KeyboardInterrupt), serve.stdin_submission("s.py", io.BytesIO(b"")) as path:
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_the_caller_watch_fires_when_the_reader_goes() -> None:
    r, w = os.pipe()
    with os.fdopen(w, "w") as writer:
        gone = serve.watch_caller(writer)
        assert not gone.wait(0.2)
        os.close(r)
        assert gone.wait(3), "the watch did not notice the reader closing its end"


def test_host_and_device_are_additive_fields_of_the_result() -> None:
    local = GradeResult("x", "passed", "cpu", 1, 0.5, [CheckResult("a", "passed")])
    assert "host" not in local.to_json() and "device" not in local.to_json()
    remote = GradeResult("x", "passed", "cuda", 1, 0.5, [], host="gpu-box", device="NVIDIA H200")
    data = remote.to_json()
    assert data["schema"] == 1 and data["host"] == "gpu-box" and data["device"] == "NVIDIA H200"
    back = GradeResult.from_json(data)
    assert (back.host, back.device) == ("gpu-box", "NVIDIA H200") and back.to_json() == data


def test_the_app_status_line_says_where_it_graded() -> None:
    from inferview.tui.screens.challenge import result_line

    remote = GradeResult("x", "passed", "cuda", 1, 0.5, [], host="gpu-box", device="NVIDIA H200")
    assert "NVIDIA H200 on gpu-box" in result_line(remote, 120).plain
    local = GradeResult("x", "passed", "cpu", 1, 0.5, [])
    assert " · cpu" in result_line(local, 120).plain and " on " not in result_line(local, 120).plain


def test_the_machine_report_reads_what_it_writes() -> None:
    info = MachineInfo("0.1.0", "3.11.7", "Linux", "box", "2.13.0", "12.6", ["NVIDIA H200"], "3.5")
    assert MachineInfo.from_json(info.to_json()) == info and info.device == "NVIDIA H200"
    assert ("GPU", "NVIDIA H200") in info.lines()
    assert MachineInfo("0.1.0", "3.11", "Linux", "box").device == "cpu"
    with pytest.raises(ValueError):
        MachineInfo.from_json({"gpus": []})
    assert device_name("cpu") == "cpu"


def test_the_app_grades_where_the_settings_say(monkeypatch: pytest.MonkeyPatch) -> None:
    from inferview.tui.services import Services

    assert isinstance(Services(grading_client=object()).get_backend(), ServiceBackend)
    monkeypatch.setenv("INFERVIEW_REMOTE", "gpu-box")
    backend = Services(grading_client=object()).get_backend()
    assert isinstance(backend, SSHBackend) and backend.host == "gpu-box"
    monkeypatch.delenv("INFERVIEW_REMOTE")
    write_config("INFERVIEW_REMOTE = [\n")
    broken = Services(grading_client=object()).get_backend()
    assert isinstance(broken, Unusable)
    with pytest.raises(GradingUnavailable, match="not valid TOML"):
        broken.grade(None, Path("x.py"))  # type: ignore[arg-type]


def test_remote_grading_and_doctor_import_no_torch_until_doctor_probes() -> None:
    import subprocess
    import sys

    code = ("import sys, inferview.remote.backend, inferview.remote.serve, inferview.machine, "
            "inferview.commands.doctor, inferview.commands.grade, inferview.tui.services\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_grade_from_stdin_rejects_a_name_with_a_folder_in_one_line(capsys) -> None:
    from inferview.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["grade", "kv-cache-size", "-", "--stdin-name", "../x.py"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err == "inferview: --stdin-name must be a plain file name, " \
        "not '../x.py'\n"

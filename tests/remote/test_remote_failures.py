"""Every way remote grading can fail gives one line on stderr, exit status 2, and records nothing:
an unreachable host, a refused key, an untrusted host key, another inferview version, no
inferview there (the host chosen by the settings file). ``doctor --remote`` names the remote's
version and device, and fails in one line on a mismatch."""

from __future__ import annotations

from pathlib import Path

import pytest
from inferview.tests.remote.conftest import Remote
from inferview.tests.remote.test_remote_grading import RIGHT, run_cli

from inferview import __version__, paths
from inferview.store import Store


def old_inferview(tmp_path: Path) -> str:
    """A remote command that is another inferview version."""
    script = tmp_path / "old-inferview"
    script.write_text("#!/bin/sh\necho 'inferview, version 0.0.1'\n")
    script.chmod(0o755)
    return str(script)


def grade_fails(capsys, *args: str) -> str:
    code, out, err = run_cli(capsys, "grade", "kv-cache-size", str(RIGHT), *args)
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("inferview: "), err
    with Store.open() as store:
        assert store.submissions("kv-cache-size") == [], "nothing may be recorded"
    return lines[0]


@pytest.mark.parametrize(("host", "says"), [
    ("closed", ["cannot reach closed (ssh: connect to host 127.0.0.1 port", "Connection refused"]),
    ("stranger", ["stranger refused the key (", "Permission denied (publickey)", "ssh-add"]),
    ("untrusted", ["untrusted: host key verification failed: run `ssh untrusted` once"]),
])
def test_a_host_that_cannot_be_used_says_why_in_one_line(remote: Remote, capsys, host: str,
                                                         says: list[str]) -> None:
    line = grade_fails(capsys, "--remote", host, "--remote-command", remote.command)
    assert all(part in line for part in says), line


def test_another_version_there_is_a_mismatch(remote: Remote, capsys, tmp_path: Path) -> None:
    line = grade_fails(capsys, "--remote", "remote", "--remote-command", old_inferview(tmp_path))
    assert line == (f"inferview: version mismatch: remote runs inferview 0.0.1, this is "
                    f"{__version__}: install {__version__} there (its challenges must match)")


def test_the_settings_file_chooses_the_host_and_a_missing_inferview_says_so(
        remote: Remote, capsys) -> None:
    (paths.data_dir() / "config.toml").write_text(
        'INFERVIEW_REMOTE = "remote"\nINFERVIEW_REMOTE_COMMAND = "/nonexistent/inferview"\n')
    line = grade_fails(capsys)
    assert line.startswith("inferview: remote has no inferview at `/nonexistent/inferview`"), line
    assert "--remote-command" in line


def test_doctor_names_the_remotes_version_and_device(remote: Remote, capsys) -> None:
    code, out, err = run_cli(capsys, "doctor", "--remote", "remote", "--remote-command",
                             remote.command)
    assert code == 0, err
    assert out.startswith(f"remote: inferview {__version__}, the same version as here; "
                          "grading runs on cpu\n"), out
    assert "torch " in out and "GPU " in out


def test_doctor_fails_in_one_line_on_a_mismatch(remote: Remote, capsys, tmp_path: Path) -> None:
    code, out, err = run_cli(capsys, "doctor", "--json", "--remote", "remote", "--remote-command",
                             old_inferview(tmp_path))
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1, (code, out, err)
    assert "version mismatch: remote runs inferview 0.0.1" in err

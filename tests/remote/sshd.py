"""A real OpenSSH server on loopback for the remote-grading tests.

``SSHServer.start(folder)`` makes a temporary host key, a user key in ``authorized_keys`` and a
stranger's key that is not, writes an ``sshd_config`` and an ``ssh_config`` (passed with ``-F``,
so the user's own ``~/.ssh`` is never read), and runs ``sshd -D -e`` on a free port of 127.0.0.1.
Its hosts: ``remote`` (the user key), ``stranger`` (a refused key), ``untrusted`` (a host key
nobody accepted) and ``closed`` (a port nobody listens on).
"""

from __future__ import annotations

import getpass
import os
import shlex
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")
PRIVSEP_DIR = Path("/run/sshd")


def missing() -> str | None:
    """Why the server cannot run here, or None."""
    if not SSHD.is_file():
        return f"{SSHD} is missing (Debian's openssh-server; make test installs it)"
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"{tool} is missing (Debian's openssh-client)"
    if os.geteuid() == 0 and not PRIVSEP_DIR.is_dir():
        try:
            PRIVSEP_DIR.mkdir(mode=0o755)
        except OSError as exc:
            return f"sshd needs {PRIVSEP_DIR} as root and it cannot be made: {exc}"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", str(path)],
                   check=True, capture_output=True)
    return path.with_suffix(".pub").read_text().strip()


@dataclass
class SSHServer:
    folder: Path
    port: int
    proc: subprocess.Popen[bytes]
    config: Path
    """The client's ``ssh_config``."""

    @property
    def ssh_command(self) -> str:
        """``INFERVIEW_SSH_COMMAND`` for the tests."""
        return f"ssh -F {shlex.quote(str(self.config))}"

    @classmethod
    def start(cls, folder: Path) -> SSHServer:
        folder.mkdir(parents=True, exist_ok=True)
        host_pub = _keygen(folder / "host_key")
        user_pub = _keygen(folder / "user_key")
        _keygen(folder / "stranger_key")
        (folder / "authorized_keys").write_text(user_pub + "\n")
        port, closed = _free_port(), _free_port()
        user = getpass.getuser()
        (folder / "sshd_config").write_text("\n".join([
            f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {folder / 'host_key'}",
            f"PidFile {folder / 'sshd.pid'}", f"AuthorizedKeysFile {folder / 'authorized_keys'}",
            "StrictModes no", "UsePAM no", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
            f"PermitRootLogin {'prohibit-password' if os.geteuid() == 0 else 'no'}",
            f"AllowUsers {user}", "PrintMotd no", "PrintLastLog no", "LogLevel ERROR",
            "MaxStartups 50", "",
        ]))
        (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub}\n")
        (folder / "no_known_hosts").write_text("")
        common = ["  HostName 127.0.0.1", f"  User {user}", "  IdentitiesOnly yes",
                  "  IdentityAgent none", "  GlobalKnownHostsFile /dev/null",
                  "  StrictHostKeyChecking yes",
                  "  PasswordAuthentication no", "  KbdInteractiveAuthentication no",
                  "  LogLevel ERROR", "  ControlMaster no"]
        config = folder / "ssh_config"
        known = f"  UserKnownHostsFile {folder / 'known_hosts'}"
        config.write_text("\n".join([
            "Host remote", f"  Port {port}", f"  IdentityFile {folder / 'user_key'}", known,
            *common,
            "Host stranger", f"  Port {port}", f"  IdentityFile {folder / 'stranger_key'}", known,
            *common,
            "Host untrusted", f"  Port {port}", f"  IdentityFile {folder / 'user_key'}",
            f"  UserKnownHostsFile {folder / 'no_known_hosts'}", *common,
            "Host closed", f"  Port {closed}", f"  IdentityFile {folder / 'user_key'}", known,
            *common, "",
        ]))
        log = open(folder / "sshd.log", "wb")  # noqa: SIM115 - open for the server's lifetime
        proc = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(folder / "sshd_config")],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        server = cls(folder, port, proc, config)
        server._wait_listening()
        return server

    def _wait_listening(self, timeout_s: float = 10) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("sshd exited: " + (self.folder / "sshd.log").read_text()[-500:])
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"sshd did not listen on port {self.port} within {timeout_s} s")

    def sessions(self) -> list[int]:
        """The per-connection sshd processes (the listener's children)."""
        try:
            text = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
        except OSError:
            return []
        return [int(p) for p in text.split()]

    def stop(self) -> None:
        for pid in self.sessions():
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

"""A fork server for CPU workers: imports torch once, then forks a fresh worker per grading.

Started by the supervisor (``forkserver.py``) as ``python -I graders/zygote.py FD`` with a
worker's environment, in its own session. It imports what every worker imports before it sees a
submission (torch, Triton when asked, the worker module) and nothing else of a grading, then
waits on a ``SOCK_SEQPACKET`` socket. Each request carries a worker's four descriptors (its
request and reply pipes, its stdout and stderr files) with its folder and environment; the server
forks, and the child becomes exactly the worker ``worker.py`` would have been, in a new session,
without this server's socket and with the modules only this server needed removed. The server
reports each child's pid and, when it is reaped, its exit status (as ``Popen.returncode``).

Only CPU workers are forked: a process that has touched CUDA cannot fork safely, so CUDA workers
are started as before. This follows the zygote of Android and of Chromium, and CPython's own
``multiprocessing`` "forkserver" start method.
"""

from __future__ import annotations

import os
import sys

_CHILD_FDS = 4
_MAX_MESSAGE = 1 << 20


def _preload() -> object:
    """Import what a worker imports before its first request; return the worker module."""
    import importlib.util

    if os.environ.get("GRADER_TRITON") == "1":
        try:
            import triton  # noqa: F401
            import triton.language  # noqa: F401
        except Exception:  # noqa: BLE001 - reported when the submission imports it
            pass
    import torch  # noqa: F401

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
    spec = importlib.util.spec_from_file_location("_grader_worker", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)  # not put in sys.modules, as for the codec
    spec.loader.exec_module(mod)
    return mod


WORKER = _preload()
WORKER_MODULES = set(sys.modules)
"""What a freshly started worker has imported; a forked child drops everything else."""

import array  # noqa: E402 - imported after the snapshot above on purpose
import json  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _become_worker(sock: socket.socket, wake_r: int, wake_w: int, fds: list[int],
                   req: dict) -> None:
    """In the child: turn into the worker that ``python -I worker.py FD_IN FD_OUT`` would be."""
    code = 70
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL if sig != signal.SIGINT else signal.default_int_handler)
        sock.close()
        os.close(wake_r)
        os.close(wake_w)
        os.setsid()
        r_req, w_rep, out, err = fds
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (null, out, err):
            if fd > 2:
                os.close(fd)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        import tempfile

        tempfile.tempdir = None
        for name in [m for m in sys.modules if m not in WORKER_MODULES]:
            del sys.modules[name]
        sys.argv = [req["argv0"], str(r_req), str(w_rep)]
        code = WORKER.main(sys.argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - the supervisor sees the exit status
        code = 70
    finally:
        os._exit(code)


def _status(raw: int) -> int:
    """``os.waitpid``'s status as ``Popen.returncode`` says it: ``-signal`` or the exit code."""
    if os.WIFSIGNALED(raw):
        return -os.WTERMSIG(raw)
    return os.WEXITSTATUS(raw) if os.WIFEXITED(raw) else raw


def serve(sock: socket.socket) -> None:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    send = lambda body: sock.send(json.dumps(body).encode())  # noqa: E731
    send({"op": "ready", "pid": os.getpid(), "threads": _threads()})
    while True:
        ready, _, _ = select.select([sock, wake_r], [], [], 5.0)
        if wake_r in ready:
            try:
                os.read(wake_r, 4096)
            except BlockingIOError:
                pass
        while True:  # reap every child that ended
            try:
                pid, raw = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            send({"op": "exit", "pid": pid, "status": _status(raw)})
        if sock not in ready:
            continue
        fds = array.array("i")
        try:
            msg, anc, _flags, _addr = sock.recvmsg(_MAX_MESSAGE, socket.CMSG_SPACE(_CHILD_FDS * fds.itemsize))
        except InterruptedError:
            continue
        if not msg:
            return  # the supervisor went away: its workers are its to kill
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
        got = list(fds)
        req = json.loads(msg)
        if len(got) != _CHILD_FDS or _threads() != 1:
            for fd in got:
                os.close(fd)
            send({"op": "refused", "rid": req.get("rid"),
                  "why": f"{len(got)} descriptors, {_threads()} threads"})
            continue
        pid = os.fork()
        if pid == 0:
            _become_worker(sock, wake_r, wake_w, got, req)
        for fd in got:
            os.close(fd)
        send({"op": "forked", "rid": req.get("rid"), "pid": pid})


def main(argv: list[str]) -> int:
    sock = socket.socket(fileno=int(argv[1]))
    try:
        serve(sock)
    except (BrokenPipeError, ConnectionResetError):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

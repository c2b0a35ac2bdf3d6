"""Supervisor side of the worker process: start, talk, watch, kill.

Every wait has a deadline (``selectors`` with a timeout, never a bare blocking read), the worker
runs in its own session and process group, and a kill is a ``SIGKILL`` to the whole group followed
by a sweep for escaped processes: descendants of the worker (taken before the kill), processes
carrying the run's environment token (``/proc/*/environ``), and orphans re-parented to this
process (it marks itself ``PR_SET_CHILD_SUBREAPER`` on Linux). Resident memory of the group is
polled from ``/proc`` (``RLIMIT_AS`` is not used: it breaks torch's allocator reservations); output
files are capped with ``RLIMIT_FSIZE`` (CPython ignores ``SIGXFSZ``, so writes past it fail with
``EFBIG`` instead of killing the worker).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferview.graders import codec
from inferview.graders.forkserver import ForkedProcess, ForkServer, ForkServerError
from inferview.graders.sweep import OwnedDir

WORKER_SCRIPT = Path(__file__).resolve().with_name("worker.py")
OUTPUT_CAP = 64 << 20  # bytes a worker may write to stdout/stderr files
OUTPUT_SHOWN = 32 << 10  # bytes of each end of the output shown back
BOOT_TIMEOUT_S = 120.0
TOKEN_VAR = "GRADER_RUN_TOKEN"
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_LIVE_WORKERS: set[int] = set()
_LIVE_LOCK = threading.Lock()
_SUBREAPER_DONE = False


class WorkerFailure(Exception):
    """The worker stopped serving: ``kind`` is ``timeout``, ``crashed``, ``memory``,
    ``cancelled`` or ``protocol``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _set_subreaper() -> None:
    global _SUBREAPER_DONE
    if _SUBREAPER_DONE or not sys.platform.startswith("linux"):
        return
    _SUBREAPER_DONE = True
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_CHILD_SUBREAPER = 36
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _proc_stat(pid: int) -> tuple[int, int, int, int] | None:
    """``(ppid, pgid, session, starttime)`` of ``pid`` from ``/proc``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    rest = data[data.rfind(b")") + 2:].split()
    try:
        return int(rest[1]), int(rest[2]), int(rest[3]), int(rest[19])
    except (IndexError, ValueError):
        return None


def _all_pids() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _has_token(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return needle in f.read()
    except OSError:
        return False


def _read_capped(path: Path) -> str:
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            if size <= 2 * OUTPUT_SHOWN:
                data = f.read()
                return data.decode("utf-8", "replace")
            head = f.read(OUTPUT_SHOWN)
            f.seek(size - OUTPUT_SHOWN)
            tail = f.read()
    except OSError:
        return ""
    omitted = size - 2 * OUTPUT_SHOWN
    return (head.decode("utf-8", "replace")
            + f"\n[... {omitted} bytes of output omitted ...]\n"
            + tail.decode("utf-8", "replace"))


def _kernel_cache(fallback: Path) -> Path:
    """The persistent Triton cache for GPU gradings, or ``fallback`` when it cannot be made.

    Compiling a kernel for each (dtype, head_dim, causal) variant a grading tries costs seconds on a
    GPU; the cache is keyed by the kernel's source, so one submission's entries never serve another.
    """
    from inferview.paths import kernel_cache_dir

    try:
        path = kernel_cache_dir()
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return fallback
    return path


def spare(pid: int, keep: bool = True) -> None:
    """Keep process ``pid`` of this supervisor (a fork server) out of every worker's sweep for
    strays, or (``keep=False``) no longer."""
    with _LIVE_LOCK:
        (_LIVE_WORKERS.add if keep else _LIVE_WORKERS.discard)(pid)


def base_env(*, triton: bool, device: str, threads: int = 1) -> dict[str, str]:
    """A worker's environment without its own folders and token: what every worker of one kind
    shares (and what a fork server for that kind starts with)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "OPENBLAS_NUM_THREADS": str(threads),
    }
    for key in ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "LD_LIBRARY_PATH", "TRITON_PTXAS_PATH",
                "CC", "SYSTEMROOT"):
        if key in os.environ:
            env[key] = os.environ[key]
    if triton:
        env["GRADER_TRITON"] = "1"
        if device == "cpu":
            env["TRITON_INTERPRET"] = "1"
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


class WorkerProcess:
    """One untrusted worker: ``start()``, then ``request()`` calls, then ``close()``."""

    def __init__(self, *, triton: bool = False, device: str = "cpu", memory_limit_mb: int = 3072,
                 threads: int = 1) -> None:
        self.triton = triton
        self.device = device
        self.memory_limit = memory_limit_mb << 20
        self.threads = threads
        self.token = secrets.token_hex(16)
        self.folder = OwnedDir("inferview-grade-", token=self.token)  # swept should we die
        self.tmp = self.folder.path
        self.cwd = self.tmp / "work"
        self.home = self.tmp / "home"
        for d in (self.cwd, self.home, self.tmp / "tmp"):
            d.mkdir()
        self.out_path = self.tmp / "stdout.txt"
        self.err_path = self.tmp / "stderr.txt"
        self.proc: subprocess.Popen[bytes] | ForkedProcess | None = None
        self.reader = codec.FrameReader()
        self._wfd = -1
        self._rfd = -1
        self.ready = False
        self.info: dict[str, Any] = {}
        self.started_at = 0.0
        self.peak_rss = 0
        self._last_group_scan = 0.0
        self._start_ticks = 0

    # -- life cycle -----------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        env = base_env(triton=self.triton, device=self.device, threads=self.threads)
        env.update({"HOME": str(self.home), "TMPDIR": str(self.tmp / "tmp"),
                    "TRITON_CACHE_DIR": str(self.home / ".triton"), TOKEN_VAR: self.token})
        if self.triton and self.device != "cpu":
            env["TRITON_CACHE_DIR"] = str(_kernel_cache(self.home / ".triton"))
        return env

    def start(self, server: ForkServer | None = None) -> None:
        """Spawn the worker, or fork it from ``server`` when one is given and can (returns at
        once; :meth:`wait_ready` waits for its imports)."""
        _set_subreaper()
        r_req, w_req = os.pipe()
        r_rep, w_rep = os.pipe()
        out = open(self.out_path, "wb")
        err = open(self.err_path, "wb")
        try:
            if server is not None:
                with contextlib.suppress(ForkServerError):
                    self.proc = server.fork([r_req, w_rep, out.fileno(), err.fileno()],
                                            self.cwd, self.env())
            if self.proc is None:
                self.proc = subprocess.Popen(
                    [sys.executable, "-I", str(WORKER_SCRIPT), str(r_req), str(w_rep)],
                    pass_fds=(r_req, w_rep), cwd=self.cwd, env=self.env(),
                    stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
                    close_fds=True,
                )
        finally:
            out.close()
            err.close()
            os.close(r_req)
            os.close(w_rep)
        self._wfd, self._rfd = w_req, r_rep
        os.set_blocking(self._wfd, False)
        os.set_blocking(self._rfd, False)
        self.started_at = time.monotonic()
        with _LIVE_LOCK:
            _LIVE_WORKERS.add(self.proc.pid)
        st = _proc_stat(self.proc.pid)
        self._start_ticks = st[3] if st else 0
        self.folder.record_pid(self.proc.pid, self._start_ticks)
        if hasattr(os, "prlimit") or sys.platform.startswith("linux"):
            with contextlib.suppress(Exception):
                import resource

                resource.prlimit(self.proc.pid, resource.RLIMIT_FSIZE, (OUTPUT_CAP, OUTPUT_CAP))

    def wait_ready(self, cancel: Callable[[], bool] | None = None) -> dict[str, Any]:
        if self.ready:
            return self.info
        header, _ = self._receive("ready", time.monotonic() + BOOT_TIMEOUT_S, cancel, "starting")
        self.ready = True
        self.info = header
        return header

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def output(self) -> tuple[str, str]:
        """The worker's stdout and stderr, each capped to its first and last 32 KiB."""
        return _read_capped(self.out_path), _read_capped(self.err_path)

    # -- talking --------------------------------------------------------------------------------
    def request(self, header: dict[str, Any], buffers: list[bytes], *, deadline: float,
                cancel: Callable[[], bool] | None = None,
                describe: str = "") -> tuple[dict[str, Any], list[bytes]]:
        """Send one request and wait (until ``deadline``, monotonic) for the matching reply."""
        rid = secrets.token_hex(8)
        header = dict(header)
        header["id"] = rid
        data = memoryview(codec.encode(header, buffers))
        sel = selectors.DefaultSelector()
        try:
            sel.register(self._wfd, selectors.EVENT_WRITE)
            while data:
                self._watch(deadline, cancel, describe)
                if sel.select(timeout=0.05):
                    try:
                        n = os.write(self._wfd, data)
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:
                        self._raise_dead(describe)
                    data = data[n:]
        finally:
            sel.close()
        return self._receive(rid, deadline, cancel, describe)

    def _receive(self, rid: str, deadline: float, cancel: Callable[[], bool] | None,
                 describe: str) -> tuple[dict[str, Any], list[bytes]]:
        sel = selectors.DefaultSelector()
        sel.register(self._rfd, selectors.EVENT_READ)
        try:
            while True:
                frame = self._pop()
                if frame is not None:
                    header, buffers = frame
                    if header.get("id") == rid:
                        return header, buffers
                    continue  # a frame for no pending request: ignored
                self._watch(deadline, cancel, describe)
                if sel.select(timeout=0.03):
                    try:
                        chunk = os.read(self._rfd, 1 << 20)
                    except BlockingIOError:
                        continue
                    if chunk:
                        self.reader.feed(chunk)
                    else:
                        # every writer closed: the worker is gone (or closed the pipe)
                        frame = self._pop()
                        if frame is not None and frame[0].get("id") == rid:
                            return frame
                        self._wait_exit(1.0)
                        self._raise_dead(describe)
        finally:
            sel.close()

    def _pop(self) -> tuple[dict[str, Any], list[bytes]] | None:
        try:
            return self.reader.pop()
        except codec.CodecError as exc:
            self.kill()
            raise WorkerFailure("protocol", f"the worker sent a malformed reply ({exc})") from None

    def _watch(self, deadline: float, cancel: Callable[[], bool] | None, describe: str) -> None:
        now = time.monotonic()
        if cancel is not None and cancel():
            self.kill()
            raise WorkerFailure("cancelled", "cancelled")
        if self.proc is not None and self.proc.poll() is not None:
            # drain what it wrote before dying
            with contextlib.suppress(BlockingIOError, OSError):
                while True:
                    chunk = os.read(self._rfd, 1 << 20)
                    if not chunk:
                        break
                    self.reader.feed(chunk)
            if self.reader._buf:
                return
            self._raise_dead(describe)
        rss = self._memory(now)
        if rss > self.memory_limit:
            self.kill()
            raise WorkerFailure(
                "memory",
                f"killed: the worker's resident memory reached {rss >> 20} MB, above the "
                f"{self.memory_limit >> 20} MB limit" + (f", during {describe}" if describe else ""),
            )
        if now > deadline:
            self.kill()
            raise WorkerFailure("timeout", "time limit reached" + (f" during {describe}" if describe else ""))

    def _memory(self, now: float) -> int:
        if self.proc is None:
            return 0
        rss = _rss_bytes(self.proc.pid)
        if now - self._last_group_scan > 0.5 and sys.platform.startswith("linux"):
            self._last_group_scan = now
            total = 0
            for pid in self._group_pids():
                total += _rss_bytes(pid)
            rss = max(rss, total)
        self.peak_rss = max(self.peak_rss, rss)
        return rss

    def _group_pids(self) -> list[int]:
        if self.proc is None:
            return []
        pgid = self.proc.pid
        out = []
        for pid in _all_pids():
            st = _proc_stat(pid)
            if st is not None and st[1] == pgid:
                out.append(pid)
        return out

    def _wait_exit(self, timeout: float) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=timeout)

    def _raise_dead(self, describe: str) -> None:
        assert self.proc is not None
        self._wait_exit(2.0)
        rc = self.proc.poll()
        self.kill()
        where = f" during {describe}" if describe else ""
        if rc is None:
            raise WorkerFailure("crashed", f"the worker closed its channel{where}")
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            hint = {"SIGSEGV": " (segmentation fault)", "SIGBUS": " (bus error)",
                    "SIGKILL": " (killed)", "SIGABRT": " (aborted)",
                    "SIGFPE": " (arithmetic fault)"}.get(name, "")
            raise WorkerFailure("crashed", f"the worker died from {name}{hint}{where}")
        raise WorkerFailure(
            "crashed",
            f"the worker exited with status {rc}{where}; the solution must not end the process "
            "(os._exit, sys.exit in a thread, or a fatal error)",
        )

    # -- ending ---------------------------------------------------------------------------------
    def _descendants(self) -> list[int]:
        if self.proc is None or not sys.platform.startswith("linux"):
            return []
        children: dict[int, list[int]] = {}
        for pid in _all_pids():
            st = _proc_stat(pid)
            if st is not None:
                children.setdefault(st[0], []).append(pid)
        out, stack = [], [self.proc.pid]
        while stack:
            p = stack.pop()
            for c in children.get(p, []):
                out.append(c)
                stack.append(c)
        return out

    def _stragglers(self) -> list[int]:
        """Processes from this run that are still alive after the group kill."""
        if not sys.platform.startswith("linux"):
            return []
        needle = f"{TOKEN_VAR}={self.token}".encode()
        me = os.getpid()
        with _LIVE_LOCK:
            others = set(_LIVE_WORKERS) - ({self.proc.pid} if self.proc else set())
        found = []
        for pid in _all_pids():
            if pid == me or pid in others:
                continue
            st = _proc_stat(pid)
            if st is None:
                continue
            adopted = st[0] == me and st[3] >= self._start_ticks and self._start_ticks > 0
            if adopted or _has_token(pid, needle):
                found.append(pid)
        return found

    def kill(self) -> None:
        """SIGKILL the worker's group and every process of this run that escaped it; reap."""
        if self.proc is None:
            return
        pids = self._descendants()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            self.proc.kill()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        self._wait_exit(5.0)
        for _ in range(3):
            strays = self._stragglers()
            if not strays:
                break
            for pid in strays:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)
        me = os.getpid()
        for pid in pids + self._stragglers():
            st = _proc_stat(pid)
            if st is not None and st[0] == me:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)
        # reap adopted orphans that were already dead (zombies re-parented to us)
        for pid in _all_pids() if sys.platform.startswith("linux") else []:
            st = _proc_stat(pid)
            if (st is not None and st[0] == me and st[3] >= self._start_ticks > 0
                    and pid not in _LIVE_WORKERS):
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)

    def close(self) -> None:
        """Kill everything of this run, close the pipes and remove the temporary folder."""
        if self.proc is not None:
            self.kill()
            with _LIVE_LOCK:
                _LIVE_WORKERS.discard(self.proc.pid)
            if isinstance(self.proc, ForkedProcess):
                self.proc.release()
        for fd in (self._wfd, self._rfd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._wfd = self._rfd = -1
        self.folder.remove()

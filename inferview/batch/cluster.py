"""A batch as Ray tasks on an existing cluster (``--ray auto`` or ``--ray ADDRESS``).

Ray is imported only here, and only for ``--ray``; a cluster is never started, only joined. Each
submission is one task, ``@ray.remote(num_cpus=1, num_gpus=1 when the challenge runs on CUDA,
max_retries=N, retry_exceptions=False)``, running :func:`~inferview.batch.task.grade_submission`
with the submission's bytes in its argument (the node need not share this filesystem) on a node
that has inferview installed. One whole GPU per task keeps two gradings off one GPU, so timings
are not shared. A worker or node lost mid-task is retried by Ray up to N times; a task that still
fails is a row that says ``not graded`` and why, never a verdict. An exception inside the task is a
grading problem, not a lost node, so it is not retried (``retry_exceptions=False``).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from typing import Any

from inferview.batch.discover import Submission
from inferview.batch.table import BatchRow
from inferview.batch.task import ChallengeRef, choose_device, grade_submission
from inferview.grading import GradingUsageError

INSTALL_HINT = "grade-batch --ray needs Ray: pip install 'inferview[cluster]'"
CONNECT_TIMEOUT_S = 5.0
"""How long the cluster's address may take to accept a connection."""
SUPERVISOR_MB = 1024
"""Memory a task asks for besides the challenge's own limit (its supervisor)."""

DoneFn = Callable[[BatchRow], None]


class ClusterError(RuntimeError):
    """The cluster cannot be used (Ray missing, unreachable, without a GPU a challenge needs);
    ``str()`` is one line."""


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ClusterError(INSTALL_HINT) from None
    return ray


def _reachable(address: str) -> None:
    """Fail fast on an address nothing listens on (``ray.init`` would retry for minutes)."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        raise ClusterError(f"--ray {address}: expected auto or HOST:PORT of the cluster's head")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: "
                           f"{exc.strerror or exc}") from None


def connect(address: str) -> Any:
    """Join the cluster at ``address`` (``auto``: the one this machine belongs to); returns ray."""
    ray = import_ray()
    if address != "auto":
        _reachable(address)
    try:
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False,
                 configure_logging=True)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        where = "no running Ray cluster found" if address == "auto" else f"cannot join {address}"
        raise ClusterError(f"{where}: {first}") from None
    return ray


def describe_failure(ray: Any, exc: BaseException, retries: int) -> str:
    """One line for a task that finally failed."""
    x = ray.exceptions
    tried = f"after {retries} {'retry' if retries == 1 else 'retries'}"
    if isinstance(exc, x.NodeDiedError):
        return f"its node died ({tried})"
    if isinstance(exc, x.OutOfMemoryError):
        return f"killed by Ray's memory monitor ({tried})"
    if isinstance(exc, x.WorkerCrashedError | x.LocalRayletDiedError):
        return f"its Ray worker died ({tried})"
    if isinstance(exc, x.TaskCancelledError):
        return "cancelled"
    if isinstance(exc, x.RayTaskError):
        cause = exc.cause if getattr(exc, "cause", None) is not None else exc
        text = (str(cause).strip().splitlines() or [""])[-1]
        return f"the grading task failed: {type(cause).__name__}: {text}"
    text = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {text}"


def run_cluster(ray: Any, challenge: ChallengeRef, spec: Any, submissions: list[Submission], *,
                device: str = "auto", seed: int | None = None, fail_fast: bool = False,
                retries: int = 2, on_done: DoneFn | None = None) -> list[BatchRow]:
    """Grade every submission as a task on the joined cluster; a row per submission, in the
    order they finished (``GradingUsageError`` up front when no node has the CPU, the GPU or the
    memory one grading needs)."""
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    where = choose_device(spec, device, max((int(r.get("GPU", 0)) for r in nodes), default=0))
    need = {"CPU": 1, "GPU": 1 if where == "cuda" else 0,
            "memory": (int(spec.memory_limit_mb) + SUPERVISOR_MB) << 20}
    if not any(all(r.get(k, 0) >= v for k, v in need.items()) for r in nodes):
        # Ray would keep such a task waiting for ever
        raise GradingUsageError(
            f"no node of the cluster has what one grading needs: 1 CPU, "
            f"{'1 GPU, ' if need['GPU'] else ''}{need['memory'] / 2**30:.1f} GiB of memory")
    task = ray.remote(grade_submission).options(
        num_cpus=need["CPU"], num_gpus=need["GPU"], memory=need["memory"],
        max_retries=retries, retry_exceptions=False)
    rows: list[BatchRow] = []

    def finish(row: BatchRow) -> None:
        rows.append(row)
        if on_done is not None:
            on_done(row)

    refs: dict[Any, Submission] = {}
    for sub in submissions:
        if sub.problem is not None:
            finish(BatchRow.not_graded(sub, sub.problem))
            continue
        refs[task.remote(challenge, sub.filename, sub.source, where, seed, fail_fast)] = sub
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=1.0)
            for ref in done:
                sub = refs[ref]
                try:
                    outcome = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    finish(BatchRow.not_graded(sub, describe_failure(ray, exc, retries)))
                else:
                    finish(BatchRow.from_outcome(sub, outcome))
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    return rows

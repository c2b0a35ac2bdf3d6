"""The grading engine: ``grade(challenge, submission) -> GradeResult``.

The trusted supervisor (this process) starts an untrusted worker (``worker.py``) right away so its
torch import overlaps with the supervisor's own work: reading the file, the syntax check, the
static forbidden-API scan (``scan.py``) and importing the challenge's ``checks.py``. It then has
the worker import the submission, checks the entry points, and runs every check with Hypothesis
seeded from the run's seed, comparing in this process. Verdicts and the JSON result follow
CHALLENGES.md ("schema 1"); the run's seed replays it exactly.

Hypothesis (MacIver et al., https://hypothesis.readthedocs.io) finds and shrinks the failing input;
the process isolation follows online judges (Kattis problem-package verifiers, gpu-mode kernelbot).
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
import secrets
import signal
import sys
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from inferview.graders import codec
from inferview.graders.api import (
    CheckFailed,
    CheckInfo,
    Ctx,
    Opaque,
    Remote,
    Submission,
    SubmissionError,
    WorkerFunction,
    _Channel,
)
from inferview.graders.pool import POOL, key_for
from inferview.graders.process import WorkerFailure, WorkerProcess
from inferview.graders.scan import BLOCKED_MODULES, Rule, scan_source

from inferview.content.loader import LoadedChallenge, load_challenge_folder
from inferview.grading import (
    VERDICT_ORDER,
    CheckResult,
    CheckStatus,
    GradeResult,
    GradingUsageError,
)

DEFAULT_MAX_EXAMPLES = 25
"""The grader's Hypothesis profile: examples per check unless the check sets ``max_examples``."""
MAX_SHRINK_SECONDS = 8.0
MAX_RESTARTS = 1
KILLED_MESSAGE = ("the grading worker was killed from outside the grader (SIGKILL), not by the "
                  "solution running out of memory; nothing was graded")
LOAD_CHECK = "solution loads and defines the entry points"
FORBIDDEN_CHECK = "uses only allowed APIs"

ProgressFn = Callable[[int, int, str], None]

__all__ = ["GradeResult", "GradingUsageError", "WorkerKilled", "as_challenge", "grade", "prestart"]


class WorkerKilled(RuntimeError):
    """The worker was killed from outside the grader (a SIGKILL it did not send, while the system
    killed nothing for memory): no verdict, since the submission did not cause it; ``str()``
    says so in one line."""


def _oom_kills() -> int | None:
    """How many processes the kernel has killed for memory since boot (``oom_kill`` in
    ``/proc/vmstat``, cgroup limits included), or None where it cannot be read."""
    try:
        with open("/proc/vmstat", "rb") as f:
            for line in f:
                if line.startswith(b"oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def as_challenge(challenge: LoadedChallenge | Path | str) -> LoadedChallenge:
    """A loaded challenge, or the challenge folder given as a path (loaded with the content
    loader's checks; raises ``GradingUsageError``)."""
    if isinstance(challenge, LoadedChallenge):
        return challenge
    folder = Path(challenge)
    if not (folder / "challenge.yaml").is_file():
        raise GradingUsageError(f"{folder} is not a challenge folder (no challenge.yaml)")
    ch, errors = load_challenge_folder(folder.resolve())
    if ch is None:
        raise GradingUsageError("; ".join(str(e) for e in errors))
    return ch


def load_checks(ch: LoadedChallenge) -> list[tuple[CheckInfo, Callable[..., Any]]]:
    """Import ``checks.py`` fresh and return its checks in definition order."""
    path = ch.folder / ch.spec.checks
    name = f"inferview_checks_{ch.id.replace('-', '_')}_{secrets.token_hex(4)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise GradingUsageError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as exc:  # noqa: BLE001 - a broken checks.py is the author's to fix
        raise GradingUsageError(
            f"{path}: the challenge's checks could not be imported: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        sys.modules.pop(name, None)
    found = []
    for obj in vars(mod).values():
        info = getattr(obj, "_inferview_check", None)
        if isinstance(info, CheckInfo):
            found.append((info, obj))
    found.sort(key=lambda pair: pair[0].order)
    return found


def choose_backend(spec: Any, device: str) -> str:
    """``cpu`` or ``cuda`` for this run (``GradingUsageError`` when CUDA is asked for but absent)."""
    if device not in ("auto", "cpu", "cuda"):
        raise GradingUsageError(f"unknown device {device!r} (use auto, cpu or cuda)")
    import torch

    has_cuda = bool(torch.cuda.is_available())
    if device == "cuda":
        if not has_cuda:
            raise GradingUsageError("--device cuda: no CUDA GPU is available")
        if spec.device == "cpu":
            raise GradingUsageError(f"challenge {spec.id} is graded on the CPU only")
        return "cuda"
    if device == "cpu":
        if spec.device == "cuda":
            raise GradingUsageError(f"challenge {spec.id} needs a CUDA GPU")
        return "cpu"
    if spec.device == "cuda" and not has_cuda:
        raise GradingUsageError(f"challenge {spec.id} needs a CUDA GPU and none is available")
    return "cuda" if has_cuda and spec.device != "cpu" else "cpu"


def forbidden_roots(ch: LoadedChallenge) -> list[str]:
    """Folders the submission may not read: the installed packages and the challenge folder."""
    roots = {str(ch.folder)}
    for name in ("inferview", "inferview.graders", "inferview.reference", "inferview.challenges",
                 "inferview.questions", "inferview.tests"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None:
            for loc in spec.submodule_search_locations or []:
                roots.add(str(Path(loc).resolve()))
    return sorted(roots)


# ---------------------------------------------------------------------------------------------
# Pre-started workers (the grading service keeps one warm so a grade does not wait for imports)
# ---------------------------------------------------------------------------------------------

def prestart(challenge: LoadedChallenge | Path, device: str = "auto") -> None:
    """Start a worker for ``challenge`` now, so the next ``grade`` of it skips the start-up."""
    ch = as_challenge(challenge)
    POOL.warm(key_for(ch.spec, choose_backend(ch.spec, device)))


# ---------------------------------------------------------------------------------------------
# Entry-point messages
# ---------------------------------------------------------------------------------------------


def _expected_params(signature: str) -> list[str] | None:
    sig = signature.strip()
    if not sig:
        return None
    if not sig.startswith("("):
        sig = sig[sig.find("("):] if "(" in sig else ""
    try:
        tree = ast.parse(f"def _f{sig}:\n    pass\n")
    except SyntaxError:
        return None
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return names


def _signature_problem(ep: Any, params: list[list[Any]] | None) -> str | None:
    expected = _expected_params(ep.signature)
    if expected is None or params is None:
        return None
    shown = f"{ep.name}{ep.signature.strip()}"
    got_names = [p[0] for p in params if p[1] not in ("VAR_POSITIONAL", "VAR_KEYWORD")]
    has_var_pos = any(p[1] == "VAR_POSITIONAL" for p in params)
    has_var_kw = any(p[1] == "VAR_KEYWORD" for p in params)
    got_shown = f"{ep.name}({', '.join(p[0] for p in params)})"
    positional = [p for p in params if p[1] in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
    for i, name in enumerate(expected):
        if i < len(positional):
            if positional[i][0] != name:
                if name in got_names:
                    return (f"wrong signature: {got_shown}; expected {shown} "
                            f"(parameter {i + 1} should be {name!r}, not {positional[i][0]!r})")
                return (f"wrong signature: {got_shown}; expected {shown} "
                        f"(parameter {name!r} is missing; found {positional[i][0]!r} in its place)")
        elif name not in got_names and not (has_var_pos and has_var_kw):
            return f"wrong signature: {got_shown}; expected {shown} (parameter {name!r} is missing)"
    for p in params[len(expected):]:
        if p[0] not in expected and p[1] not in ("VAR_POSITIONAL", "VAR_KEYWORD") and not p[2]:
            return (f"wrong signature: {got_shown}; expected {shown} "
                    f"(extra parameter {p[0]!r} has no default)")
    return None


def entry_point_problems(spec: Any, info: dict[str, Any]) -> list[str]:
    """Messages for missing, misspelled or mis-shaped entry points (empty when all is well)."""
    names = [n for n in info.get("names", []) if isinstance(n, str)]
    eps = info.get("entry_points", {})
    out = []
    for ep in spec.entry_points:
        d = eps.get(ep.name) or {}
        if not d.get("exists"):
            lower = {n.lower(): n for n in names}
            guess = lower.get(ep.name.lower()) or next(
                iter(difflib.get_close_matches(ep.name, names, n=1, cutoff=0.6)), None)
            msg = f"{ep.name} not defined"
            if guess:
                msg += f"; did you mean {guess}?"
            out.append(msg)
            continue
        if ep.kind == "class" and not d.get("is_class"):
            out.append(f"{ep.name} must be a class")
            continue
        if ep.kind == "function" and (d.get("is_class") or not d.get("callable")):
            out.append(f"{ep.name} must be a function")
            continue
        if ep.kind == "class":
            missing = [m for m, ok in (d.get("methods") or {}).items() if not ok]
            if missing:
                out.append(f"{ep.name} has no method {', '.join(missing)}")
                continue
        problem = _signature_problem(ep, d.get("params"))
        if problem:
            out.append(problem)
    return out


# ---------------------------------------------------------------------------------------------
# The channel the checks talk through
# ---------------------------------------------------------------------------------------------


class _RunAborted(BaseException):
    """Ends the run from inside a check (a BaseException, so Hypothesis does not shrink it)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class _Runner(_Channel):
    def __init__(self, ch: LoadedChallenge, backend: str, source: str, filename: str,
                 cancel: Callable[[], bool] | None) -> None:
        self.ch = ch
        self.backend = backend
        self.source = source
        self.filename = filename
        self.cancel = cancel
        self.worker: WorkerProcess | None = None
        self.deadline = float("inf")
        self.restarts = 0
        self.load_info: dict[str, Any] = {}
        self.stdout_parts: list[str] = []
        self.stderr_parts: list[str] = []
        helpers = ch.folder / "worker_helpers.py"
        self.helpers = ({"worker_helpers.py": helpers.read_text(encoding="utf-8")}
                        if helpers.is_file() else {})
        self.roots = forbidden_roots(ch)
        self.oom_kills = _oom_kills()

    def killed_from_outside(self, kind: str) -> bool:
        """A worker death of ``kind`` is a SIGKILL this grader did not send (its own kills end
        as ``memory``, ``timeout`` or ``cancelled``) and the kernel killed nothing for memory
        meanwhile: someone killed the worker, not the submission's doing (a solution that kills
        itself that way gets no verdict either, which gains it nothing)."""
        w = self.worker
        if kind != "crashed" or w is None or w.proc is None or w.proc.poll() != -signal.SIGKILL:
            return False
        return self.oom_kills is not None and _oom_kills() == self.oom_kills

    # -- worker life cycle ---------------------------------------------------------------------
    def spawn(self) -> None:
        key = key_for(self.ch.spec, self.backend)
        self.worker = POOL.take(key) if self.restarts == 0 else POOL.start(key)

    def collect_output(self) -> None:
        if self.worker is not None:
            out, err = self.worker.output()
            if out:
                self.stdout_parts.append(out)
            if err:
                self.stderr_parts.append(err)

    def close(self) -> None:
        if self.worker is not None:
            self.collect_output()
            self.worker.close()
            self.worker = None

    def load(self) -> dict[str, Any]:
        """Boot (if needed) and import the submission; returns the worker's reply."""
        assert self.worker is not None
        self.worker.wait_ready(self.cancel)
        spec = self.ch.spec
        header = {
            "op": "load",
            "source": self.source,
            "filename": self.filename,
            "helpers": self.helpers,
            "requires_triton": bool(spec.requires_triton),
            "forbidden": [{"pattern": f.pattern, "reason": f.reason, "runtime": f.runtime}
                          for f in spec.forbidden],
            "blocked_modules": list(BLOCKED_MODULES),
            "forbidden_roots": self.roots,
            "entry_points": [{"name": e.name, "kind": e.kind, "methods": list(e.methods)}
                             for e in spec.entry_points],
        }
        reply, _ = self.worker.request(header, [], deadline=self.deadline, cancel=self.cancel,
                                       describe="importing the solution")
        self._violations(reply)
        return reply

    def restart(self) -> None:
        """A fresh worker after a crash, with the submission loaded again."""
        self.close()
        self.restarts += 1
        self.spawn()
        reply = self.load()
        if not reply.get("ok"):
            raise _RunAborted("crashed", "the solution could not be loaded again after a crash")

    # -- requests ------------------------------------------------------------------------------
    def _violations(self, reply: dict[str, Any]) -> None:
        vs = reply.get("violations") or []
        if vs:
            v = vs[0]
            line = v.get("line")
            where = f"line {line}: " if isinstance(line, int) else ""
            raise _RunAborted("forbidden", f"{where}{v.get('message', 'forbidden API')}")

    def _encode_extra(self, v: Any) -> Any:
        if isinstance(v, Remote):
            return {"__handle": v.handle}
        if isinstance(v, WorkerFunction):
            return {"__wfn": [v.file, v.name]}
        return None

    def _decode_extra(self, d: dict[str, Any]) -> Any:
        if "__handle" in d:
            return Opaque("object", f"handle {d['__handle']}")
        return None

    def _advance_generators(self, payload: dict[str, Any], reply: dict[str, Any],
                            buffers: list[bytes]) -> None:
        """Leave each ``torch.Generator`` the check passed in the state the submission left its
        copy in, so a call advances the caller's generator exactly as it would in-process."""
        import torch

        args, kwargs = payload.get("args", []), dict(payload.get("kwargs", {}))
        for key, encoded in reply.get("generators") or []:
            mine = args[key] if isinstance(key, int) and key < len(args) else kwargs.get(key)
            if not isinstance(mine, torch.Generator):
                continue
            try:
                theirs = codec.Decoder(buffers, device=self.backend).value(encoded)
                mine.set_state(theirs.get_state())
            except (codec.CodecError, RuntimeError, TypeError) as exc:
                raise _RunAborted("crashed", f"unreadable generator state from the worker: {exc}") \
                    from None

    def request(self, op: str, payload: dict[str, Any], *, timeout: float | None,
                describe: str) -> Any:
        if self.worker is None or not self.worker.alive:
            if self.killed_from_outside("crashed"):  # between two calls
                raise _RunAborted("killed", KILLED_MESSAGE)
            if self.restarts >= MAX_RESTARTS:
                raise _RunAborted("crashed", "the worker crashed too many times")
            self.restart()
        assert self.worker is not None
        device = self.backend
        enc = codec.Encoder(extra=self._encode_extra)
        header: dict[str, Any] = {"op": op}
        if op in ("call", "new", "get"):
            header["name"] = payload["name"]
            header["target"] = payload.get("target")
            header["args"] = [enc.value(a) for a in payload.get("args", [])]
            header["kwargs"] = enc.value(dict(payload.get("kwargs", {})))
            if payload.get("track_ops"):
                header["track_ops"] = True
        elif op == "has":
            header["name"] = payload["name"]
        deadline = self.deadline
        if timeout is not None:
            deadline = min(deadline, time.monotonic() + float(timeout))
        try:
            reply, buffers = self.worker.request(header, enc.buffers, deadline=deadline,
                                                 cancel=self.cancel, describe=describe)
        except WorkerFailure as exc:
            if self.killed_from_outside(exc.kind):
                raise _RunAborted("killed", KILLED_MESSAGE) from None
            kind = {"memory": "crashed", "protocol": "crashed"}.get(exc.kind, exc.kind)
            raise _RunAborted(kind, exc.message) from None
        self._violations(reply)
        if not reply.get("ok"):
            err = reply.get("error") or {}
            raise SubmissionError(str(err.get("type", "Exception")), str(err.get("message", "")),
                                  str(err.get("traceback", "")), call=describe.split("(")[0],
                                  mro=tuple(str(x) for x in err.get("mro") or ()))
        try:
            value = codec.Decoder(buffers, device=device, extra=self._decode_extra).value(
                reply.get("value"))
        except codec.CodecError as exc:
            raise _RunAborted("crashed", f"unreadable reply from the worker: {exc}") from None
        if isinstance(value, codec.Unsupported):
            value = Opaque(value.type_name, value.text)
        self._advance_generators(payload, reply, buffers)
        if op == "call" and self.ch.spec.requires_triton and payload.get("target") is None:
            stats = reply.get("stats") or {}
            if int(stats.get("triton_launches", 0)) == 0:
                raise _RunAborted("forbidden", f"{describe} returned without launching a Triton "
                                  "kernel; the challenge must be solved in a Triton kernel")
        mutated = reply.get("mutated") or []
        if mutated and not payload.get("allow_mutation"):
            raise CheckFailed(f"{describe.split('(')[0]} mutated its input {mutated[0]}; it must "
                              "leave its inputs unchanged")
        return value


# ---------------------------------------------------------------------------------------------
# Running the checks
# ---------------------------------------------------------------------------------------------


def _format_counterexample(exc: BaseException, ctx: Ctx, fn_name: str, seed: int) -> str | None:
    lines: list[str] = []
    for note in getattr(exc, "__notes__", []) or []:
        text = str(note)
        if text.startswith(("Falsifying example:", "Failing test case:", "Falsifying explicit example:",
                             "Failing explicit example:")):
            body = text.split(":", 1)[1].strip()
            rows = [r for r in body.splitlines() if r.strip() not in ("ctx=ctx,",)]
            if len(rows) >= 2 and rows[0].endswith("("):
                inner = [r.strip() for r in rows[1:-1]]
                lines.append(", ".join(x.rstrip(",") for x in inner) if inner else "(no inputs)")
            else:
                lines.append(body)
        elif text.startswith(("You can reproduce", "You can add @seed", "Explanation:")):
            continue
        else:
            lines.append(text)
    lines.extend(ctx.notes)
    if not lines:
        return None
    lines.append(f"replay: --seed {seed}")
    return "\n".join(lines)


def _describe_example(example: dict[str, Any]) -> str:
    parts = []
    for k, v in example.items():
        if isinstance(v, Ctx):
            continue
        text = repr(v)
        parts.append(f"{k}={text if len(text) <= 300 else text[:297] + '...'}")
    return ", ".join(parts)


def _run_one(fn: Callable[..., Any], info: CheckInfo, ctx: Ctx, hseed: int,
             remaining: float) -> CheckResult:
    from hypothesis import HealthCheck, Phase, Verbosity, settings
    from hypothesis.errors import Flaky, HypothesisException
    from hypothesis.internal.conjecture import engine as hengine
    from hypothesis.reporting import with_reporter

    ctx.notes = []
    example: dict[str, Any] = {}
    given = getattr(fn, "hypothesis", None)
    if given is not None:
        fn._hypothesis_internal_use_settings = settings(  # type: ignore[attr-defined]
            max_examples=info.max_examples or DEFAULT_MAX_EXAMPLES,
            deadline=None,
            database=None,
            derandomize=False,
            print_blob=False,
            report_multiple_bugs=False,
            verbosity=Verbosity.normal,
            phases=[Phase.explicit, Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck),
        )
        fn._hypothesis_internal_use_seed = hseed  # type: ignore[attr-defined]
        inner = given.inner_test
        if not getattr(inner, "_grader_tracking", False):
            def tracking(*args: Any, **kwargs: Any) -> Any:
                example.clear()
                example.update(kwargs)
                ctx.notes = []
                return inner(*args, **kwargs)

            tracking._grader_tracking = True  # type: ignore[attr-defined]
            given.inner_test = tracking
    saved_shrink = hengine.MAX_SHRINKING_SECONDS
    # Every check, not only @given ones: a check that runs its own Hypothesis test (a rule-based
    # state machine) would otherwise shrink for up to Hypothesis's 300 s and turn `failed` into `timeout`.
    hengine.MAX_SHRINKING_SECONDS = max(1.0, min(MAX_SHRINK_SECONDS, remaining / 4))
    result = CheckResult(info.name, "passed")
    try:
        with with_reporter(lambda _msg: None):
            reported = fn(ctx)
        if isinstance(reported, str):
            result = CheckResult(info.name, "passed", reported)  # e.g. measured throughput
    except _RunAborted as exc:
        exc.example = _describe_example(example) if example else ""  # type: ignore[attr-defined]
        raise
    except CheckFailed as exc:
        result = CheckResult(info.name, "failed", str(exc),
                             _format_counterexample(exc, ctx, fn.__name__, ctx.seed), info.hint)
    except SubmissionError as exc:
        if "NotImplementedError" in (exc.type_name, *exc.mro):
            # the starter (or a part still to write): no random input or hint explains that
            result = CheckResult(info.name, "error", f"not implemented yet: {exc.describe()}")
        else:
            result = CheckResult(info.name, "error", exc.describe(),
                                 _format_counterexample(exc, ctx, fn.__name__, ctx.seed), info.hint)
    except Flaky as exc:
        inner_excs = list(getattr(exc, "exceptions", []) or [])
        first = next((e for e in inner_excs if isinstance(e, (CheckFailed, SubmissionError))), None)
        msg = (str(first) if isinstance(first, CheckFailed)
               else first.describe() if isinstance(first, SubmissionError) else str(exc))
        result = CheckResult(
            info.name, "failed",
            msg + "\n(the same input gave a different outcome when repeated: the solution's "
            "answers depend on earlier calls; does it cache or keep state between calls?)",
            _format_counterexample(first or exc, ctx, fn.__name__, ctx.seed), info.hint)
    except HypothesisException as exc:  # the check's own strategies failed: not the solution's fault
        result = CheckResult(info.name, "error",
                             f"internal error in the check (please report it): "
                             f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # noqa: BLE001 - the check could not use what the solution returned
        result = CheckResult(
            info.name, "failed",
            f"the solution's result could not be checked: {type(exc).__name__}: {exc}",
            _format_counterexample(exc, ctx, fn.__name__, ctx.seed), info.hint)
    finally:
        hengine.MAX_SHRINKING_SECONDS = saved_shrink
    return result


def _make_seed() -> int:
    return secrets.randbelow(1_000_000)


def grade(
    challenge: LoadedChallenge | Path,
    submission: Path | str,
    *,
    device: str = "auto",
    seed: int | None = None,
    progress: ProgressFn | None = None,
    cancel: Any = None,
    fail_fast: bool = False,
    only: Collection[str] | None = None,
) -> GradeResult:
    """Grade ``submission`` against ``challenge`` (loaded, or its folder).

    ``fail_fast`` stops at the first check that fails or errs: the rest are ``skipped`` ("not run"),
    so the verdict is that check's (``failed`` or ``error``) and the run is quicker.

    ``only`` runs just the checks of those names (the rest are ``skipped``): for proving that a
    named check catches a known mistake. Such a run is never a verdict on the submission, so
    nothing records it; one whose checks all pass has verdict ``error``.

    ``progress(done, total, check_name)`` is called before each check; ``cancel`` is a callable
    returning ``True`` (or an object with ``is_set()``) to stop: the run then ends with verdict
    ``error``, message ``cancelled`` and ``cancelled=True``. Raises ``GradingUsageError`` for an
    unknown challenge, a missing file or an unavailable device.
    """
    t0 = time.monotonic()
    ch = as_challenge(challenge)
    path = Path(submission)
    if not path.is_file():
        raise GradingUsageError(f"no such file: {path}")
    backend = choose_backend(ch.spec, device)
    run_seed = _make_seed() if seed is None else int(seed)
    cancel_fn: Callable[[], bool] | None
    if cancel is None:
        cancel_fn = None
    elif hasattr(cancel, "is_set"):
        cancel_fn = cancel.is_set
    else:
        cancel_fn = cancel

    def finish(verdict: str, checks: list[CheckResult], runner: _Runner | None = None,
               cancelled: bool = False) -> GradeResult:
        out = err = ""
        if runner is not None:
            runner.close()
            out = "".join(runner.stdout_parts)
            err = "".join(runner.stderr_parts)
        return GradeResult(ch.id, verdict, backend, run_seed, time.monotonic() - t0, checks,
                           out, err, cancelled)

    raw = path.read_bytes()
    try:
        source = raw.decode("utf-8-sig")  # an editor's byte-order mark is fine, as for python itself
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        return finish("error", [CheckResult(
            LOAD_CHECK, "error", f"{path.name} is not UTF-8 text (byte 0x{raw[exc.start]:02x} on line "
            f"{line}): save it as UTF-8")])
    if "\x00" in source:
        line = source[:source.index("\x00")].count("\n") + 1
        return finish("error", [CheckResult(
            LOAD_CHECK, "error", f"{path.name} is not a text file (a NUL byte on line {line})")])
    filename = path.name if path.suffix == ".py" else path.name + ".py"

    runner = _Runner(ch, backend, source, filename, cancel_fn)
    runner.spawn()
    try:
        return _grade_with(runner, ch, source, filename, backend, run_seed, progress, cancel_fn,
                           finish, fail_fast, frozenset(only) if only is not None else None)
    except BaseException:
        runner.close()
        raise


def _grade_with(runner: _Runner, ch: LoadedChallenge, source: str, filename: str, backend: str,
                run_seed: int, progress: ProgressFn | None, cancel_fn: Callable[[], bool] | None,
                finish: Callable[..., GradeResult], fail_fast: bool = False,
                only: frozenset[str] | None = None) -> GradeResult:
    spec = ch.spec
    # 1. syntax, in the supervisor (compiling runs nothing)
    try:
        compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        text = (exc.text or "").rstrip("\n")
        caret = ""
        if text and exc.offset:
            caret = "\n    " + " " * (max(exc.offset, 1) - 1 - (len(text) - len(text.lstrip()))) + "^"
        msg = (f"syntax error at line {exc.lineno}: {exc.msg}" if exc.lineno
               else f"syntax error: {exc.msg}")
        if text:
            msg += f"\n    {text.strip()}{caret}"
        return finish("error", [CheckResult(LOAD_CHECK, "error", msg)], runner)
    except ValueError as exc:  # null bytes
        return finish("error", [CheckResult(LOAD_CHECK, "error", f"cannot compile: {exc}")], runner)

    # 2. static forbidden-API scan
    rules = [Rule(f.pattern, f.reason) for f in spec.forbidden]
    found = scan_source(source, rules, filename)
    if found:
        msg = "\n".join(v.describe() for v in found)
        return finish("forbidden", [CheckResult(FORBIDDEN_CHECK, "failed", msg,
                                                None, "Solve it without the forbidden APIs.")],
                      runner)

    # 3. the checks (while the worker imports torch)
    checks = load_checks(ch)
    total = len(checks)

    # 4. import the submission in the worker
    runner.deadline = float("inf")
    try:
        runner.worker.wait_ready(cancel_fn)  # type: ignore[union-attr]
        runner.deadline = time.monotonic() + float(spec.time_limit_s)
        reply = runner.load()
    except _RunAborted as exc:
        if exc.kind == "killed":
            raise WorkerKilled(exc.message) from None
        return finish(exc.kind, [CheckResult(
            LOAD_CHECK if exc.kind != "forbidden" else FORBIDDEN_CHECK,
            "failed" if exc.kind == "forbidden" else "error",
            exc.message if exc.kind != "timeout"
            else f"importing the solution did not finish within {spec.time_limit_s:g} s")],
            runner, cancelled=False)
    except WorkerFailure as exc:
        if exc.kind == "cancelled":
            return finish("error", [CheckResult(LOAD_CHECK, "error", "cancelled")], runner,
                          cancelled=True)
        if runner.killed_from_outside(exc.kind):
            raise WorkerKilled(KILLED_MESSAGE) from None
        kind = {"memory": "crashed", "protocol": "crashed"}.get(exc.kind, exc.kind)
        msg = exc.message
        if exc.kind == "timeout":
            msg = f"importing the solution did not finish within {spec.time_limit_s:g} s"
        return finish(kind, [CheckResult(LOAD_CHECK, "error", msg)], runner)
    if not reply.get("ok"):
        err = reply.get("error") or {}
        return finish("error", [CheckResult(LOAD_CHECK, "error", _load_error_message(err))], runner)
    info = reply.get("info") or {}
    problems = entry_point_problems(spec, info)
    if problems:
        return finish("error", [CheckResult(LOAD_CHECK, "error", "\n".join(problems))], runner)
    runner.load_info = info

    # 5. the checks
    sub = Submission(runner, frozenset(info.get("names", [])))
    ctx = Ctx(sub, backend, run_seed, spec, ch.folder)
    results: list[CheckResult] = []
    abort: _RunAborted | None = None
    for index, (cinfo, fn) in enumerate(checks):
        if progress is not None:
            progress(index, total, cinfo.name)
        if abort is not None and (abort.kind in ("timeout", "forbidden", "cancelled") or (
                abort.kind == "crashed" and runner.restarts >= MAX_RESTARTS)):
            results.append(CheckResult(cinfo.name, "skipped", f"not run: {_skip_reason(abort)}"))
            continue
        if cinfo.needs_cuda and backend != "cuda":
            results.append(CheckResult(cinfo.name, "skipped", "needs a CUDA GPU"))
            continue
        if fail_fast and any(r.status in ("failed", "error") for r in results):
            results.append(CheckResult(cinfo.name, "skipped", FAIL_FAST_SKIP))
            continue
        if only is not None and cinfo.name not in only:
            results.append(CheckResult(cinfo.name, "skipped", ONLY_SKIP))
            continue
        hseed = (run_seed * 1009 + index) % (2**32)
        try:
            res = _run_one(fn, cinfo, ctx, hseed, runner.deadline - time.monotonic())
        except _RunAborted as exc:
            if exc.kind == "killed":
                raise WorkerKilled(exc.message) from None
            example = getattr(exc, "example", "")
            counter = None
            if example or ctx.notes:
                counter = "\n".join(([f"input: {example}"] if example else []) + ctx.notes
                                    + [f"replay: --seed {run_seed}"])
            status = "failed" if exc.kind == "forbidden" else "error"
            message = exc.message
            if exc.kind == "timeout":
                message = (f"the run reached its {spec.time_limit_s:g} s time limit: "
                           f"{exc.message}")
            elif exc.kind == "forbidden":
                message = f"forbidden: {exc.message}"
            results.append(CheckResult(cinfo.name, status, message, counter,
                                       cinfo.hint if exc.kind != "cancelled" else None))
            if abort is None or VERDICT_ORDER.index(exc.kind if exc.kind in VERDICT_ORDER
                                                    else "error") < VERDICT_ORDER.index(
                    abort.kind if abort.kind in VERDICT_ORDER else "error"):
                abort = exc
            if exc.kind == "crashed" and runner.restarts < MAX_RESTARTS:
                runner.close()
            continue
        results.append(res)
    if progress is not None:
        progress(total, total, "")

    if abort is not None and abort.kind == "cancelled":
        return finish("error", results, runner, cancelled=True)
    _root_cause_hint(results)
    statuses = {r.status for r in results}
    if abort is not None:
        verdict = abort.kind
    elif "error" in statuses:
        verdict = "error"
    elif "failed" in statuses:
        verdict = "failed"
    else:
        verdict = "passed"
    if not results:
        verdict = "error"
        results.append(CheckResult(LOAD_CHECK, "error", "the challenge defines no checks"))
    if only is not None and verdict == "passed":
        verdict = "error"  # the checks not run may fail: a partial run never passes
    return finish(verdict, results, runner)


ONLY_SKIP = "not run: only the named checks were run"
"""Why a check did not run, with ``only``."""
FAIL_FAST_SKIP = "not run: --fail-fast stopped at the first failing check"
"""Why a check after the first failure did not run, with ``fail_fast``."""
KNOCK_ON = "(this may follow from the first failing check above: fix that one first)"


def _root_cause_hint(results: list[CheckResult]) -> None:
    """Checks run from basic to advanced, so the first one that fails is the likeliest root cause:
    only it keeps its hint; a later failure's hint (about a different mistake) would mislead, and
    its message says it may be a knock-on."""
    first = next((i for i, r in enumerate(results) if r.status in (CheckStatus.FAILED,
                                                                     CheckStatus.ERROR)), None)
    if first is None:
        return
    for r in results[first + 1:]:
        if r.status in (CheckStatus.FAILED, CheckStatus.ERROR):
            r.hint = None
            r.message = f"{r.message}\n{KNOCK_ON}" if r.message else KNOCK_ON


def _skip_reason(abort: _RunAborted) -> str:
    return {"timeout": "the time limit was reached", "forbidden": "a forbidden API was used",
            "crashed": "the worker crashed again after a restart",
            "cancelled": "cancelled"}.get(abort.kind, abort.kind)


def _load_error_message(err: dict[str, Any]) -> str:
    etype = str(err.get("type", "Exception"))
    msg = str(err.get("message", ""))
    line = err.get("line")
    where = f" (line {line})" if isinstance(line, int) else ""
    tb = str(err.get("traceback", "") or "")
    if etype in ("ModuleNotFoundError", "ImportError"):
        text = f"the solution imports a module that is not available{where}: {msg}"
    elif etype == "SystemExit":
        text = f"the solution called sys.exit while being imported{where}: {msg}"
    elif etype == "SyntaxError":
        text = f"syntax error{where}: {msg}"
    else:
        text = f"importing the solution raised {etype}{where}: {msg}"
    if tb:
        text += "\n" + tb
    return text


"""The checks API that challenge authors write ``checks.py`` against.

A check runs in the trusted supervisor: it draws inputs (usually with Hypothesis), calls the
submission through :class:`Submission` (``ctx.sub``), computes the expected answer with
``inferview.reference`` and compares with the ``expect_*`` helpers. The submission itself lives in
an untrusted worker process; see ``docs/authoring-challenges.md`` for the whole contract.

The design follows the gpu-mode reference-kernels evaluation harness (checks compare outputs in a
process the submission cannot touch, with a verbose allclose) and Hypothesis's own conventions for
readable, shrinkable property tests.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch
from inferview.graders import tolerances

from inferview.grading import CheckResult  # noqa: F401 - re-exported for checks and tests

__all__ = [
    "CheckFailed",
    "CheckInfo",
    "Ctx",
    "Opaque",
    "Remote",
    "Submission",
    "SubmissionError",
    "WorkerFunction",
    "check",
    "expect",
    "expect_attention_close",
    "expect_close",
    "expect_equal",
    "expect_raises",
    "expect_shape",
]


class CheckFailed(AssertionError):
    """The submission gave a wrong answer; ``str(exc)`` is shown to the user."""


class SubmissionError(Exception):
    """The submission raised an exception inside the worker.

    ``type_name`` is the exception's class name (``"ValueError"``), ``message`` its text and
    ``traceback`` the traceback trimmed to the submission's own frames.
    """

    def __init__(self, type_name: str, message: str, traceback: str = "", call: str = "",
                 mro: tuple[str, ...] = ()) -> None:
        self.type_name = type_name
        self.mro = mro
        self.message = message
        self.traceback = traceback
        self.call = call
        super().__init__(f"{type_name}: {message}" if message else type_name)

    def describe(self) -> str:
        """The exception, where it was raised and the trimmed traceback, as shown to the user."""
        head = f"{self.call} raised {self.type_name}" if self.call else f"raised {self.type_name}"
        text = f"{head}: {self.message}" if self.message else head
        if self.traceback:
            text += "\n" + self.traceback.rstrip()
        return text


@dataclass(frozen=True)
class CheckInfo:
    """What ``@check`` records about a check function."""

    name: str
    hint: str | None
    needs_cuda: bool
    max_examples: int | None
    order: int


_ORDER = itertools.count()


def check(
    name: str,
    *,
    hint: str | None = None,
    needs_cuda: bool = False,
    max_examples: int | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a check: ``name`` is what the user sees, ``hint`` is shown when it fails.

    Place it above ``@given``. Checks run in the order they are defined in ``checks.py``.
    """
    if not name or not name.strip():
        raise ValueError("a check needs a non-empty name")

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn._inferview_check = CheckInfo(  # type: ignore[attr-defined]
            name=name,
            hint=hint,
            needs_cuda=needs_cuda,
            max_examples=max_examples,
            order=next(_ORDER),
        )
        return fn

    return decorate


@dataclass(frozen=True)
class WorkerFunction:
    """A function from the challenge's ``worker_helpers.py``, passed *into* the submission.

    The worker imports that file (torch only) and hands the submission the real function; in the
    supervisor this is only a reference ``(file, name)``.
    """

    file: str
    name: str

    def __repr__(self) -> str:
        return f"{self.name}"


@dataclass(frozen=True)
class Opaque:
    """A value the submission returned that cannot cross the process boundary (e.g. a list
    subclass or a numpy array): only its type name and a short ``repr`` arrive."""

    type_name: str
    text: str

    def __repr__(self) -> str:
        return f"<{self.type_name}: {self.text}>"


class _Channel(Protocol):
    """What :class:`Submission` needs from the engine (implemented by the supervisor)."""

    def request(self, op: str, payload: dict[str, Any], *, timeout: float | None,
                describe: str) -> Any: ...


class Remote:
    """An object that lives in the worker (made by ``ctx.sub.new``), addressed by a handle."""

    def __init__(self, sub: Submission, handle: int, class_name: str) -> None:
        self._sub = sub
        self.handle = handle
        self.class_name = class_name

    def call(self, method: str, *args: Any, allow_mutation: bool = False,
             timeout: float | None = None, **kwargs: Any) -> Any:
        """Call ``method`` on the object in the worker and return the decoded result."""
        return self._sub._invoke("call", method, args, kwargs, target=self.handle,
                                 allow_mutation=allow_mutation, timeout=timeout,
                                 label=f"{self.class_name}.{method}")

    def get(self, attr: str, *, timeout: float | None = None) -> Any:
        """Read an attribute (or property) of the object in the worker."""
        return self._sub._invoke("get", attr, (), {}, target=self.handle, timeout=timeout,
                                 label=f"{self.class_name}.{attr}")

    def __repr__(self) -> str:
        return f"<{self.class_name} in the worker>"


class Submission:
    """Proxy for the submitted module (``ctx.sub``)."""

    def __init__(self, channel: _Channel, names: frozenset[str] = frozenset()) -> None:
        self._channel = channel
        self._names = names

    def has(self, name: str) -> bool:
        """Whether the submission defines ``name`` at module level."""
        return name in self._names

    def call(self, name: str, *args: Any, allow_mutation: bool = False,
             timeout: float | None = None, track_ops: bool = False, **kwargs: Any) -> Any:
        """Call a module-level function of the submission and return its decoded result.
        ``track_ops``: count its torch ops and their largest result (``last_call_stats``) even
        when the challenge forbids nothing (the tracking slows the call down)."""
        return self._invoke("call", name, args, kwargs, target=None,
                            allow_mutation=allow_mutation, timeout=timeout, label=name,
                            track_ops=track_ops)

    def new(self, class_name: str, *args: Any, timeout: float | None = None,
            **kwargs: Any) -> Remote:
        """Construct ``class_name(*args, **kwargs)`` in the worker; returns a :class:`Remote`."""
        handle = self._invoke("new", class_name, args, kwargs, target=None, timeout=timeout,
                              label=class_name)
        return Remote(self, int(handle), class_name)

    def last_call_stats(self) -> dict[str, Any]:
        """``{"triton_launches": int, "torch_ops": {op: count}, "max_numel": int}`` for the last
        call; ``max_numel`` is the element count of the largest tensor any torch op produced during
        it (tracked when the challenge forbids an API or requires Triton, or the call asked for
        it with ``track_ops=True``). After a method call on a
        :class:`Remote`, ``aliases`` lists the result's tensors (``"result[0]"``...) that share
        storage with a tensor the object keeps: views into its state."""
        return self._channel.request("stats", {}, timeout=None, describe="stats")

    def _invoke(self, op: str, name: str, args: tuple, kwargs: dict, *, target: int | None,
                timeout: float | None, label: str, allow_mutation: bool = False,
                track_ops: bool = False) -> Any:
        payload = {"name": name, "target": target, "args": list(args), "kwargs": dict(kwargs),
                   "allow_mutation": allow_mutation, "track_ops": track_ops}
        return self._channel.request(op, payload, timeout=timeout,
                                     describe=_describe_call(label, args, kwargs))


def _short(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        dt = str(value.dtype).replace("torch.", "")
        extra = "" if value.is_contiguous() else f", stride={tuple(value.stride())}"
        return f"Tensor(shape={tuple(value.shape)}, dtype={dt}{extra})"
    if isinstance(value, torch.Generator):
        return "Generator"
    if isinstance(value, (list, tuple)) and len(value) > 6:
        return f"{type(value).__name__} of {len(value)}"
    if isinstance(value, (list, tuple, dict)):
        # item by item: repr() of a short list of tensors would print every element
        items = value.items() if isinstance(value, dict) else enumerate(value)
        inner = ", ".join((f"{k!r}: " if isinstance(value, dict) else "") + _short(v) for k, v in items)
        if isinstance(value, tuple) and len(value) == 1:
            inner += ","
        text = ("{%s}" if isinstance(value, dict) else "[%s]" if isinstance(value, list) else "(%s)") % inner
        return text if len(text) <= 200 else text[:197] + "..."
    if isinstance(value, Remote):
        return repr(value)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _describe_call(label: str, args: tuple, kwargs: dict) -> str:
    parts = [_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()]
    return f"{label}({', '.join(parts)})"


class Ctx:
    """Everything a check gets as its first argument."""

    def __init__(self, sub: Submission, device: str, seed: int, spec: Any, folder: Path) -> None:
        self.sub = sub
        self.device = device
        self.seed = seed
        self.spec = spec
        self.folder = folder
        self.dtype_default = torch.float32
        self.notes: list[str] = []
        self._gen_count = itertools.count()

    def generator(self, seed: int | None = None) -> torch.Generator:
        """A ``torch.Generator`` on ``ctx.device``, seeded from the run's seed (or ``seed``)."""
        g = torch.Generator(device=self.device)
        if seed is None:
            seed = (self.seed * 1_000_003 + next(self._gen_count)) % (2**63)
        g.manual_seed(int(seed))
        return g

    def note(self, text: str) -> None:
        """Add a line to the counterexample shown to the user when the check fails."""
        try:
            from hypothesis import note as hnote
            from hypothesis.control import _current_build_context

            if _current_build_context.value is not None:
                hnote(text)
                return
        except ImportError:  # pragma: no cover - hypothesis is a dependency
            pass
        self.notes.append(str(text))

    def __repr__(self) -> str:
        return "ctx"


# ---------------------------------------------------------------------------------------------
# Assertions
# ---------------------------------------------------------------------------------------------


def expect(cond: Any, message: str) -> None:
    """Fail the check with ``message`` unless ``cond`` is true."""
    if not cond:
        raise CheckFailed(message)


def _fmt(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        if value.numel() <= 8:
            return f"{_short(value)} {value.detach().cpu().tolist()}"
        return _short(value)
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _equal(got: Any, want: Any) -> bool:
    if isinstance(want, torch.Tensor) or isinstance(got, torch.Tensor):
        if not (isinstance(got, torch.Tensor) and isinstance(want, torch.Tensor)):
            return False
        return (got.shape == want.shape and got.dtype == want.dtype
                and bool(torch.equal(got.cpu(), want.cpu())))
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(want):
            return False
        return all(_equal(g, w) for g, w in zip(got, want, strict=False))
    if isinstance(want, float) and isinstance(got, (int, float)) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    if isinstance(want, bool) != isinstance(got, bool) and not isinstance(want, torch.Tensor):
        return False
    return bool(got == want)


def expect_equal(got: Any, want: Any, *, what: str = "the result") -> None:
    """Exact equality (tensors: same shape, dtype and values; bools are not ints)."""
    if isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor):
        _expect_meta(got, want, what)
        if not torch.equal(got.cpu(), want.cpu()):
            raise CheckFailed(_mismatch_report(got, want, what, exact=True))
        return
    if not _equal(got, want):
        raise CheckFailed(f"{what}: expected {_fmt(want)}, got {_fmt(got)}")


def expect_shape(t: Any, shape: tuple[int, ...] | torch.Size, what: str = "the result") -> None:
    """``t`` is a tensor of exactly ``shape``."""
    if not isinstance(t, torch.Tensor):
        raise CheckFailed(f"{what}: expected a tensor of shape {tuple(shape)}, got {_fmt(t)}")
    if tuple(t.shape) != tuple(shape):
        raise CheckFailed(f"{what}: expected shape {tuple(shape)}, got {tuple(t.shape)}")


def _expect_meta(got: Any, want: torch.Tensor, what: str) -> None:
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"{what}: expected a tensor {_short(want)}, got {_fmt(got)}")
    if tuple(got.shape) != tuple(want.shape):
        raise CheckFailed(f"{what}: expected shape {tuple(want.shape)}, got {tuple(got.shape)}")
    if got.dtype != want.dtype:
        raise CheckFailed(f"{what}: expected dtype {want.dtype}, got {got.dtype}")
    if got.device.type != want.device.type:
        raise CheckFailed(f"{what}: expected device {want.device.type}, got {got.device.type}")


def _mismatch_report(got: torch.Tensor, want: torch.Tensor, what: str, *, exact: bool,
                     rtol: float = 0.0, atol: float = 0.0, bad: torch.Tensor | None = None) -> str:
    g = got.detach().cpu()
    w = want.detach().cpu()
    if bad is None:
        bad = ~((g == w) | (torch.isnan(g) & torch.isnan(w))) if g.is_floating_point() else g != w
    idx = bad.nonzero()
    n_bad = int(idx.shape[0])
    total = g.numel()
    tol = "" if exact else f" (rtol={rtol:g}, atol={atol:g})"
    lines = [f"{what}: {n_bad} of {total} elements differ{tol}"]
    if g.is_floating_point() and not exact:
        nan_got = int(torch.isnan(g).sum())
        inf_got = int(torch.isinf(g).sum())
        if nan_got or inf_got:
            lines.append(f"  the result holds {nan_got} NaN and {inf_got} Inf values")
        finite = torch.isfinite(g) & torch.isfinite(w)
        if bool(finite.any()):
            err = (g.double() - w.double()).abs()[finite]
            lines.append(f"  max abs error {float(err.max()):.3g}")
    for row in idx[:5].tolist():
        pos = tuple(row)
        lines.append(f"  at {pos}: expected {w[pos].item()!r}, got {g[pos].item()!r}")
    if n_bad > 5:
        lines.append(f"  ... and {n_bad - 5} more")
    return "\n".join(lines)


def expect_close(got: Any, want: Any, *, what: str = "the result", rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False) -> None:
    """Close within tolerances (default: the per-dtype table in ``tolerances``).

    Compares shape, dtype and device first; a failure reports how many elements differ and the
    first few indices with both values. Also accepts numbers and (nested) tuples/lists.
    """
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(want):
            raise CheckFailed(f"{what}: expected a sequence of {len(want)} values, got {_fmt(got)}")
        for i, (g, w) in enumerate(zip(got, want, strict=False)):
            expect_close(g, w, what=f"{what}[{i}]", rtol=rtol, atol=atol, equal_nan=equal_nan)
        return
    if not isinstance(want, torch.Tensor):
        if isinstance(got, torch.Tensor) or not isinstance(got, (int, float)) or isinstance(got, bool):
            raise CheckFailed(f"{what}: expected the number {want!r}, got {_fmt(got)}")
        r = 1.3e-6 if rtol is None else rtol
        a = 1e-5 if atol is None else atol
        if math.isnan(want) and equal_nan and math.isnan(got):
            return
        if not abs(got - want) <= a + r * abs(want):
            raise CheckFailed(f"{what}: expected {want!r}, got {got!r} (rtol={r:g}, atol={a:g})")
        return
    _expect_meta(got, want, what)
    d_rtol, d_atol = tolerances.for_dtype(want.dtype)
    r = d_rtol if rtol is None else rtol
    a = d_atol if atol is None else atol
    g = got.detach().cpu()
    w = want.detach().cpu()
    if not g.is_floating_point() and not g.is_complex():
        if not torch.equal(g, w):
            raise CheckFailed(_mismatch_report(g, w, what, exact=True))
        return
    gd, wd = g.double(), w.double()
    close = (gd - wd).abs() <= a + r * wd.abs()
    same_inf = torch.isinf(gd) & torch.isinf(wd) & (gd == wd)
    close = close | same_inf
    if equal_nan:
        close = close | (torch.isnan(gd) & torch.isnan(wd))
    if not bool(close.all()):
        raise CheckFailed(_mismatch_report(g, w, what, exact=False, rtol=r, atol=a, bad=~close))


def expect_attention_close(got: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
                           causal: bool = False, sm_scale: float | None = None,
                           what: str = "the attention output") -> None:
    """The attention accuracy rule, for any output of ``softmax(q k^T * sm_scale) v``.

    ``q`` is ``(B, Hq, Tq, D)``, ``k`` and ``v`` are ``(B, Hkv, Tk, D)`` (query head ``h`` reads
    kv head ``h // (Hq // Hkv)``); ``causal`` is bottom-right aligned and ``sm_scale=None`` means
    ``1/sqrt(D)``, as in ``inferview.reference.attention``. ``got`` must have ``q``'s shape, dtype
    and device, and each element's error against a float64 reference must be within
    :data:`~inferview.graders.tolerances.ATTENTION_FACTOR` (2) times the error of a PyTorch
    baseline computed in ``q``'s dtype (its largest error, also against float64), plus the rule's
    one slack, :func:`inferview.graders.tolerances.attention_slack`: the output dtype's rounding
    allowance, plus what rounding the scores that element's query row can see to float32 costs.
    This is the rule of the flash-attention test suite; see ``docs/authoring-challenges.md``.
    """
    from inferview.reference.attention import attention

    exact = attention(q, k, v, causal=causal, sm_scale=sm_scale, compute_dtype=torch.float64)
    _expect_meta(got, exact.to(q.dtype), what)
    baseline = attention(q, k, v, causal=causal, sm_scale=sm_scale)  # in q's precision
    bound, err_base, slack = _attention_bound(q, k, v, exact, baseline, causal, sm_scale)
    g, w = got.detach().cpu().double(), exact.detach().cpu()
    diff = (g - w).abs()
    bad = ~(diff <= bound)  # NaN is bad
    if not bool(bad.any()):
        return
    bound = bound.expand_as(diff)
    idx = bad.nonzero()
    lines = [f"{what}: {idx.shape[0]} of {g.numel()} elements are further from the float64 "
             "result than the attention rule allows"]
    n_nan, n_inf = int(torch.isnan(g).sum()), int(torch.isinf(g).sum())
    if n_nan or n_inf:
        lines.append(f"  the result holds {n_nan} NaN and {n_inf} Inf values")
    for row in idx[:5].tolist():
        pos = tuple(row)
        lines.append(f"  at {pos}: expected {w[pos].item():.6g}, got {g[pos].item():.6g} "
                     f"(error {diff[pos].item():.3g}, allowed {bound[pos].item():.3g})")
    if idx.shape[0] > 5:
        lines.append(f"  ... and {idx.shape[0] - 5} more")
    lines.append(f"  max error {tolerances.max_abs_error(got, exact):.3g} against float64; a PyTorch "
                 f"baseline in {str(q.dtype).replace('torch.', '')} has {err_base:.3g}; allowed: "
                 f"{tolerances.ATTENTION_FACTOR:g} x that + a slack of {float(slack.min()):.3g} "
                 f"to {float(slack.max()):.3g} per query row")
    raise CheckFailed("\n".join(lines))


def _attention_bound(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, exact: torch.Tensor,
                     baseline: torch.Tensor, causal: bool, sm_scale: float | None
                     ) -> tuple[torch.Tensor, float, torch.Tensor]:
    """``(bound, err_base, slack)``: the largest error each output element may have.

    ``slack`` is ``(B, Hq, Tq, 1)``, one per query row (its visible scores), and ``bound`` is
    ``ATTENTION_FACTOR * err_base + slack``, broadcastable to the output.
    """
    from inferview.reference.attention import causal_mask, repeat_kv

    err_base = tolerances.max_abs_error(baseline, exact)
    scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale
    qd, kd = q.detach().cpu().double(), k.detach().cpu().double()
    scores = (qd @ repeat_kv(kd, q.shape[1] // k.shape[1]).transpose(-1, -2) * scale).abs()
    if causal:
        scores = scores.masked_fill(~causal_mask(q.shape[-2], k.shape[-2]), 0.0)
    row_max = scores.amax(dim=-1, keepdim=True) if scores.shape[-1] else scores.sum(-1, keepdim=True)
    max_value = float(v.detach().abs().max()) if v.numel() else 0.0
    slack = tolerances.attention_slack(exact, q.dtype, max_score=row_max, max_value=max_value)
    return tolerances.ATTENTION_FACTOR * err_base + slack, err_base, slack


@contextlib.contextmanager
def expect_raises(ctx: Ctx, type_name: str, what: str = "") -> Iterator[None]:
    """The block must make the submission raise ``type_name`` (or a subclass named in its MRO).

    ``with expect_raises(ctx, "ValueError"): cache.call("update", k, v)``.
    """
    try:
        yield
    except SubmissionError as exc:
        if exc.type_name == type_name or type_name in exc.mro:
            return
        raise CheckFailed(
            f"{what or exc.call or 'the call'}: expected {type_name}, but it raised "
            f"{exc.type_name}: {exc.message}"
        ) from None
    raise CheckFailed(f"{what or 'the call'}: expected {type_name} to be raised, but it returned normally")



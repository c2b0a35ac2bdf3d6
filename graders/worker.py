"""The untrusted side of grading: a worker process that imports a submission and runs calls.

Started by the supervisor as ``python -I graders/worker.py FD_IN FD_OUT`` in a temporary folder,
its own session, a clean environment and with stdout/stderr going to capped files. It talks to the
supervisor over two dedicated pipes in the frame format of ``codec.py`` (loaded by path; this
process never imports ``inferview``). It never decides whether a result is right: it only returns
values, exceptions, input mutations and the use of forbidden APIs, and the supervisor judges.

Guards while the submission's code runs (the same approach as the sandboxes of online judges that
run Python in-process, e.g. Kattis and gpu-mode's kernelbot, which add an outer process boundary):

- a meta-path finder that refuses ``inferview`` and the grader/reference/challenge packages;
- an audit hook (PEP 578, ``sys.addaudithook``) that refuses to open files under the package and
  challenge folders;
- wrappers around the challenge's forbidden torch functions and ``Tensor`` operators, and a
  ``TorchDispatchMode`` that sees every ATen op (forbidden op families; for Triton challenges an
  allow-list of allocation, view, copy and scalar ops);
- a counter of Triton kernel launches (``JITFunction.run`` / ``InterpretedFunction.run``).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import inspect
import os
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any


def _load_codec() -> types.ModuleType:
    path = Path(__file__).resolve().with_name("codec.py")
    spec = importlib.util.spec_from_file_location("_grader_wire", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ATen op families behind forbidden Python names (for the dispatch-level guard)
_OP_FAMILIES: dict[str, set[str]] = {
    "matmul": {"mm", "bmm", "matmul", "addmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot",
               "_addmm_activation", "linear", "einsum", "tensordot", "inner", "outer", "ger"},
    "softmax": {"_softmax", "softmax", "_safe_softmax", "_log_softmax", "log_softmax"},
    "attention": {"_scaled_dot_product_attention_math", "scaled_dot_product_attention",
                  "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                  "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu",
                  "_fused_sdp_choice", "_scaled_dot_product_fused_attention_overrideable"},
}
_NAME_TO_FAMILY: dict[str, str] = {
    "matmul": "matmul", "mm": "matmul", "bmm": "matmul", "einsum": "matmul", "@": "matmul",
    "addmm": "matmul", "baddbmm": "matmul", "tensordot": "matmul", "linear": "matmul",
    "inner": "matmul", "outer": "matmul", "dot": "matmul", "mv": "matmul",
    "softmax": "softmax", "log_softmax": "softmax",
    "scaled_dot_product_attention": "attention", "multi_head_attention_forward": "attention",
}

# Ops a Triton challenge may run in torch during the call: allocation, views, copies, casts.
_TRITON_ALLOWED = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full", "fill_",
    "zero_", "copy_", "_to_copy", "to", "clone", "contiguous", "view", "_unsafe_view", "reshape",
    "_reshape_alias", "as_strided", "transpose", "t", "permute", "expand", "unsqueeze", "squeeze",
    "slice", "select", "narrow", "split", "split_with_sizes", "chunk", "unbind", "detach", "alias",
    "lift_fresh", "lift_fresh_copy", "_local_scalar_dense", "view_as", "expand_as", "flatten",
    "unflatten", "movedim", "cat", "stack", "arange", "resize_", "set_", "is_nonzero",
    "_has_compatible_shallow_copy_type", "empty_permuted", "record_stream", "is_same_size",
    "view_as_real", "view_as_complex", "_conj", "resolve_conj", "resolve_neg",
}
# Elementwise ops allowed when one operand is a Python number or a 0-dim tensor (e.g. q * scale).
_TRITON_SCALAR_OK = {"mul", "div", "add", "sub", "rsub", "neg", "mul_", "div_", "add_", "sub_"}


_OWN_FILES = {os.path.realpath(__file__),
              os.path.realpath(os.path.join(os.path.dirname(__file__), "codec.py"))}


class _State:
    active = False  # submission code is running
    internal = 0  # inside a Triton launch (the interpreter's own torch use is not the submission's)
    violations: list[dict[str, Any]] = []
    triton_launches = 0
    torch_ops: dict[str, int] = {}
    max_numel = 0  # elements of the largest tensor an op produced during the last call
    sub_file = ""
    forbidden_roots: list[str] = []
    blocked_modules: set[str] = set()
    forbidden_ops: dict[str, tuple[str, str]] = {}  # aten op -> (pattern, reason)
    requires_triton = False
    in_call = False  # a call (not the import): the Triton allow-list applies


def _sub_line() -> int | None:
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename == _State.sub_file:
            return f.f_lineno
        f = f.f_back
    return None


def _violate(rule: str, message: str) -> None:
    line = _sub_line()
    key = (rule, line)
    for v in _State.violations:
        if (v["rule"], v["line"]) == key:
            return
    _State.violations.append({"rule": rule, "message": message, "line": line})


class _BlockImports(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        top = fullname.split(".")[0]
        if top in _State.blocked_modules:
            _violate(f"import {top}", f"imports {fullname}: the grader, the reference "
                     "implementations and the challenge files are off limits")
            raise ImportError(f"importing {fullname!r} is not allowed while grading")
        return None


def _audit(event: str, args: tuple) -> None:
    if event not in ("open", "os.listdir", "os.scandir") or not _State.forbidden_roots:
        return
    if not _State.active:
        return
    target = args[0] if args else None
    if isinstance(target, int) or target is None:
        return
    try:
        path = os.path.realpath(os.fsdecode(target))
    except Exception:  # noqa: BLE001 - odd path objects are not ours to judge
        return
    if path in _OWN_FILES:
        return
    for root in _State.forbidden_roots:
        if path == root or path.startswith(root + os.sep):
            _violate("read package files", f"reads {path!r}: the expected outputs, reference "
                     "implementations and grader files are off limits")
            raise PermissionError(f"reading {path!r} is not allowed while grading")


def _wrap(owner: Any, attr: str, label: str, reason: str) -> None:
    try:
        orig = getattr(owner, attr)
    except AttributeError:
        return
    if getattr(orig, "_grader_guarded", False):
        return

    def guarded(*args: Any, **kwargs: Any) -> Any:
        if _State.active and not _State.internal:
            _violate(label, f"uses {label}" + (f": {reason}" if reason else ""))
        return orig(*args, **kwargs)

    guarded._grader_guarded = True  # type: ignore[attr-defined]
    try:
        guarded.__name__ = getattr(orig, "__name__", attr)
        guarded.__doc__ = getattr(orig, "__doc__", None)
    except (AttributeError, TypeError):
        pass
    try:
        setattr(owner, attr, guarded)
    except (AttributeError, TypeError):
        pass


def _install_forbidden(torch: Any, forbidden: list[dict[str, Any]]) -> None:
    namespaces = [torch, torch.nn.functional, torch.Tensor, torch.special, torch.linalg]
    for rule in forbidden:
        if not rule.get("runtime", True):
            continue
        pattern = str(rule["pattern"])
        reason = str(rule.get("reason", ""))
        last = pattern.rsplit(".", 1)[-1]
        family = _NAME_TO_FAMILY.get(last)
        if family:
            for op in _OP_FAMILIES[family]:
                _State.forbidden_ops.setdefault(op, (pattern, reason))
        if pattern == "@":
            for attr in ("__matmul__", "__rmatmul__", "__imatmul__"):
                _wrap(torch.Tensor, attr, "the @ operator", reason)
            continue
        if "." in pattern:
            parts = pattern.split(".")
            if parts[0] != "torch":
                continue
            owner: Any = torch
            for p in parts[1:-1]:
                owner = getattr(owner, p, None)
                if owner is None:
                    break
            if owner is not None:
                _wrap(owner, parts[-1], pattern, reason)
            if hasattr(torch.Tensor, last):
                _wrap(torch.Tensor, last, f"Tensor.{last}", reason)
            continue
        for ns in namespaces:
            if hasattr(ns, pattern):
                label = "Tensor." + pattern if ns is torch.Tensor else f"{ns.__name__}.{pattern}"
                _wrap(ns, pattern, label, reason)


def _install_triton_counter() -> None:
    def counting(cls: Any) -> None:
        orig = cls.run
        if getattr(orig, "_grader_guarded", False):
            return

        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not kwargs.get("warmup", False):
                _State.triton_launches += 1
            _State.internal += 1
            try:
                return orig(self, *args, **kwargs)
            finally:
                _State.internal -= 1

        run._grader_guarded = True  # type: ignore[attr-defined]
        cls.run = run

    try:
        from triton.runtime.jit import JITFunction

        counting(JITFunction)
    except Exception:  # noqa: BLE001 - no Triton: nothing to count
        pass
    try:
        from triton.runtime.interpreter import InterpretedFunction

        counting(InterpretedFunction)
    except Exception:  # noqa: BLE001
        pass


def _make_dispatch_mode(torch: Any) -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    def scalar_like(x: Any) -> bool:
        return not isinstance(x, torch.Tensor) or x.dim() == 0

    class Guard(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if _State.active and not _State.internal:
                name = func.overloadpacket.__name__
                _State.torch_ops[name] = _State.torch_ops.get(name, 0) + 1
                hit = _State.forbidden_ops.get(name)
                if hit is not None:
                    _violate(hit[0], f"uses {hit[0]} (as aten.{name})"
                             + (f": {hit[1]}" if hit[1] else ""))
                elif (_State.requires_triton and _State.in_call
                      and name not in _TRITON_ALLOWED):
                    ok = name in _TRITON_SCALAR_OK and (
                        len(args) < 2 or scalar_like(args[0]) or scalar_like(args[1]))
                    if not ok:
                        _violate("compute outside Triton",
                                 f"computes with torch (aten.{name}) during the call; the "
                                 "attention must be computed inside a Triton kernel")
            out = func(*args, **kwargs)
            if _State.active and not _State.internal:
                for t in out if isinstance(out, (tuple, list)) else (out,):
                    if isinstance(t, torch.Tensor) and t.numel() > _State.max_numel:
                        _State.max_numel = t.numel()
            return out

    return Guard


def _global_names(code: types.CodeType) -> set[str]:
    """Global names a code object (and the functions nested in it) may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _opaque_function(source: str, name: str) -> Any:
    """A grader-supplied function (e.g. a speculative ``step``) handed to the submission without
    what would give its identity away: it is named ``step``, its source is not on disk, and its
    module holds only the globals it needs, so a submission cannot find a sibling (the correct
    step) or read the function's name to tell which wrong step it was given."""
    mod = types.ModuleType("_grader_helper")
    mod.__file__ = "<grader>"
    exec(compile(source, "<grader>", "exec"), mod.__dict__)  # noqa: S102 - trusted file
    fn = mod.__dict__[name]
    keep: set[str] = {"__builtins__"}
    todo = [fn.__code__]
    while todo:
        for ref in _global_names(todo.pop()):
            if ref in mod.__dict__ and ref not in keep:
                keep.add(ref)
                obj = mod.__dict__[ref]
                if isinstance(obj, types.FunctionType):
                    todo.append(obj.__code__)
    for ref in [k for k in mod.__dict__ if k not in keep]:
        del mod.__dict__[ref]
    renamed = {"co_name": "step", "co_filename": "<grader>"}
    if sys.version_info >= (3, 11):
        renamed["co_qualname"] = "step"
    fn.__code__ = fn.__code__.replace(**renamed)
    fn.__name__ = fn.__qualname__ = "step"
    fn.__module__ = "_grader_helper"
    fn.__doc__ = None
    return fn


class Worker:
    def __init__(self, fd_in: int, fd_out: int) -> None:
        self.fd_in = fd_in
        self.fd_out = fd_out
        self.codec = _load_codec()
        self.reader = self.codec.FrameReader()
        import torch

        self.torch = torch
        self.module: types.ModuleType | None = None
        self.objects: dict[int, Any] = {}
        self.helpers: dict[str, types.ModuleType] = {}
        self.helper_sources: dict[str, str] = {}
        self.opaque: dict[tuple[str, str], Any] = {}
        self.next_handle = 1
        self.guard_cls: Any = None
        self.last_stats: dict[str, Any] = {"triton_launches": 0, "torch_ops": {}}

    # -- channel -----------------------------------------------------------------------------
    def read(self) -> tuple[dict[str, Any], list[bytes]] | None:
        while True:
            frame = self.reader.pop()
            if frame is not None:
                return frame
            chunk = os.read(self.fd_in, 1 << 20)
            if not chunk:
                return None
            self.reader.feed(chunk)

    def send(self, rid: str, body: dict[str, Any], encoder: Any = None) -> None:
        # what the submission printed reaches its file before the reply: the supervisor may
        # SIGKILL this process right after it, which would lose a block-buffered stdout
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        enc = encoder or self.codec.Encoder()
        body = dict(body)
        body["id"] = rid
        body["violations"] = list(_State.violations)
        _State.violations.clear()
        self.codec.write_frame(self.fd_out, body, enc.buffers)

    # -- values --------------------------------------------------------------------------------
    def _extra_decode(self, d: dict[str, Any]) -> Any:
        if "__handle" in d:
            return self.objects[int(d["__handle"])]
        if "__wfn" in d:
            file, name = d["__wfn"]
            mod = self.helpers.get(file)
            if mod is None or not hasattr(mod, name):
                raise self.codec.CodecError(f"no helper {name} in {file}")
            key = (file, name)
            if key not in self.opaque:
                self.opaque[key] = _opaque_function(self.helper_sources[file], name)
            return self.opaque[key]
        return None

    def _extra_encode(self, v: Any) -> Any:
        for h, obj in self.objects.items():
            if obj is v:
                return {"__handle": h}
        return None

    def decode(self, header: Any, buffers: list[bytes]) -> Any:
        return self.codec.Decoder(buffers, extra=self._extra_decode).value(header)

    # -- errors --------------------------------------------------------------------------------
    def error_body(self, exc: BaseException) -> dict[str, Any]:
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if f.filename == _State.sub_file]
        name = Path(_State.sub_file).name
        lines = []
        for f in frames[-8:]:
            code = (f.line or "").strip()
            lines.append(f'  File "{name}", line {f.lineno}, in {f.name}' + (f"\n    {code}" if code else ""))
        if isinstance(exc, SystemExit):
            message = f"sys.exit({exc.code!r}) was called"
        else:
            try:
                message = str(exc)
            except Exception:  # noqa: BLE001 - hostile __str__
                message = "<unprintable>"
        line = frames[-1].lineno if frames else None
        if isinstance(exc, SyntaxError) and exc.filename == _State.sub_file:
            line = exc.lineno
        return {"ok": False, "error": {
            "type": type(exc).__name__,
            "mro": [c.__name__ for c in type(exc).__mro__],
            "module": type(exc).__module__,
            "message": message[:4000],
            "traceback": "\n".join(lines),
            "line": line,
        }}

    # -- running submission code ----------------------------------------------------------------
    def guarded(self, fn: Any, *args: Any, _in_call: bool = True, **kwargs: Any) -> Any:
        _State.triton_launches = 0
        _State.torch_ops = {}
        _State.max_numel = 0
        mode = self.guard_cls() if self.guard_cls is not None else None
        _State.active = True
        _State.in_call = _in_call
        cuda = self.torch.cuda.is_initialized()
        if cuda:
            self.torch.cuda.synchronize()
        start = time.perf_counter()
        try:
            if mode is not None:
                with mode:
                    return fn(*args, **kwargs)
            return fn(*args, **kwargs)
        finally:
            if cuda:
                self.torch.cuda.synchronize()
            elapsed = time.perf_counter() - start
            _State.active = False
            _State.in_call = False
            self.last_stats = {"triton_launches": _State.triton_launches,
                               "torch_ops": dict(_State.torch_ops),
                               "max_numel": _State.max_numel,
                               "elapsed_s": elapsed}

    def op_load(self, req: dict[str, Any]) -> dict[str, Any]:
        torch = self.torch
        _State.sub_file = os.path.abspath(req["filename"])
        Path(_State.sub_file).write_text(req["source"], encoding="utf-8")
        for hname, hsource in (req.get("helpers") or {}).items():
            hmod = types.ModuleType(f"_grader_helper_{Path(hname).stem}")
            hmod.__file__ = os.path.abspath("_helpers_" + hname)
            exec(compile(hsource, hmod.__file__, "exec"), hmod.__dict__)  # noqa: S102 - trusted file
            self.helpers[hname] = hmod
            self.helper_sources[hname] = hsource
        _State.requires_triton = bool(req.get("requires_triton"))
        if _State.requires_triton:
            _install_triton_counter()
        forbidden = req.get("forbidden") or []
        _install_forbidden(torch, forbidden)
        if forbidden or _State.requires_triton:
            self.guard_cls = _make_dispatch_mode(torch)
        _State.blocked_modules = set(req.get("blocked_modules") or [])
        _State.forbidden_roots = [os.path.realpath(p) for p in req.get("forbidden_roots") or []]
        sys.meta_path.insert(0, _BlockImports())
        for name in list(sys.modules):
            if name.split(".")[0] in _State.blocked_modules:
                del sys.modules[name]
        sys.addaudithook(_audit)

        module = types.ModuleType("solution")
        module.__file__ = _State.sub_file
        sys.modules["solution"] = module
        try:
            code = compile(req["source"], _State.sub_file, "exec", dont_inherit=True)
            self.guarded(exec, code, module.__dict__, _in_call=False)
        except BaseException as exc:  # noqa: BLE001 - anything the submission does is reported
            return self.error_body(exc)
        self.module = module
        return {"ok": True, "info": self.describe(req.get("entry_points") or [])}

    def describe(self, entry_points: list[dict[str, Any]]) -> dict[str, Any]:
        assert self.module is not None
        names = [n for n in vars(self.module) if not n.startswith("__")]
        eps = {}
        for ep in entry_points:
            name = ep["name"]
            obj = self.module.__dict__.get(name)
            d: dict[str, Any] = {"exists": name in self.module.__dict__}
            if d["exists"]:
                d["is_class"] = isinstance(obj, type)
                d["callable"] = callable(obj)
                target = obj
                if isinstance(obj, type):
                    target = obj.__init__
                    d["methods"] = {m: callable(getattr(obj, m, None)) for m in ep.get("methods", [])}
                try:
                    sig = inspect.signature(target)
                    params = [[p.name, p.kind.name, p.default is not inspect.Parameter.empty]
                              for p in sig.parameters.values()]
                    if isinstance(obj, type) and params and params[0][0] in ("self", "cls"):
                        params = params[1:]
                    elif isinstance(obj, type) and params and params[0][1] == "POSITIONAL_ONLY":
                        params = params[1:]
                    d["params"] = params
                except (TypeError, ValueError):
                    d["params"] = None
            eps[name] = d
        return {"names": names, "entry_points": eps}

    def resolve(self, req: dict[str, Any]) -> Any:
        target = req.get("target")
        obj: Any = self.module if target is None else self.objects[int(target)]
        return getattr(obj, req["name"])

    def _tensors(self, value: Any, path: str, out: list[tuple[str, Any]]) -> None:
        torch = self.torch
        if isinstance(value, torch.Tensor):
            out.append((path, value))
        elif isinstance(value, (list, tuple)):
            for i, x in enumerate(value):
                self._tensors(x, f"{path}[{i}]", out)
        elif isinstance(value, dict):
            for k, x in value.items():
                self._tensors(x, f"{path}[{k!r}]", out)

    def op_call(self, req: dict[str, Any], buffers: list[bytes], op: str) -> tuple[dict[str, Any], Any]:
        torch = self.torch
        args = self.decode(req.get("args", []), buffers)
        kwargs = self.decode(req.get("kwargs", {"__dict": []}), buffers)
        watched: list[tuple[str, Any]] = []
        for i, a in enumerate(args):
            self._tensors(a, f"argument {i + 1}", watched)
        for k, a in kwargs.items():
            self._tensors(a, f"argument {k!r}", watched)
        snaps = [(p, t, tuple(t.shape), t.stride(), t.detach().clone()) for p, t in watched]
        try:
            if op == "new":
                cls = getattr(self.module, req["name"])
                value = self.guarded(cls, *args, **kwargs)
                handle = self.next_handle
                self.next_handle += 1
                self.objects[handle] = value
                value = handle
            elif op == "get":
                target = self.objects[int(req["target"])] if req.get("target") is not None else self.module
                value = self.guarded(getattr, target, req["name"])
            else:
                fn = self.resolve(req)
                value = self.guarded(fn, *args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - reported to the supervisor
            return self.error_body(exc), None
        mutated = []
        for p, t, shape, stride, before in snaps:
            if tuple(t.shape) != shape or t.stride() != stride:
                mutated.append(p)
                continue
            a = before.reshape(-1).view(torch.uint8) if before.numel() else before
            b = t.detach().contiguous().reshape(-1).view(torch.uint8) if t.numel() else t
            if not torch.equal(a.cpu(), b.cpu()):
                mutated.append(p)
        enc = self.codec.Encoder(extra=self._extra_encode)
        try:
            encoded = enc.value(value)
        except Exception as exc:  # noqa: BLE001
            return {"ok": False, "error": {"type": "UnsupportedResult", "mro": [], "module": "",
                                           "message": f"the result cannot be sent back: {exc}",
                                           "traceback": "", "line": None}}, None
        return {"ok": True, "value": encoded, "mutated": mutated,
                "stats": self.last_stats}, enc

    def serve(self) -> None:
        self.send("ready", {"op": "ready", "pid": os.getpid(),
                            "torch": self.torch.__version__,
                            "cuda": bool(self.torch.cuda.is_available())})
        while True:
            frame = self.read()
            if frame is None:
                return
            req, buffers = frame
            rid = str(req.get("id", ""))
            op = req.get("op")
            try:
                if op == "load":
                    self.send(rid, self.op_load(req))
                elif op in ("call", "new", "get"):
                    body, enc = self.op_call(req, buffers, op)
                    self.send(rid, body, enc)
                elif op == "has":
                    self.send(rid, {"ok": True, "value": bool(self.module is not None
                                                              and hasattr(self.module, req["name"]))})
                elif op == "stats":
                    enc = self.codec.Encoder()
                    self.send(rid, {"ok": True, "value": enc.value(self.last_stats)}, enc)
                elif op == "ping":
                    self.send(rid, {"ok": True, "value": time.time()})
                elif op == "exit":
                    self.send(rid, {"ok": True, "value": None})
                    return
                else:
                    self.send(rid, {"ok": False, "error": {"type": "ProtocolError", "mro": [],
                                                           "module": "", "traceback": "", "line": None,
                                                           "message": f"unknown op {op!r}"}})
            except BaseException as exc:  # noqa: BLE001 - keep serving; the supervisor decides
                body = self.error_body(exc)
                body["error"]["internal"] = True
                self.send(rid, body)


class _CappedStream:
    """``sys.stdout``/``sys.stderr`` for the submission: keeps the first ``cap`` characters and
    drops the rest (the file under it is also capped by ``RLIMIT_FSIZE``)."""

    def __init__(self, inner: Any, cap: int) -> None:
        self._inner = inner
        self._cap = cap
        self._n = 0
        self._dropped = False

    def write(self, s: str) -> int:
        if self._n < self._cap:
            take = s[: self._cap - self._n]
            self._n += len(take)
            try:
                self._inner.write(take)
            except OSError:
                pass
        elif not self._dropped:
            self._dropped = True
            try:
                self._inner.write("\n[further output dropped by the grader]\n")
            except OSError:
                pass
        return len(s)

    def flush(self) -> None:
        try:
            self._inner.flush()
        except OSError:
            pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._inner.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self._inner, "encoding", "utf-8")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def main(argv: list[str]) -> int:
    fd_in, fd_out = int(argv[1]), int(argv[2])
    os.set_inheritable(fd_in, False)
    os.set_inheritable(fd_out, False)
    sys.stdout = _CappedStream(sys.stdout, 4 << 20)
    sys.stderr = _CappedStream(sys.stderr, 4 << 20)
    if os.environ.get("GRADER_TRITON") == "1":
        try:
            import triton  # noqa: F401 - warm the import before the submission needs it
            import triton.language  # noqa: F401
        except Exception:  # noqa: BLE001 - reported when the submission imports it
            pass
    worker = Worker(fd_in, fd_out)
    worker.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

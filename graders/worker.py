"""The untrusted side of grading: a worker process that imports a submission and runs calls.

Started by the supervisor as ``python -I graders/worker.py FD_IN FD_OUT`` in a temporary folder,
its own session, a clean environment and with stdout/stderr going to capped files. It talks to the
supervisor over two dedicated pipes in the frame format of ``codec.py`` (loaded by path; this
process never imports ``inferview``). It never decides whether a result is right: it only returns
values, exceptions, input mutations and the use of forbidden APIs, and the supervisor judges.

The guards that watch the submission's code while it runs are in ``guards.py`` (the same approach
as the sandboxes of online judges that run Python in-process, e.g. Kattis and gpu-mode's
kernelbot, which add an outer process boundary); this file is the serve loop.
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


def _load_sibling(name: str, as_name: str) -> types.ModuleType:
    """A module of this folder, loaded by path (this process never imports ``inferview``)."""
    path = Path(__file__).resolve().with_name(name)
    spec = importlib.util.spec_from_file_location(as_name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)  # not put in sys.modules
    spec.loader.exec_module(mod)
    return mod


def _load_codec() -> types.ModuleType:
    return _load_sibling("codec.py", "_grader_wire")


_guards = _load_sibling("guards.py", "_grader_guards")
_State = _guards._State
_violate = _guards._violate
_BlockImports = _guards._BlockImports
_audit = _guards._audit
_install_forbidden = _guards._install_forbidden
_install_triton_counter = _guards._install_triton_counter
_make_dispatch_mode = _guards._make_dispatch_mode
_opaque_function = _guards._opaque_function



ALIAS_DEPTH = 4
"""How deep :meth:`_aliases` looks into an object's attributes for the tensors it keeps."""
ALIAS_OBJECTS = 100_000

_PLAIN = (list, dict, set)
"""Argument types whose contents are compared before and after a call."""


def _shape_of(value: Any, depth: int = 0) -> Any:
    """A comparable copy of a plain argument's contents, tensors stood in for by their identity
    (their bytes are compared on their own); deep or exotic contents by identity too."""
    kind = type(value)
    if depth > 6:
        return ("id", id(value))
    if kind in (list, tuple):
        return (kind.__name__, tuple(_shape_of(x, depth + 1) for x in value))
    if kind is dict:
        return ("dict", tuple((repr(k), _shape_of(x, depth + 1)) for k, x in value.items()))
    if kind in (set, frozenset):
        return (kind.__name__, frozenset(repr(x) for x in value))
    if kind in (int, float, str, bytes, bool, type(None), complex):
        return (kind.__name__, repr(value))
    return ("id", id(value))


def _containers(value: Any, path: str, out: list[tuple[str, Any]], depth: int) -> None:
    """The mutable plain containers in a result, with their paths."""
    if depth > 4:
        return
    if type(value) in (list, dict, set):
        out.append((path, value))
    if type(value) in (list, tuple):
        for i, x in enumerate(value):
            _containers(x, f"{path}[{i}]", out, depth + 1)
    elif type(value) is dict:
        for k, x in value.items():
            _containers(x, f"{path}[{k!r}]", out, depth + 1)


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
        self.tracking_cls: Any = None
        """The op-tracking mode for a call that asks for it when the challenge installs none."""
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
    def guarded(self, fn: Any, *args: Any, _in_call: bool = True, _track: bool = False,
                **kwargs: Any) -> Any:
        _State.triton_launches = 0
        _State.torch_ops = {}
        _State.max_numel = 0
        guard_cls = self.guard_cls
        if guard_cls is None and _track:  # asked for by this call alone (``track_ops``)
            guard_cls = self.tracking_cls = self.tracking_cls or _make_dispatch_mode(self.torch)
        mode = guard_cls() if guard_cls is not None else None
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

    def _aliases(self, value: Any, obj: Any) -> list[str]:
        """Paths of the result's tensors that share storage with a tensor the object keeps, and
        of its lists, dicts and sets that are the object's own (writing into the result would
        change the object). The state is read without running the submission's code: plain
        containers, instance dicts and slots only."""
        out: list[tuple[str, Any]] = []
        self._tensors(value, "result", out)
        boxes: list[tuple[str, Any]] = []
        _containers(value, "result", boxes, 0)
        if not out and not boxes:
            return []
        kept: set[int] = set()
        seen: set[int] = set()
        self._state_storages(obj, kept, 0, seen)
        seen.discard(id(obj))
        storage = self.torch.Tensor.untyped_storage
        return ([p for p, b in boxes if id(b) in seen]
                + [p for p, t in out if t.numel() and storage(t).data_ptr() in kept])

    def _state_storages(self, value: Any, kept: set[int], depth: int, seen: set[int]) -> None:
        import types

        if depth > ALIAS_DEPTH or id(value) in seen or len(seen) > ALIAS_OBJECTS:
            return
        seen.add(id(value))
        torch = self.torch
        if isinstance(value, torch.Tensor):
            if torch.Tensor.numel(value):
                kept.add(torch.Tensor.untyped_storage(value).data_ptr())
            return
        kind = type(value)
        if kind in (list, tuple, set, frozenset):
            items: list[Any] = list(value)
        elif kind is dict:
            items = list(value.values())
        else:
            items = []
            for klass in kind.__mro__:  # the instance dict through its C descriptor only
                if "__dict__" in klass.__dict__:
                    desc = klass.__dict__["__dict__"]
                    if isinstance(desc, types.GetSetDescriptorType):
                        attrs = desc.__get__(value, kind)
                        if type(attrs) is dict:
                            items += list(attrs.values())
                    break
            for klass in kind.__mro__:
                for name in klass.__dict__.get("__slots__", ()) if type(klass.__dict__.get("__slots__", ())) in (tuple, list) else ():
                    slot = klass.__dict__.get(name)
                    if isinstance(slot, types.MemberDescriptorType):
                        try:
                            items.append(slot.__get__(value, kind))
                        except AttributeError:
                            pass
        for item in items:
            if not isinstance(item, (int, float, str, bytes, bool, type(None))):
                self._state_storages(item, kept, depth + 1, seen)

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
        # plain lists, dicts and sets: their contents (tensors aside, watched above) must not change
        plain = [(f"argument {i + 1}", a) for i, a in enumerate(args) if type(a) in _PLAIN]
        plain += [(f"argument {k!r}", a) for k, a in kwargs.items() if type(a) in _PLAIN]
        before_plain = [(p, a, _shape_of(a)) for p, a in plain]
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
                value = self.guarded(fn, *args, _track=bool(req.get("track_ops")), **kwargs)
                if req.get("target") is not None:
                    try:  # reads the object's state statically: no submission code runs here
                        aliases = self._aliases(value, self.objects[int(req["target"])])
                    except Exception:  # noqa: BLE001 - an unreadable state reports no alias
                        aliases = []
                    self.last_stats = {**self.last_stats, "aliases": aliases}
        except BaseException as exc:  # noqa: BLE001 - reported to the supervisor
            return self.error_body(exc), None
        mutated = [p for p, a, shape in before_plain if _shape_of(a) != shape]
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
        # a generator argument comes back in the state the call left it in, as it would in-process
        gens = [[i, enc.value(a)] for i, a in enumerate(args) if isinstance(a, torch.Generator)]
        gens += [[k, enc.value(a)] for k, a in kwargs.items() if isinstance(a, torch.Generator)]
        return {"ok": True, "value": encoded, "mutated": mutated, "generators": gens,
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

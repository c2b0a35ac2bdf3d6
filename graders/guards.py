"""The guards the worker installs around a submission's code (loaded by path by ``worker.py``;
like it, this file never imports ``inferview``).

- a meta-path finder that refuses ``inferview`` and the grader/reference/challenge packages;
- an audit hook (PEP 578, ``sys.addaudithook``) that refuses to open files under the package and
  challenge folders;
- wrappers around the challenge's forbidden torch functions and ``Tensor`` operators, and a
  ``TorchDispatchMode`` that sees every ATen op (forbidden op families; for Triton challenges an
  allow-list of allocation, view, copy and scalar ops);
- a counter of Triton kernel launches (``JITFunction.run`` / ``InterpretedFunction.run``).

``State`` holds what they saw; the worker resets it around each call and reports it.
"""

from __future__ import annotations

import importlib.abc
import os
import sys
import types
from typing import Any

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


_OWN_FILES = {os.path.realpath(os.path.join(os.path.dirname(__file__), name))
              for name in ("worker.py", "guards.py", "codec.py")}


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
                                 f"computes with torch (aten.{name}) during the call; this "
                                 "challenge's computation must run inside a Triton kernel")
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



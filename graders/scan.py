"""Static scan of a submission for forbidden APIs (Python ``ast``).

Resolves import aliases (``import torch.nn.functional as F`` then ``F.softmax``; ``from torch
import matmul as mm``), attribute chains, the ``@`` operator (``ast.MatMult``), ``getattr`` with a
string that can be folded at scan time (``getattr(torch, "mat" + "mul")``) and imports of the
grader, the reference implementations or the challenge files. It is a first line only: the worker
also guards the same APIs at run time, which catches what no static scan can (``eval``, strings
built at run time).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

BLOCKED_MODULES = ("inferview", "graders", "reference", "challenges")
"""Top-level module names a submission may not import (the worker refuses them too)."""


@dataclass(frozen=True)
class Violation:
    """One use of a forbidden API."""

    rule: str
    """The pattern from ``challenge.yaml`` (or ``import inferview``)."""
    message: str
    """What was found, shown to the user."""
    line: int | None
    """Line in the submission."""

    def describe(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.message}"


@dataclass(frozen=True)
class Rule:
    pattern: str
    reason: str = ""


def _fold_str(node: ast.AST) -> str | None:
    """The value of a string expression built only from constants, else ``None``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _fold_str(node.left), _fold_str(node.right)
        return a + b if a is not None and b is not None else None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                parts.append(v.value)
            elif isinstance(v, ast.FormattedValue):
                inner = _fold_str(v.value)
                if inner is None:
                    return None
                parts.append(inner)
            else:
                return None
        return "".join(parts)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "join" and len(node.args) == 1 and not node.keywords):
        sep = _fold_str(node.func.value)
        seq = node.args[0]
        if sep is not None and isinstance(seq, (ast.List, ast.Tuple)):
            items = [_fold_str(e) for e in seq.elts]
            if all(i is not None for i in items):
                return sep.join(items)  # type: ignore[arg-type]
    if (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice)
            and node.slice.lower is None and node.slice.upper is None):
        # "lumtam"[::-1]
        base = _fold_str(node.value)
        step = node.slice.step
        if base is not None and isinstance(step, ast.UnaryOp) and isinstance(step.op, ast.USub) \
                and isinstance(step.operand, ast.Constant) and step.operand.value == 1:
            return base[::-1]
    return None


class _Scanner(ast.NodeVisitor):
    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self.aliases: dict[str, str] = {}
        self.found: list[Violation] = []

    # -- helpers ------------------------------------------------------------------------------
    def add(self, rule: str, message: str, node: ast.AST) -> None:
        line = getattr(node, "lineno", None)
        v = Violation(rule, message, line)
        if v not in self.found:
            self.found.append(v)

    def dotted(self, node: ast.AST) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.aliases.get(node.id, node.id)
        return ".".join([base, *reversed(parts)])

    def match(self, name: str) -> Rule | None:
        for r in self.rules:
            p = r.pattern
            if p == "@":
                continue
            if "." in p:
                if name == p or name.startswith(p + "."):
                    return r
            elif name.split(".")[-1] == p:
                return r
        return None

    def reason(self, r: Rule) -> str:
        return f" ({r.reason})" if r.reason else ""

    def check_module(self, module: str, node: ast.AST) -> None:
        top = module.split(".")[0]
        if top in BLOCKED_MODULES:
            self.add(f"import {top}", f"imports {module}: the grader, the reference "
                     "implementations and the challenge files are off limits", node)

    # -- visitors -----------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self.check_module(a.name, node)
            if a.asname:
                self.aliases[a.asname] = a.name
            else:
                top = a.name.split(".")[0]
                self.aliases.setdefault(top, top)
            r = self.match(a.name)
            if r:
                self.add(r.pattern, f"imports {a.name}{self.reason(r)}", node)
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        if node.level == 0:
            self.check_module(mod, node)
        for a in node.names:
            full = f"{mod}.{a.name}" if mod else a.name
            if node.level == 0 and mod == "" and a.name.split(".")[0] in BLOCKED_MODULES:
                self.check_module(a.name, node)
            self.aliases[a.asname or a.name] = full
            r = self.match(full)
            if r:
                self.add(r.pattern, f"imports {full}{self.reason(r)}", node)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = self.dotted(node)
        if name is not None:
            r = self.match(name)
            if r:
                self.add(r.pattern, f"uses {name}{self.reason(r)}", node)
                return
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.aliases:
            full = self.aliases[node.id]
            r = self.match(full)
            if r and isinstance(node.ctx, ast.Load):
                self.add(r.pattern, f"uses {full} (as {node.id}){self.reason(r)}", node)

    def _matmul(self, node: ast.AST) -> None:
        for r in self.rules:
            if r.pattern == "@":
                self.add("@", "uses the @ operator (matrix product)" + self.reason(r), node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult):
            self._matmul(node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.op, ast.MatMult):
            self._matmul(node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        fn = self.dotted(node.func) if isinstance(node.func, (ast.Name, ast.Attribute)) else None
        if fn in ("getattr", "builtins.getattr", "operator.attrgetter", "hasattr") and node.args:
            idx = 0 if fn == "operator.attrgetter" else 1
            if len(node.args) > idx:
                text = _fold_str(node.args[idx])
                target = self.dotted(node.args[0]) if idx == 1 else None
                if text is not None:
                    full = f"{target}.{text}" if target else text
                    r = self.match(full) or self.match(text.split(".")[-1] if "." not in text else text)
                    if r is not None and ("." not in r.pattern or (target or "").startswith("torch")
                                          or full.startswith("torch")):
                        self.add(r.pattern, f"looks up {text!r} with {fn}{self.reason(r)}", node)
                elif (self.rules and target is not None and target.split(".")[0] == "torch"
                      and fn != "hasattr"):
                    self.add("dynamic lookup", f"looks up a computed attribute name on {target}: "
                             "the challenge forbids some torch APIs, so every torch API must be "
                             "named in the code", node)
        if fn in ("importlib.import_module", "__import__", "builtins.__import__") and node.args:
            text = _fold_str(node.args[0])
            if text is not None:
                self.check_module(text, node)
                r = self.match(text)
                if r:
                    self.add(r.pattern, f"imports {text}{self.reason(r)}", node)
        if fn in ("operator.matmul", "operator.imatmul"):
            self._matmul(node)
        self.generic_visit(node)


def scan_source(source: str, rules: Iterable[Rule | tuple[str, str] | str],
                filename: str = "<solution>") -> list[Violation]:
    """Every forbidden use found in ``source`` (which must parse), in line order."""
    norm: list[Rule] = []
    for r in rules:
        if isinstance(r, Rule):
            norm.append(r)
        elif isinstance(r, tuple):
            norm.append(Rule(r[0], r[1]))
        else:
            norm.append(Rule(str(r)))
    tree = ast.parse(source, filename=filename)
    scanner = _Scanner(norm)
    scanner.visit(tree)
    return sorted(scanner.found, key=lambda v: (v.line or 0, v.rule))

r"""The numerics version of a computed result: a hash of the definitions that compute it, by content, not by location.

Starting from a function :math:`f`, :func:`numerics_version` collects every top-level definition (function, class,
assignment) that :math:`f` reaches by name — through its module's globals, imports (at module or function level),
attribute access on imported modules, and the values of registries (dicts, lists, dataclass instances holding
classes or functions) — keeping those that live in :data:`NUMERICS` (tasks, models, theory, trainers, measures, the
language-model code, seeds and statistics) or in :math:`f`'s own module. Each definition is hashed as its abstract
syntax tree without docstrings, decorators, type annotations or import statements; the version is the sha256 of the
*sorted multiset* of those hashes:

.. math::  v(f) = \mathrm{sha256}\big(\mathrm{sort}\{h(d) : d \in \mathrm{reach}(f) \cap (\mathcal N \cup M_f)\}\big).

No module or package name enters it, so moving a definition to another module, renaming a module, editing an
unrelated function of the same module, a docstring, a comment, the formatting, or infrastructure (the cache, progress
bars, validation) leaves :math:`v(f)` unchanged; editing the arithmetic of anything reached changes it. Dynamic
dispatch by string (``getattr(module, name)``) is not followed: numerical regressions are caught by the golden tests
(``tests/golden/``), the version only keeps caches from serving results of code that visibly changed.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import functools
import hashlib
import importlib
import importlib.util
import inspect
import sys
import types
from pathlib import Path
from typing import Any, Callable

__all__ = ["NUMERICS", "numerics_version", "reached_definitions"]

#: Module prefixes whose definitions compute results (a prefix matches the module and its submodules).
NUMERICS = (
    "lib.tasks",
    "lib.models",
    "lib.theory",
    "lib.train",
    "lib.measures",
    "lib.lm",
    "lib.core.seeds",
    "lib.core.stats",
)


def _in(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _source(module: str) -> Path | None:
    mod = sys.modules.get(module)
    path = getattr(mod, "__file__", None)
    if path is None:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return None
        path = spec.origin if spec else None
    return Path(path) if path and str(path).endswith(".py") else None


def _absolute(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of ``from <level dots><target> import ...`` written in ``module``."""
    if not level:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _bindings(stmts, module: str, is_package: bool) -> dict[str, tuple[str, str | None]]:
    """Names bound by the import statements among ``stmts``: name -> (module, attribute or None for a module)."""
    out: dict[str, tuple[str, str | None]] = {}
    for node in stmts:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = (a.name, None)
                else:
                    out[a.name.split(".")[0]] = (a.name.split(".")[0], None)
        elif isinstance(node, ast.ImportFrom):
            src = _absolute(module, is_package, node.level, node.module)
            for a in node.names:
                if a.name != "*":
                    out[a.asname or a.name] = (src, a.name)
    return out


def _clean(node: ast.AST) -> ast.AST:
    """A copy of ``node`` without docstrings, decorators, annotations or import statements."""
    node = copy.deepcopy(node)
    for n in ast.walk(node):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            n.decorator_list = []
            body = [s for s in n.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                body = body[1:]
            n.body = body or [ast.Pass()]
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n.returns = None
        if isinstance(n, ast.arg):
            n.annotation = None
        if isinstance(n, ast.AnnAssign):
            n.annotation = ast.Constant(None)
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(n, field, None)
            if isinstance(stmts, list) and not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                kept = [s for s in stmts if not isinstance(s, (ast.Import, ast.ImportFrom))]
                setattr(n, field, kept or [ast.Pass()])
    return node


def _targets(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = (
        node.targets
        if isinstance(node, ast.Assign)
        else [node.target]
        if isinstance(node, (ast.AnnAssign, ast.AugAssign))
        else []
    )
    names = []
    for t in targets:
        for n in ast.walk(t):
            if isinstance(n, ast.Name):
                names.append(n.id)
    return names


@dataclasses.dataclass(frozen=True)
class _Module:
    name: str
    is_package: bool
    defs: dict  # name -> list of (index, top-level statement)
    imports: dict  # name -> (module, attribute or None)


@functools.lru_cache(maxsize=None)
def _parse(path: str, stamp: tuple[int, int], name: str) -> _Module:
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    defs: dict[str, list] = {}
    for i, node in enumerate(tree.body):
        for t in _targets(node):
            if t != "__all__":
                defs.setdefault(t, []).append((i, node))
    is_package = Path(path).name == "__init__.py"
    return _Module(name, is_package, defs, _bindings(tree.body, name, is_package))


def _module(name: str) -> _Module | None:
    path = _source(name)
    if path is None:
        return None
    st = path.stat()
    return _parse(str(path), (st.st_mtime_ns, st.st_size), name)


@functools.lru_cache(maxsize=None)
def _is_module(name: str) -> bool:
    if name in sys.modules:
        return isinstance(sys.modules[name], types.ModuleType)
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _references(node: ast.AST) -> list[tuple[str, tuple[str, ...]]]:
    """(name, attribute chain) for every name ``node`` reads: ``a.b.c`` gives ``("a", ("b", "c"))``."""
    out = []
    chained: set[int] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and id(n) not in chained:
            chain, base = [], n
            while isinstance(base, ast.Attribute):
                chained.add(id(base))
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name):
                out.append((base.id, tuple(reversed(chain))))
        elif isinstance(n, ast.Name):
            out.append((n.id, ()))
    return out


def _locals(node: ast.AST, module: _Module) -> dict[str, tuple[str, str | None]]:
    stmts = [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return _bindings(stmts, module.name, module.is_package)


_STATEMENTS: dict[tuple[int, int], tuple] = {}


def _statement(module: _Module, index: int) -> tuple[str, list, dict]:
    """(content hash, names read, names bound by imports inside it) of one top-level statement, memoised per parse."""
    key = (id(module), index)
    if key not in _STATEMENTS:
        node = next(n for i, nodes in module.defs.items() for j, n in nodes if j == index)
        _STATEMENTS[key] = (
            hashlib.sha256(ast.dump(_clean(node)).encode()).hexdigest(),
            _references(node),
            _locals(node, module),
        )
    return _STATEMENTS[key]


class _Walk:
    def __init__(self, numerics: tuple[str, ...], home: str):
        self.numerics, self.home = numerics, home
        self.digests: dict[tuple[str, int], str] = {}
        self.todo: list[tuple[str, str]] = []
        self.seen: set[tuple[str, str]] = set()
        self.files: set[str] = set()

    def keep(self, module: str) -> bool:
        return module == self.home or _in(module, self.numerics)

    def add(self, module: str, name: str) -> None:
        if (module, name) not in self.seen and self.keep(module):
            self.seen.add((module, name))
            self.todo.append((module, name))

    def add_object(self, obj: Any, depth: int = 0) -> None:
        """A runtime value: a function or class by its definition; a registry by what it holds."""
        if depth > 3:
            return
        if isinstance(obj, (types.FunctionType, type)):
            mod, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", "")
            if mod and "<locals>" not in qual:
                self.add(mod, qual.split(".")[0])
            return
        if isinstance(obj, functools.partial):
            self.add_object(obj.func, depth + 1)
            return
        if hasattr(obj, "__wrapped__") and callable(obj):
            self.add_object(obj.__wrapped__, depth + 1)
        if isinstance(obj, dict):
            for v in obj.values():
                self.add_object(v, depth + 1)
        elif isinstance(obj, (list, tuple, set, frozenset)):
            for v in obj:
                self.add_object(v, depth + 1)
        elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            self.add_object(type(obj), depth + 1)
            for f in dataclasses.fields(obj):
                self.add_object(getattr(obj, f.name), depth + 1)

    def resolve(self, module: str, name: str, chain: tuple[str, ...], hops: int = 0) -> None:
        """Follow ``name`` (then ``.chain``) as read in ``module``."""
        if hops > 20:
            return
        info = _module(module)
        if info is not None:
            self.files.add(module)
        if info is not None and name in info.defs:
            self.add(module, name)
            return
        if info is not None and name in info.imports:
            src, attr = info.imports[name]
            self.follow(src, attr, chain, hops + 1)
            return
        if _is_module(f"{module}.{name}"):  # a submodule reached as an attribute of its package
            self.follow(f"{module}.{name}", None, chain, hops + 1)
            return
        mod = sys.modules.get(module)
        if mod is not None and hasattr(mod, name):
            self.add_object(getattr(mod, name))

    def follow(self, src: str, attr: str | None, chain: tuple[str, ...], hops: int) -> None:
        if not (src == self.home or _in(src, ("lib",) + self.numerics)):
            return  # outside the project: numpy, torch, the standard library
        if attr is not None and not _is_module(f"{src}.{attr}"):
            self.resolve(src, attr, chain, hops)
            return
        target = src if attr is None else f"{src}.{attr}"
        if chain:
            self.resolve(target, chain[0], chain[1:], hops)

    def run(self) -> None:
        while self.todo:
            module, name = self.todo.pop()
            info = _module(module)
            if info is None or name not in info.defs:
                continue
            for index, node in info.defs[name]:
                if (module, index) in self.digests:
                    continue
                digest, refs, local = _statement(info, index)
                self.digests[(module, index)] = digest
                self.files.add(module)
                for ref, chain in refs:
                    if ref in local:
                        src, attr = local[ref]
                        self.follow(src, attr, chain, 1)
                    else:
                        self.resolve(module, ref, chain)
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    mod = sys.modules.get(module)  # a registry filled at import time: follow what it holds
                    if mod is not None and hasattr(mod, name):
                        self.add_object(getattr(mod, name))


def _start(func: Callable) -> tuple[str, str]:
    func = inspect.unwrap(func) if callable(func) else func
    module, qual = getattr(func, "__module__", None), getattr(func, "__qualname__", None)
    if not module or not qual:
        raise TypeError(f"{func!r} is not a module-level function or class")
    if "<locals>" in qual:
        raise TypeError(f"{qual} is defined inside a function; a computed result's function must be module-level")
    if _module(module) is None:
        raise TypeError(f"{module} has no Python source to hash")
    return module, qual.split(".")[0]


_MEMO: dict[tuple, tuple[dict, dict]] = {}


def _stamp(module: str) -> tuple[int, int] | None:
    path = _source(module)
    if path is None:
        return None
    st = path.stat()
    return st.st_mtime_ns, st.st_size


def reached_definitions(func: Callable, *, numerics: tuple[str, ...] | None = None) -> dict[tuple[str, int], str]:
    """``{(module, statement index): sha256}`` of every definition :func:`numerics_version` hashes for ``func``
    (memoised while none of the source files it read changes)."""
    module, name = _start(func)
    prefixes = NUMERICS if numerics is None else tuple(numerics)
    memo = _MEMO.get((module, name, prefixes))
    if memo is not None and all(_stamp(m) == st for m, st in memo[1].items()):
        return dict(memo[0])
    walk = _Walk(prefixes, module)
    walk.add(module, name)
    walk.run()
    _MEMO[(module, name, prefixes)] = (dict(walk.digests), {m: _stamp(m) for m in walk.files | {module}})
    return walk.digests


def numerics_version(func: Callable) -> str:
    """sha256 of the sorted content hashes of the definitions ``func`` reaches in :data:`NUMERICS` and its own module
    (module docstring); independent of where any of them lives."""
    digests = sorted(reached_definitions(func).values())
    return hashlib.sha256("\n".join(digests).encode()).hexdigest()

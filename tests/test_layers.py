"""The layers of lib, from one ordered table: a folder imports only folders on floors below its own, no module
imports back into a circle, and the lib root holds only ``__init__.py``.

Every import counts, at module level or inside a function (an import deferred into a function is still an arrow).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "lib"

#: Floors, bottom first: a folder may import its own floor's folder only if it is itself, and any lower floor.
FLOORS = (
    ("core",),  # env, validation, seeds, progress, the results cache, numerics versions, statistics
    ("tasks", "measures", "lm", "claims"),  # data generators; numbers read off arrays; language models; the claims
    ("models",),
    ("theory",),
    ("train",),
    ("studies",),  # every committed experiment, FAST and paper scale
    ("readouts",),  # what chapters read off theory curves and committed studies
    ("book",),  # chapter glue and figures
    ("__init__",),  # the package face
)
FLOOR = {name: i for i, names in enumerate(FLOORS) for name in names}


def module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(LIB.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def imported_modules(path: Path) -> set[str]:
    """The ``lib`` modules (or packages) the file at ``path`` imports, anywhere in it, as absolute names; ``from X
    import y`` gives ``X.y`` when that is a module of lib, else ``X``."""
    module, is_package = module_name(path)
    package = module if is_package else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target != "lib" and not target.startswith("lib."):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if _exists(sub) else target)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name == "lib" or a.name.startswith("lib.")}
    return out


def _exists(module: str) -> bool:
    base = LIB.parent.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def folder(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _files() -> list[Path]:
    return sorted(p for p in LIB.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_root_holds_only_the_package_face():
    assert sorted(p.name for p in LIB.glob("*.py")) == ["__init__.py"]


def test_every_folder_is_on_a_floor():
    folders = {p.name for p in LIB.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(FLOOR) - {"__init__"}, (
        f"folders without a floor: {folders - set(FLOOR)}; gone: {set(FLOOR) - folders - {'__init__'}}"
    )


@pytest.mark.parametrize("name", [n for names in FLOORS for n in names])
def test_imports_flow_downward(name):
    bad = {}
    for path in _files():
        module, _ = module_name(path)
        if folder(module) != name:
            continue
        for target in imported_modules(path):
            other = folder(target)
            if other != name and FLOOR[other] >= FLOOR[name]:
                bad.setdefault(str(path.relative_to(LIB)), []).append(target)
    assert not bad, f"lib/{name} (floor {FLOOR[name]}) imports from its own floor or above: {bad}"


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """A cycle of ``graph`` (node -> successors) as a list of nodes from and back to one node, or ``[]``."""
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> list[str]:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [node, nxt] if nxt in stack else [node, nxt]
            if state.get(nxt) is None and nxt in graph:
                found = visit(nxt, stack + [node])
                if found:
                    return found
        state[node] = 2
        return []

    for node in sorted(graph):
        if state.get(node) is None:
            found = visit(node, [])
            if found:
                return found
    return []


def test_no_module_imports_in_a_circle():
    """Modules as nodes (a package's ``__init__`` is the package), every import as an arrow: no cycle."""
    graph = {module_name(p)[0]: imported_modules(p) - {module_name(p)[0]} for p in _files()}
    cycle = find_cycle(graph)
    assert not cycle, f"an import circle: {' -> '.join(cycle)}"


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_the_resolver_sees_relative_and_deferred_imports(tmp_path):
    theory = LIB / "theory" / "probe_for_test.py"
    text = "from ..train.copy_map import x\nfrom . import grids\nfrom .. import tasks\nimport lib.lm\n\ndef f():\n    from ..book import plots\n"
    try:
        theory.write_text(text)
        assert imported_modules(theory) == {
            "lib.train.copy_map",
            "lib.theory.grids",
            "lib.tasks",
            "lib.lm",
            "lib.book.plots",
        }
    finally:
        theory.unlink()


def test_the_validation_module_imports_nothing_of_lib():
    assert imported_modules(LIB / "core" / "validate.py") == set()

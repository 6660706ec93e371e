"""The layers of lib (README): imports flow downward only. The theory trains nothing, so it imports no trainer;
models and tasks import neither the trainers nor the theory; the trainers import no committed study; the shared
argument checks import nothing of lib."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "lib"
FORBIDDEN = {"train": ("studies", "lm", "book", "claims", "plots", "measures"),
             "theory": ("train", "lm", "book", "claims", "studies"),
             "models": ("train", "theory", "lm", "book", "claims", "studies"),
             "tasks": ("train", "theory", "models", "lm", "book", "claims", "studies")}  # fmt: skip


def lib_imports(path: Path, package: str) -> set[str]:
    """The ``lib`` subpackages (first level) that the module at ``path`` in ``lib.<package>`` imports."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:  # relative: resolve against lib.<package>.<module>
            parts = ["lib", *package.split(".")] + ([] if path.name == "__init__.py" else [path.stem])
            base = parts[: len(parts) - node.level]
            target = base + (node.module.split(".") if node.module else [])
            if node.module is None and len(target) == 1:  # from .. import x, y: each name is a subpackage
                out |= {a.name for a in node.names}
            elif len(target) > 1:
                out.add(target[1])
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lib."):
            out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[1] for a in node.names if a.name.startswith("lib.")}
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_flow_downward(package):
    bad = {}
    for path in sorted((LIB / package).rglob("*.py")):
        found = lib_imports(path, package if path.parent == LIB / package else f"{package}.{path.parent.name}")
        hits = found & set(FORBIDDEN[package])
        if hits:
            bad[str(path.relative_to(LIB))] = sorted(hits)
    assert bad == {}, f"lib/{package} imports from layers above it: {bad}"


def test_the_resolver_sees_relative_imports(tmp_path):
    module = tmp_path / "mod.py"
    module.write_text("from ..train.copy_map import x\nfrom . import y\nfrom .. import theory\nimport lib.lm\n")
    assert lib_imports(module, "theory") == {"train", "theory", "lm"}


def test_the_validation_module_imports_nothing_of_lib():
    assert lib_imports(LIB / "validate.py", "") == set()

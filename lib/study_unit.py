r"""One unit of a long study: a module-level function of one frozen config, keyed by name, config and numerics.

A paper-scale study (:mod:`lib.paper_scale`) is split into units that run for CPU-hours in all and are committed one
by one. A unit's identity is ``(result name, config, numerics version)`` (:func:`unit_key`): an edit of the code that
computes it gives new units instead of mixing results of two versions of the code; moving code does not.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import time
from dataclasses import dataclass
from typing import Any, Callable

from .cache import _machine, canonical_config, numerics_version, result_name

__all__ = ["StudyUnit", "unit", "run_unit", "unit_key", "resolve"]


def resolve(path: str) -> Callable:
    """The function named ``"package.module:function"`` (``ValueError`` when there is none)."""
    if not isinstance(path, str) or path.count(":") != 1:
        raise ValueError(f"a function is named 'package.module:function', got {path!r}")
    module, name = path.split(":")
    func = getattr(importlib.import_module(module), name, None)
    if not callable(func):
        raise ValueError(f"{path!r} is not a function")
    return getattr(func, "__wrapped__", func)


@dataclass(frozen=True)
class StudyUnit:
    """One unit of a study: ``func(config)``.

    ``func`` says where the function lives (``"package.module:function"``, to call it in a worker); the unit's
    identity is ``(name, config, numerics)``: the function's result name (:func:`lib.cache.result_name`), the config
    and the numerics version of the function when the unit was defined.
    """

    func: str
    config: Any
    numerics: str
    name: str = ""


def unit(func: str, config: Any) -> StudyUnit:
    """The :class:`StudyUnit` of ``func`` (``"package.module:function"``) on the frozen dataclass ``config``."""
    f = resolve(func)
    return StudyUnit(func, config, numerics_version(f), result_name(f))


def unit_key(u: StudyUnit) -> str:
    """A short stable name of the unit, under which its committed result is filed: sha256 of its name, canonical
    config and numerics version (never of where its function lives)."""
    if not isinstance(u, StudyUnit):
        raise ValueError(f"unit_key needs a StudyUnit, got {type(u).__name__}")
    ident = {"unit": u.name, "config": canonical_config(u.config), "numerics": u.numerics}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]


def run_unit(u: StudyUnit) -> dict:
    """Compute one unit: ``{"value": func(config), "cpu_seconds", "wall_seconds", "machine"}``.

    ``ValueError`` when the code of ``func`` has changed since the unit was defined (a unit keyed by old code must
    not be computed by new code)."""
    if not isinstance(u, StudyUnit):
        raise ValueError(f"run_unit needs a StudyUnit, got {type(u).__name__}")
    func = resolve(u.func)
    if numerics_version(func) != u.numerics:
        raise ValueError(f"the code of {u.func} changed since this unit was defined; define the study again")
    cpu, wall = time.process_time(), time.perf_counter()
    value = func(u.config)
    return {"value": value, "cpu_seconds": time.process_time() - cpu, "wall_seconds": time.perf_counter() - wall,
            "machine": _machine()}  # fmt: skip

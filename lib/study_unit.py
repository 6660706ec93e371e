r"""One unit of a long study: a module-level function of one frozen config, and the code it was defined with.

A paper-scale study (:mod:`lib.paper_scale`) is split into units that run for CPU-hours in all and are committed one
by one. A unit's identity is ``(function, config, code fingerprint of the function)``
(:func:`lib.cache.code_fingerprint`): an edit of the training code gives new units instead of mixing results of two
versions of the code, while an edit of the study's own bookkeeping (how it is run, published, summarised) does not
touch the units already computed. That is why this module is small and stands apart: :func:`run_unit` is what the
results cache keys the computed units by, so its fingerprint (this module and the ``lib`` modules it imports) must not
move when the study machinery around it does.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from typing import Any, Callable

from .cache import _machine, code_fingerprint, config_key

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
    """One unit of a study: ``func(config)``, with the code fingerprint of ``func`` when the unit was defined."""

    func: str
    config: Any
    code: str


def unit(func: str, config: Any) -> StudyUnit:
    """The :class:`StudyUnit` of ``func`` (``"package.module:function"``) on the frozen dataclass ``config``."""
    return StudyUnit(func, config, code_fingerprint(resolve(func)))


def unit_key(u: StudyUnit) -> str:
    """A short stable name of the unit (sha256 of its canonical form: function, config, code), under which its
    committed result is filed."""
    if not isinstance(u, StudyUnit):
        raise ValueError(f"unit_key needs a StudyUnit, got {type(u).__name__}")
    return config_key(u)


def run_unit(u: StudyUnit) -> dict:
    """Compute one unit: ``{"value": func(config), "cpu_seconds", "wall_seconds", "machine"}``.

    ``ValueError`` when the code of ``func`` has changed since the unit was defined (a unit keyed by old code must
    not be computed by new code)."""
    if not isinstance(u, StudyUnit):
        raise ValueError(f"run_unit needs a StudyUnit, got {type(u).__name__}")
    func = resolve(u.func)
    if code_fingerprint(func) != u.code:
        raise ValueError(f"the code of {u.func} changed since this unit was defined; define the study again")
    cpu, wall = time.process_time(), time.perf_counter()
    value = func(u.config)
    return {"value": value, "cpu_seconds": time.process_time() - cpu, "wall_seconds": time.perf_counter() - wall,
            "machine": _machine()}  # fmt: skip

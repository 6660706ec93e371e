r"""The protocol every study shares: a committed result loaded or computed, its ``--publish`` command, and the
units of a long study.

A *committed study* is a cached function of a frozen config whose FAST result is copied under ``data/`` with
:func:`lib.core.cache.publish` (sha256, command and cost in ``data/manifest.json``), so a chapter reads it instead of
training (:func:`load_or_compute`, :func:`publish_main`). A paper-scale study (:mod:`lib.studies._paper_scale`) is
split into units that run for CPU-hours in all and are committed one by one; a unit's identity is ``(result name,
config, numerics version)`` (:func:`unit_key`): an edit of the code that computes it gives new units instead of mixing
results of two versions of the code; moving code does not.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import time
from dataclasses import dataclass
from typing import Any, Callable

from ..core.cache import Cache, _machine, canonical_config, load_committed, numerics_version, publish, result_name
from ..core.unit_context import UnitContext, checkpoint_dir, checkpoint_every, unit_device, unit_running

__all__ = ["load_or_compute", "publish_main", "StudyUnit", "unit", "run_unit", "unit_key", "resolve"]


def load_or_compute(
    func: Callable, config: Any, *, compute: bool, regenerate: str, cost: str, cache: Cache | None = None
) -> Any:
    """The committed result of ``func(config)`` (verified against the code that made it), else computed if ``compute``.

    Committed results are read even with the results cache off. Without a committed result for this config and
    code, and without ``compute``, a ``RuntimeError`` names the command ``regenerate`` and its ``cost``.
    """
    hit, value = load_committed(func, config, cache=cache)
    if hit:
        return value
    if compute:
        return func(config, cache=cache if cache is not None else True)
    name = getattr(func, "__name__", "study")
    raise RuntimeError(
        f"no committed {name} for this config and code (stale after a change to the code it runs, or "
        f"missing); regenerate with `{regenerate}` ({cost})"
    )


def publish_main(
    module: str, func: str, config: Callable[[Any], Any], regenerate: str, description: str, argv=None
) -> None:
    """``python -m <module> [--publish]``: compute ``<module>.<func>(config(<module>))`` on one thread, and commit it.

    The function is looked up in the imported package module (not ``__main__``), so the cache key names it.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--publish", action="store_true", help="copy the result to data/ with its manifest entry")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    mod = importlib.import_module(module)
    study, cfg = getattr(mod, func), config(mod)
    study(cfg)
    if args.publish:
        print("published", publish(study.__wrapped__, cfg, regenerate))


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
    identity is ``(name, config, numerics)``: the function's result name (:func:`lib.core.cache.result_name`), the config
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
    """Compute one unit: ``{"value": func(config), "cpu_seconds", "wall_seconds", "machine"}`` (``machine`` names
    the device it trained on). The unit runs in the context of :mod:`lib.core.unit_context`: on
    ``BOOK_UNIT_DEVICE``'s device, checkpointing to ``<unit key>.pt`` in ``BOOK_CHECKPOINT_DIR`` (default
    ``data/paper/.checkpoints``) every ``BOOK_CHECKPOINT_EVERY`` steps and resuming from there when it was stopped;
    the file is removed once the unit is done.

    ``ValueError`` when the code of ``func`` has changed since the unit was defined (a unit keyed by old code must
    not be computed by new code)."""
    if not isinstance(u, StudyUnit):
        raise ValueError(f"run_unit needs a StudyUnit, got {type(u).__name__}")
    func = resolve(u.func)
    if numerics_version(func) != u.numerics:
        raise ValueError(f"the code of {u.func} changed since this unit was defined; define the study again")
    every, device = checkpoint_every(), unit_device()
    check_precision(u, device)
    path = checkpoint_dir() / f"{unit_key(u)}.pt" if every else None
    cpu, wall = time.process_time(), time.perf_counter()
    with unit_running(UnitContext(device, path, every or 1)):
        value = func(u.config)
    if path is not None:
        path.unlink(missing_ok=True)  # the unit is done: its result, not its checkpoint, is what is kept
    return {
        "value": value,
        "cpu_seconds": time.process_time() - cpu,
        "wall_seconds": time.perf_counter() - wall,
        "machine": {**_machine(), **_device_record(device)},
    }


def check_precision(u: StudyUnit, device: str) -> None:
    """Refuse a bfloat16 unit on a CPU that emulates bfloat16 (no AVX-512 BF16, no AMX): there its products run
    many times slower than float32 (0.81 GFLOP/s on a 2-core AVX2 EPYC), and a study's precision is part of its
    definition, so it is never swapped for float32 behind its back. A GPU, or a CPU with the instructions, runs it."""
    precision = getattr(u.config, "precision", None)
    if precision != "bf16" or device.startswith("cuda"):
        return
    from ..core.env import native_bf16

    if not native_bf16():
        raise ValueError(
            f"unit {u.name} of {u.func} trains in bfloat16, which this CPU emulates (no AVX-512 BF16 or AMX): run it "
            "on a CPU that has them or on a GPU (--device cuda)"
        )


def _device_record(device: str) -> dict:
    """The device a unit trained on, with the GPU's name when it was one (CPU and GPU units of one study mix)."""
    if not device.startswith("cuda"):
        return {"device": "cpu"}
    import torch

    return {"device": device, "gpu": torch.cuda.get_device_name(torch.device(device))}

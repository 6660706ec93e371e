r"""Units trained as one stacked run: the members of several units of one shape on the fast trainer's member axis.

A paper-scale study has many units that differ only in their member (seed, task, attention bias): one run each of
the same model, batch, steps and precision. On a GPU one such run leaves most of the device idle; ``K`` of them
stacked on the trainer's member axis :math:`E` (:func:`lib.train.fast_train.run_fast`) cost about one. Each member's
data stream, initialisation and held-out batch are its own seed's, as in its unit alone, and members are
independent (the trainer's loss is a sum of per-member losses), so member :math:`e` of the stack follows its unit's
run to float rounding (the batched products may group sums differently; tested).

The stack's curves are cut back to each unit's own: a unit alone stops at the evaluation at which its member met
``stop_below`` (``steps_run`` is that step), while in a stack a frozen member repeats that evaluation until every
member is done. :func:`split_stack` makes that cut, so a unit's value has the layout and the meaning of
:func:`lib.studies._units.fast_curves` whether it was trained alone or stacked; its record says ``stacked: K``.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, replace

from ..core.cache import _machine, canonical_config
from ..core.unit_context import UnitContext, checkpoint_dir, checkpoint_every, unit_device, unit_running
from ..train.fast_train import FastRunConfig
from ._study import StudyUnit, _device_record, check_precision, resolve, run_unit, unit_key
from ..core.numerics import numerics_version

__all__ = ["UnitStack", "stackable", "make_stacks", "run_stack", "run_task", "split_stack"]

#: The unit function whose units can be stacked.
FAST = "lib.studies._units:fast_curves"


@dataclass(frozen=True)
class UnitStack:
    """Units of one shape, trained as one run (a frozen config: the sweep's task)."""

    units: tuple[StudyUnit, ...]

    def __post_init__(self) -> None:
        if not self.units or len({stackable(u) for u in self.units}) != 1 or stackable(self.units[0]) is None:
            raise ValueError("a UnitStack needs one or more fast-trainer units of one shape (stackable(u) equal)")


def stackable(u: StudyUnit) -> str | None:
    """The shape of a unit that can be stacked: its fast-trainer config without its one member, as canonical JSON
    (None for a unit of another function or of several members)."""
    cfg = u.config
    if u.func != FAST or not isinstance(cfg, FastRunConfig) or len(cfg.run.members) != 1:
        return None
    shape = json.loads(canonical_config(cfg))
    del shape["run"]["members"]
    return json.dumps(shape, sort_keys=True)


def run_task(task):
    """A sweep's task: :func:`run_stack` of a :class:`UnitStack`, :func:`lib.studies._study.run_unit` of a unit."""
    return run_stack(task) if isinstance(task, UnitStack) else run_unit(task)


def make_stacks(units, size: int) -> list:
    """``units`` in their order, those of one shape gathered into :class:`UnitStack` of at most ``size`` (a stack's
    place is its first unit's); units that cannot be stacked stay :class:`StudyUnit`. ``size`` 1: no stacks."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"the stack size must be an int >= 1, got {size!r}")
    if size == 1:
        return list(units)
    out, open_ = [], {}
    for u in units:
        shape = stackable(u)
        if shape is None:
            out.append(u)
            continue
        if shape not in open_ or len(out[open_[shape]]) >= size:
            open_[shape] = len(out)
            out.append([])
        out[open_[shape]].append(u)
    return [UnitStack(tuple(x)) if isinstance(x, list) else x for x in out]


def split_stack(value: dict, member: int, stop_below: float | None) -> dict:
    """Member ``member``'s curves of a stacked run's value (:func:`lib.studies._units.fast_curves`'s layout), cut to
    the run of its unit alone: up to and including the first evaluation at which its predicting loss is below
    ``stop_below`` (then ``steps_run`` is that step), else every evaluation. ``ValueError`` for a non-finite loss
    (a diverged member ends its run alone differently: train it unstacked)."""
    loss = [row[member] for row in value["loss"]]
    pred = [row[member] for row in value["pred_loss"]]
    if not all(math.isfinite(x) for x in loss + pred):
        raise ValueError(f"member {member} of the stack has a non-finite loss: train its unit alone")
    hit = next((k for k, p in enumerate(pred) if stop_below is not None and p < stop_below), None)
    n = len(pred) if hit is None else hit + 1
    return {
        "steps": list(value["steps"][:n]),
        "loss": [[x] for x in loss[:n]],
        "pred_loss": [[x] for x in pred[:n]],
        "steps_run": int(value["steps_run"] if hit is None else value["steps"][hit]),
    }


def run_stack(stack: UnitStack) -> list[dict]:
    """Train the stack's units as one run; per unit, :func:`lib.studies._study.run_unit`'s result (its share of the
    CPU and wall time, the machine, the device, and ``stacked``: the stack's size). Checkpointed and resumed as a
    unit is, under the stack's own file."""
    if not isinstance(stack, UnitStack):
        raise ValueError(f"run_stack needs a UnitStack, got {type(stack).__name__}")
    func = resolve(FAST)
    if any(numerics_version(func) != u.numerics for u in stack.units):
        raise ValueError(f"the code of {FAST} changed since these units were defined; define the study again")
    first = stack.units[0].config
    cfg = FastRunConfig(
        replace(first.run, members=tuple(u.config.run.members[0] for u in stack.units)), first.precision
    )  # E = len(stack.units) members, the first unit's shape
    every, device = checkpoint_every(), unit_device()
    check_precision(stack.units[0], device)
    ident = hashlib.sha256("".join(unit_key(u) for u in stack.units).encode()).hexdigest()[:24]
    path = checkpoint_dir() / f"stack-{ident}.pt" if every else None
    cpu, wall = time.process_time(), time.perf_counter()
    with unit_running(UnitContext(device, path, every or 1)):
        value = func(cfg)
    if path is not None:
        path.unlink(missing_ok=True)
    cpu, wall, K = time.process_time() - cpu, time.perf_counter() - wall, len(stack.units)
    machine = {**_machine(), **_device_record(device), "stacked": K}
    return [
        {
            "value": split_stack(value, e, first.run.stop_below),
            "cpu_seconds": cpu / K,
            "wall_seconds": wall / K,
            "machine": machine,
        }
        for e in range(K)
    ]

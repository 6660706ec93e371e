r"""A numerics-neutral re-key of published paper-scale units: prove that changed code computes the same numbers, then
file the committed units under the new code's keys (``python -m lib.studies equate [NAME ...] [--since REV]``).

A unit's key holds the numerics version of its function (:func:`lib.core.numerics.numerics_version`): any edit of the
code it reaches (the trainer, the model, the unit function itself) gives every unit a new key, and the committed
CPU-hours would be lost to a refactor that changes no number. This module is the way through. For each published
study and each unit function whose numerics version differs between revision ``REV`` (the code that computed the
units, by default ``HEAD``) and the working tree:

1. the numerics version *then* is read from ``REV`` itself (a temporary ``git worktree``, so no record of it is needed);
2. the committed units of that function are found under their keys of then;
3. the cheapest of them computed on a machine like this one (same CPU model and ISA where recorded, same torch
   capability and version) is computed again by the code of now, in a fresh process with one torch thread, as the
   engine computes units;
4. only if the new value equals the committed one *exactly* (every float, after the JSON round trip the record went
   through) are all of that function's committed units re-filed under their new keys; payloads are not touched.

A value that differs in any bit, or no unit to verify on, leaves the study as it was and says why
(:class:`NotNeutral`): a change of numerics must come with the study rerun, as
``tests/test_committed_current.py`` demands. Bit identity is a property of a machine (two CPU models of one ISA differ
in the last bits), hence the choice of the unit to verify; the golden tests (``tests/golden/``) check every trainer's
numbers on any machine to a tolerance, this check the committed ones to the bit on one.

**Units of another CPU model** (``--tolerance TOL``). Where no committed unit of a function was computed on a machine
like this one, but some on the same architecture, torch kernel capability and torch version (another CPU model of
the ISA, whose float results differ in the last bits), the cheapest of those may be recomputed instead and accepted
when every integer of the value (steps, exit steps, counts) is equal and every float within ``TOL`` (absolute). That
is a weaker proof than bit identity, so it is opt-in, and the record says so: each such verification is appended to
the study's ``equated`` list (the function, the unit, the tolerance, the largest difference found and both
machines), which the published record keeps.

**Both codes on this machine** (``--then-here``). Where no committed unit of a function was computed on a machine
like this one (or the cheapest unit's record names no CPU model and its bits differ here), the cheapest committed
unit may instead be computed here twice, by the code of ``REV`` (in its
temporary worktree, a fresh process) and by the code of now; the units are re-filed when the two values are equal
*exactly*. That proves what a re-key needs, that the edit changed no number, on this machine; the committed value
itself was computed elsewhere and is not compared. Also opt-in and recorded in ``equated`` (the unit, both machines,
and the largest difference between the value here and the committed one, for information).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Callable

from ..core.cache import DATA_DIR
from ._paper_scale import (
    PaperStudy,
    _publishing_lock,
    _record_path,
    _write_atomic,
    local_pool,
    published,
)
from ._study import StudyUnit, run_unit, unit_key

__all__ = ["NotNeutral", "equate", "numerics_at", "value_at"]

#: The fields of a unit's recorded machine that decide its float results (``cpus`` does not; ``threads`` is 1).
MACHINE_FIELDS = ("arch", "cpu", "isa", "cpu_capability", "torch")
#: The fields that must still agree for a verification within a tolerance (another CPU model of the same ISA level).
KIN_FIELDS = ("arch", "cpu_capability", "torch")


class NotNeutral(ValueError):
    """The changed code was not shown to compute the committed numbers: the units keep their keys (stale)."""


def _at_revision(root: str | Path, rev: str, script: str, args: list[str], what: str, env: dict | None = None) -> str:
    """The last line ``script`` prints, run with ``args`` by a fresh interpreter in a temporary worktree of git
    revision ``rev`` of the repository at ``root`` (the worktree's ``lib`` comes first on the path)."""
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp) / "then"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(where), rev], cwd=root, check=True, capture_output=True
        )
        try:
            out = subprocess.run(
                [sys.executable, "-c", script, *args],
                cwd=where,
                check=True,
                capture_output=True,
                text=True,
                env=env,
            )
        except subprocess.CalledProcessError as err:
            raise NotNeutral(f"could not {what} at {rev}: {err.stderr[-500:]}") from None
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(where)], cwd=root, capture_output=True)
    return out.stdout.strip().splitlines()[-1]


def numerics_at(root: str | Path, rev: str, funcs: list[str]) -> dict[str, str]:
    """``{func: numerics version}`` of the unit functions ``funcs`` (``"package.module:function"``) as the code stood
    at git revision ``rev`` of the repository at ``root``, read in a temporary worktree by a fresh interpreter."""
    script = (
        "import json, sys\n"
        "from lib.core.numerics import numerics_version\n"
        "from lib.studies._study import resolve\n"
        "print(json.dumps({f: numerics_version(resolve(f)) for f in json.loads(sys.argv[1])}))\n"
    )
    names = json.dumps(sorted(set(funcs)))
    return json.loads(_at_revision(root, rev, script, [names], f"read the numerics of {funcs}"))


def _alike(recorded: dict, here: dict, fields: tuple[str, ...] = MACHINE_FIELDS) -> bool:
    """Whether a unit computed on ``recorded`` can be recomputed bit for bit ``here``: every deciding field that both
    name agrees (an older record without the CPU model is tried; the bit comparison decides). With
    ``fields=KIN_FIELDS``: whether it can be recomputed within a tolerance (another CPU model, same ISA level)."""
    return all(recorded[f] == here[f] for f in fields if f in recorded and f in here)


def _within(a, b, tol: float) -> bool:
    """Whether two JSON values have one shape, equal integers, strings and booleans, and floats within ``tol``."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_within(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_within(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        both = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
        return both and abs(float(a) - float(b)) <= tol
    return type(a) is type(b) and a == b


def _recompute(u: StudyUnit) -> dict:
    """``run_unit(u)`` in a fresh spawned process with one torch thread, as :func:`lib.studies.run_study` runs it,
    on the CPU (the committed units it is compared with were computed there) and without checkpoints."""
    saved = {k: os.environ.get(k) for k in ("BOOK_UNIT_DEVICE", "BOOK_CHECKPOINT_EVERY")}
    os.environ.update(BOOK_UNIT_DEVICE="cpu", BOOK_CHECKPOINT_EVERY="0")  # the spawned worker inherits them
    try:
        with local_pool(1) as pool:
            return pool.submit(run_unit, u).result()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def value_at(root: str | Path, rev: str, study_name: str, index: int) -> dict:
    """The value of unit ``index`` of study ``study_name`` computed by the code of git revision ``rev`` on this
    machine (a temporary worktree, a fresh interpreter with one torch thread), after the JSON round trip."""
    script = (
        "import json, os, sys\n"
        "os.environ['BOOK_PROGRESS'] = '0'\n"
        "import torch\n"
        "torch.set_num_threads(1)\n"
        "from lib.studies.paper import make_study\n"
        "from lib.studies._study import run_unit\n"
        "u = make_study(sys.argv[1]).units[int(sys.argv[2])]\n"
        "print(json.dumps(run_unit(u)['value']))\n"
    )
    env = {**os.environ, "BOOK_CACHE": "0", "BOOK_CHECKPOINT_EVERY": "0", "BOOK_UNIT_DEVICE": "cpu"}
    what = f"compute unit {index} of {study_name}"
    return json.loads(_at_revision(root, rev, script, [study_name, str(index)], what, env=env))


def equate(
    study: PaperStudy,
    numerics_then: Callable[[list[str]], dict[str, str]],
    *,
    data_dir: Path | str = DATA_DIR,
    here: dict | None = None,
    recompute: Callable[[StudyUnit], dict] = _recompute,
    tolerance: float | None = None,
    then_here: Callable[[int], dict] | None = None,
) -> dict:
    """Re-file ``study``'s committed units under the current code's keys where the code computes the same numbers.

    Parameters
    ----------
    study : PaperStudy
        The study as the current code defines it.
    numerics_then : callable
        ``[func, ...] -> {func: numerics version}`` of the code that computed the committed units
        (:func:`numerics_at` of a revision, on the command line).
    here : dict, optional
        This machine as :func:`lib.core.cache._machine` records it (by default, this process's, torch loaded).
    recompute : callable
        ``StudyUnit -> run_unit's result`` (by default in a fresh one-thread process).
    tolerance : float, optional
        Where no committed unit of a function was computed on a machine like this one, verify on one of another CPU
        model of the same ISA level (:data:`KIN_FIELDS`) within this absolute tolerance (module docstring), and
        record it; ``None`` (default): bit identity only.
    then_here : callable, optional
        ``unit index -> value`` computed here by the code that computed the committed units (:func:`value_at`):
        where no committed unit was computed on a machine like this one, the cheapest unit is computed here by both
        codes and must agree exactly (module docstring), and that is recorded.

    Returns
    -------
    dict
        ``{"study", "renamed": number of units re-filed, "verified": [{"func", "unit", "cpu_seconds"}, plus
        "tolerance", "max_diff" where verified within a tolerance], "unchanged": [func whose numerics did not
        change]}``.

    Raises
    ------
    NotNeutral
        If a changed function's recomputed unit differs from its committed value, or none of its committed units was
        computed on a machine like this one; nothing is re-filed then.
    """
    if tolerance is not None and not (isinstance(tolerance, float) and 0.0 <= tolerance < 1e-3):
        raise ValueError(f"tolerance must be a float in [0, 1e-3), got {tolerance!r}")
    record = published(study.name, data_dir)
    if record is None:
        raise ValueError(f"{study.name}: nothing is published to re-key")
    if here is None:
        import torch  # noqa: F401  (the machine record names torch's capability when torch is loaded)

        from ..core.cache import _machine

        here = _machine()
    saved = record["units"]
    by_func: dict[str, list[StudyUnit]] = {}
    for u in study.units:
        by_func.setdefault(u.func, []).append(u)
    then = numerics_then(sorted(by_func))
    renames, verified, unchanged = {}, [], []
    for func, units in by_func.items():
        if then[func] == units[0].numerics:
            unchanged.append(func)
            continue
        present = [(k, u) for k, u in ((unit_key(replace(u, numerics=then[func])), u) for u in units) if k in saved]
        if not present:
            continue
        cheapest = lambda fields: sorted(  # noqa: E731
            [(k, u) for k, u in present if _alike(saved[k]["machine"], here, fields)],
            key=lambda ku: saved[ku[0]]["cpu_seconds"],
        )
        candidates, fields = cheapest(MACHINE_FIELDS), MACHINE_FIELDS
        if not candidates and tolerance is not None:
            candidates, fields = cheapest(KIN_FIELDS), KIN_FIELDS
        if not candidates and then_here is not None:  # both codes here: the committed value is not compared
            candidates, fields = cheapest(KIN_FIELDS), None
        if not candidates:
            raise NotNeutral(
                f"{study.name}: no committed unit of {func} was computed on a machine like this one "
                f"({ {f: here.get(f) for f in MACHINE_FIELDS} }); verify on one that computed them"
                + ("" if tolerance is not None else ", or within a tolerance (--tolerance) on another CPU model")
            )
        key, u = candidates[0]
        got = recompute(u)
        unknown_model = "cpu" not in saved[key]["machine"]  # an older record: its CPU model may not be this one
        differs = json.loads(json.dumps(got["value"])) != saved[key]["value"]
        if fields is MACHINE_FIELDS and unknown_model and differs and then_here is not None:
            fields = None  # the bits may be another CPU model's: compare the two codes here instead
        if fields is None:
            index = study.units.index(u)
            then_value, new = then_here(index), json.loads(json.dumps(got["value"]))
            if new != then_value:
                raise NotNeutral(
                    f"{study.name}: unit {key} of {func} computed here by the code of then and of now differs "
                    f"(max |difference| {_max_diff(new, then_value):.3g}): its numerics changed; rerun the study"
                )
            verified.append(
                {
                    "func": func,
                    "unit": key,
                    "cpu_seconds": round(saved[key]["cpu_seconds"], 1),
                    "method": "then and now computed here, equal to the bit",
                    "committed_max_diff": _max_diff(new, saved[key]["value"]),
                    "then": {f: saved[key]["machine"].get(f) for f in MACHINE_FIELDS},
                    "here": {f: got["machine"].get(f) for f in MACHINE_FIELDS},
                }
            )
            renames.update({k: unit_key(u) for k, u in present})
            continue
        if not _alike(saved[key]["machine"], got["machine"], fields):
            raise NotNeutral(
                f"{study.name}: the cheapest unit of {func} was computed on {saved[key]['machine']}, this machine is "
                f"{got['machine']}: its bits cannot be compared here"
            )
        new = json.loads(json.dumps(got["value"]))  # the JSON round trip the committed value went through
        exact = fields is MACHINE_FIELDS
        if not (new == saved[key]["value"] if exact else _within(new, saved[key]["value"], tolerance)):
            raise NotNeutral(
                f"{study.name}: the code of now computes unit {key} of {func} differently from the committed value "
                f"(max |difference| {_max_diff(new, saved[key]['value']):.3g}"
                + ("" if exact else f", tolerance {tolerance:g}; integers must be equal")
                + "): its numerics changed; rerun the study"
            )
        done = {"func": func, "unit": key, "cpu_seconds": round(saved[key]["cpu_seconds"], 1)}
        if not exact:
            done |= {
                "tolerance": tolerance,
                "max_diff": _max_diff(new, saved[key]["value"]),
                "then": {f: saved[key]["machine"].get(f) for f in MACHINE_FIELDS},
                "here": {f: got["machine"].get(f) for f in MACHINE_FIELDS},
            }
        verified.append(done)
        renames.update({k: unit_key(u) for k, u in present})
    if renames:
        _refile(study, renames, data_dir, [v for v in verified if "tolerance" in v or "method" in v])
    return {"study": study.name, "renamed": len(renames), "verified": verified, "unchanged": unchanged}


def _refile(study: PaperStudy, renames: dict[str, str], data_dir: Path | str, within: list[dict] = ()) -> None:
    """Rename unit keys in the published record, under the publishing lock; every payload byte stays. ``within``:
    verifications within a tolerance, appended to the record's ``equated`` list."""
    from ..core.cache import register_files

    with _publishing_lock(data_dir):
        record = published(study.name, data_dir)
        record["units"] = {renames.get(k, k): v for k, v in record["units"].items()}
        if within:
            record["equated"] = list(record.get("equated", [])) + list(within)
        path = _record_path(study.name, data_dir)
        _write_atomic(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
        register_files([path], study.command, "lib.studies._paper_scale.publish", data_dir=Path(data_dir))


def _max_diff(a, b) -> float:
    """The largest absolute difference between two JSON values of one shape (``inf`` where the shapes differ)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return max((_max_diff(a[k], b[k]) if k in b else float("inf") for k in a), default=0.0)
    if isinstance(a, list) and isinstance(b, list):
        return max((_max_diff(x, y) for x, y in zip(a, b)), default=0.0) if len(a) == len(b) else float("inf")
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b))
    return 0.0 if a == b else float("inf")

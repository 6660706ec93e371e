"""Recompute the cheapest unit of each committed study and compare it, bit for bit, with the committed payload.

Usage::

    python tools/verify_rekey.py fast NAME [NAME ...]   # FAST studies (the whole committed entry)
    python tools/verify_rekey.py paper NAME [NAME ...]  # paper-scale studies (the cheapest committed unit)

Each result is recomputed with the cache off (a fresh ``BOOK_CACHE_DIR``, so no inner cached run is reused) on one
torch thread, and compared exactly: arrays and floats equal to the bit (NaN where NaN), ints, strings, dict keys and
sequence lengths equal; timing fields (:data:`TIMINGS`) are skipped. A committed result made on another CPU
capability than this machine's is reported and skipped (floats differ across kernels), unless ``--any-capability``.
One line per study: name, equal or the first difference, CPU seconds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ["BOOK_CACHE_DIR"] = tempfile.mkdtemp(prefix="verify-rekey-")
os.environ.setdefault("BOOK_PROGRESS", "0")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)

import lib  # noqa: E402,F401

#: Fields that are measured wall or CPU time, not numerics (``linear_scaling`` times its own runs): never compared.
TIMINGS = frozenset({"seconds", "cpu_seconds", "wall_seconds"})
from lib.core import cache  # noqa: E402
from lib.core.env import DATA_DIR  # noqa: E402

#: The committed configs of the FAST studies, as their modules publish them.
FAST = {
    "context_study": "lib.studies.context_study:ContextStudyConfig.fast()",
    "emergence_runs": "lib.studies.emergence_runs:EmergenceRunsConfig.fast()",
    "mixer_tuning": "lib.studies.mixer_tuning:MixerTuningConfig.fast()",
    "mixer_comparison": "lib.studies.mixer_comparison:MixerComparisonConfig.fast()",
    "scan_replicas": "lib.studies.scan_replicas:ScanReplicasConfig.fast()",
    "adam_replicas": "lib.studies.adam_replicas:AdamReplicasConfig.fast()",
    "linear_scaling": "lib.studies.linear_scaling:LinearScalingConfig()",
    "sparsity_study": "lib.studies.sparsity_study:SparsityStudyConfig.fast()",
    "width_study": "lib.studies.width_study:WidthStudyConfig()",
    "mixer_study": "lib.studies.mixer_study:MixerStudyConfig(arch='{arch}')",
}


def difference(a, b, where: str = "") -> str | None:
    """The first place where ``a`` and ``b`` differ (None when equal to the bit)."""
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().numpy()
    if isinstance(b, torch.Tensor):
        b = b.detach().cpu().numpy()
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{where}: shape/dtype {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
        if a.dtype.kind in "fc":
            same = (a == b) | (np.isnan(a) & np.isnan(b))
        else:
            same = a == b
        if not np.all(same):
            i = np.argwhere(~same)[0]
            return f"{where}{list(i)}: {a[tuple(i)]!r} vs {b[tuple(i)]!r} ({int((~same).sum())} entries differ)"
        return None
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        if type(a) is not type(b):
            return f"{where}: {type(a).__name__} vs {type(b).__name__}"
        for f in dataclasses.fields(a):
            if f.name in TIMINGS:
                continue
            d = difference(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
            if d:
                return d
        return None
    if isinstance(a, dict):
        if not isinstance(b, dict) or sorted(a, key=repr) != sorted(b, key=repr):
            return f"{where}: keys {list(a)[:5]} vs {list(b)[:5] if isinstance(b, dict) else type(b).__name__}"
        for k in a:
            if k in TIMINGS:
                continue
            d = difference(a[k], b[k], f"{where}[{k!r}]")
            if d:
                return d
        return None
    if isinstance(a, (list, tuple)):
        if not isinstance(b, (list, tuple)) or len(a) != len(b):
            return f"{where}: length {len(a)} vs {len(b) if isinstance(b, (list, tuple)) else type(b).__name__}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = difference(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return None
    if a != b:
        return f"{where}: {a!r} vs {b!r}"
    return None


def _config(expr: str):
    module, _, rest = expr.partition(":")
    import importlib

    return eval(rest, vars(importlib.import_module(module)))


def _header(path: Path) -> dict:
    raw = path.read_bytes()
    return json.loads(raw[len(cache.MAGIC) : raw.index(b"\n", len(cache.MAGIC))])


def verify_fast(name: str, any_capability: bool) -> str:
    func = cache.result_function(name)
    entries = {_header(p)["config"]: (p, _header(p)) for p in (DATA_DIR / "cache" / name).glob("*.pkl")}
    if name == "mixer_study":  # the cheapest architecture
        from lib.models import ARCHITECTURES

        cands = [_config(FAST[name].format(arch=a)) for a in ARCHITECTURES]
        cands = [c for c in cands if cache.canonical_config(c) in entries]
        config = min(cands, key=lambda c: entries[cache.canonical_config(c)][1]["cost"]["cpu_seconds"])
    else:
        config = _config(FAST[name])
    canon = cache.canonical_config(config)
    if canon not in entries:
        return f"{name}: no committed entry for its published config"
    _, header = entries[canon]
    here = torch.backends.cpu.get_cpu_capability()
    if header["machine"].get("cpu_capability") != here and not any_capability:
        return f"{name}: committed on {header['machine'].get('cpu_capability')}, this machine is {here}; skipped"
    ok, committed = cache.load_committed(func, config)
    assert ok, f"{name}: committed entry does not load"
    t = time.process_time()
    fresh = func(config)
    cpu = time.process_time() - t
    d = difference(committed, fresh)
    return f"{name}: {'bit-identical' if d is None else 'DIFFERS ' + d} ({cpu:.0f} CPU-s; committed {header['cost']['cpu_seconds']})"


def verify_paper(name: str, any_capability: bool) -> str:
    from lib.studies._paper_scale import published
    from lib.studies.paper import make_study
    from lib.studies._study import run_unit, unit_key

    record = published(name, DATA_DIR)
    here = torch.backends.cpu.get_cpu_capability()
    units = [
        (record["units"][unit_key(u)], u) for u in make_study(name, DATA_DIR).units if unit_key(u) in record["units"]
    ]
    units = [(rec, u) for rec, u in units if any_capability or rec["machine"]["cpu_capability"] == here]
    if not units:
        return f"{name}: no committed unit of this machine's capability ({here})"
    rec, u = min(units, key=lambda x: x[0]["cpu_seconds"])
    out = run_unit(u)
    fresh = json.loads(json.dumps(out["value"]))  # as published: through JSON
    d = difference(rec["value"], fresh)
    return f"{name} unit {unit_key(u)}: {'bit-identical' if d is None else 'DIFFERS ' + d} ({out['cpu_seconds']:.0f} CPU-s; committed {rec['cpu_seconds']:.0f})"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kind", choices=("fast", "paper"))
    parser.add_argument("names", nargs="+")
    parser.add_argument("--any-capability", action="store_true")
    args = parser.parse_args(argv)
    print(f"cpu capability {torch.backends.cpu.get_cpu_capability()}, torch {torch.__version__}", flush=True)
    for name in args.names:
        print(
            verify_fast(name, args.any_capability) if args.kind == "fast" else verify_paper(name, args.any_capability),
            flush=True,
        )


if __name__ == "__main__":
    main()

"""Write, check or measure the golden-numerics references (never run by the tests).

From the repository root::

    .venv/bin/python -m tests.golden.regen [CASE ...]             # rewrite data/<case>.json (default: every case)
    .venv/bin/python -m tests.golden.regen --check [CASE ...]     # compare with the committed files, write nothing
    .venv/bin/python -m tests.golden.regen --measure [CASE ...]   # deviations across CPU kernels, and of a perturbation

Writing computes every case twice in this process and refuses to write one whose two runs differ in any bit (a case
must be deterministic at its seeds). ``--measure`` runs the cases in fresh processes under each setting of
:data:`VARIANTS` (the environment variables must be set before torch is imported), compares each with the committed
goldens and prints, per case, the largest deviation (the smallest ``rtol`` it would pass at), the case's ``rtol``,
and the smallest deviation that the learning-rate perturbation of :func:`golden_cases.perturb_lr` causes on the
native kernels (what a real change looks like). Pick a case's ``rtol`` between the two, with a margin to both sides,
and record the table in ``tests/golden/test_golden.py``'s docstring.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("BOOK_CACHE", "0")  # the cases bypass the results cache anyway (cache=False / run_*)
os.environ.setdefault("BOOK_PROGRESS", "0")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # transformers' save_pretrained bars

#: The CPU-kernel settings ``--measure`` runs under: torch's own dispatch (ATEN_CPU_CAPABILITY), oneDNN's (the
#: bfloat16 products) capped to AVX-512 without its bfloat16 instructions, and all of torch's, MKL's (float32
#: products) and oneDNN's capped to AVX2 or to the portable kernels, as on a machine without AVX-512.
KERNEL_VARS = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")
VARIANTS = {
    "native": {},
    "default": {"ATEN_CPU_CAPABILITY": "default"},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "avx512-nobf16": {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE"},
    "avx2-all": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "default-all": {
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
    },
}


def _cases():
    from tests.golden import golden_cases

    return golden_cases


def _summary_json(summary) -> dict:
    return {q: {"scale": float(v.scale), "values": [float(x) for x in v.values]} for q, v in summary.items()}


def _summary_from_json(data: dict):
    import numpy as np

    g = _cases()
    return {q: g.Quantity(np.array(v["values"], dtype=np.float64), float(v["scale"])) for q, v in data.items()}


def write(names: list[str]) -> None:
    g = _cases()
    g.DATA.mkdir(parents=True, exist_ok=True)
    for name in names:
        t0 = time.perf_counter()
        a = g.CASES[name].compute()
        seconds = time.perf_counter() - t0
        if not g.same_bits(a, g.CASES[name].compute()):
            raise SystemExit(f"{name}: two runs in one process differ; not writing a golden of a nondeterministic case")
        g.path(name).write_text(g.to_json(name, a), encoding="utf-8")
        print(f"wrote {g.path(name).relative_to(ROOT)} ({len(a)} quantities, {seconds:.2f} s, deterministic)")


def check(names: list[str]) -> int:
    g = _cases()
    failed = 0
    for name in names:
        golden, actual = g.load(name)["quantities"], g.CASES[name].compute()
        mismatches, dev = g.compare(name, golden, actual), g.deviations(golden, actual)
        worst = max(dev, key=dev.get)
        print(
            f"{name:28s} max deviation {dev[worst]:.3g} ({worst}), rtol {g.CASES[name].rtol:g}: "
            f"{'ok' if not mismatches else f'{len(mismatches)} mismatch(es)'}"
        )
        failed += bool(mismatches)
    return 1 if failed else 0


def dump(out: Path, names: list[str]) -> None:
    """Compute every case (and its learning-rate perturbation) here; write the summaries and timings to ``out``."""
    g = _cases()
    result = {"environment": g.environment(), "cases": {}, "perturbed": {}, "seconds": {}}
    for name in names:
        case = g.CASES[name]
        t0 = time.perf_counter()
        result["cases"][name] = _summary_json(case.compute())
        result["seconds"][name] = time.perf_counter() - t0
        result["perturbed"][name] = _summary_json(case.compute(g.perturb_lr(case.make())))
    out.write_text(json.dumps(result), encoding="utf-8")


def measure(names: list[str]) -> None:
    g = _cases()
    base = {k: v for k, v in os.environ.items() if k not in KERNEL_VARS}
    base.update(OMP_NUM_THREADS="1", BOOK_CACHE="0", BOOK_PROGRESS="0")
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for variant, extra in VARIANTS.items():
            out = Path(tmp) / f"{variant}.json"
            subprocess.run(
                [sys.executable, "-m", "tests.golden.regen", "--dump", str(out), *names],
                cwd=ROOT,
                env={**base, **extra},
                check=True,
            )
            runs[variant] = json.loads(out.read_text(encoding="utf-8"))
            print(f"{variant}: {runs[variant]['environment']}", file=sys.stderr)
    print("largest deviation |actual - golden| / max(|golden|, scale) over each case's quantities:")
    print(f"{'case':26s} " + " ".join(f"{v:>11s}" for v in VARIANTS) + f" {'lr x1.001':>9s} {'s':>5s}")
    ratios = {}
    for name in names:
        golden, case = g.load(name)["quantities"], g.CASES[name]
        devs = {v: g.deviations(golden, _summary_from_json(runs[v]["cases"][name])) for v in VARIANTS}
        pert = g.deviations(golden, _summary_from_json(runs["native"]["perturbed"][name]))
        secs = max(runs[v]["seconds"][name] for v in VARIANTS)
        print(
            f"{name:26s} "
            + " ".join(f"{max(d.values()):11.2g}" for d in devs.values())
            + f" {max(pert.values()):9.2g} {secs:5.2f}"
        )
        worst = max(((d[q] / case.tolerance(q), q, v) for v, d in devs.items() for q in d), default=(0, "", ""))
        moved = max((pert[q] / case.tolerance(q), q) for q in pert)
        ratios[name] = (worst, moved)
    print(
        "in units of each quantity's tolerance (rtol_q): the worst kernel setting (must stay < 1) and the "
        "perturbation (must exceed 1):"
    )
    for name, ((w, wq, wv), (m, mq)) in ratios.items():
        print(f"{name:26s} kernels {w:9.2g} ({wq}, {wv})   lr x1.001 {m:9.3g} ({mq})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.golden.regen", description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare with the committed goldens; write nothing")
    mode.add_argument(
        "--measure", action="store_true", help="deviations across CPU-kernel settings and of a perturbation"
    )
    mode.add_argument("--dump", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    g = _cases()
    unknown = [n for n in args.cases if n not in g.CASES]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; the cases are {list(g.CASES)}")
    names = args.cases or list(g.CASES)
    import torch

    torch.set_num_threads(1)
    if args.dump:
        dump(args.dump, names)
    elif args.measure:
        measure(names)
    elif args.check:
        return check(names)
    else:
        write(names)
    return 0


if __name__ == "__main__":
    sys.exit(main())

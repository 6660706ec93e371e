"""``python -m lib.studies``: the paper-scale studies' command line, and the one-time re-key of data/.

Usage::

    python -m lib.studies list                   # the registered paper-scale studies and what is published
    python -m lib.studies run NAME [--scheduler tcp://HOST:PORT] [--workers N] [--limit K | --only I,J]
                                 [--device auto|cpu|cuda] [--stack K] [--checkpoint-every N]
    python -m lib.studies run NAME@K ...         # the same study with every seed moved by K (a second seed set)
    python -m lib.studies publish NAME           # publish what the results cache holds (computes nothing)
    python -m lib.studies equate [NAME ...] [--since REV] [--tolerance TOL | --then-here]  # re-key
    python -m lib.studies rekey --legacy-root DIR  # cache format 1 -> 2 (lib.studies.rekey; done, idempotent)
"""

from __future__ import annotations

import argparse
import json
import sys

from ._paper_scale import UnreadableStudy, publish, published, run_study
from .paper import SEEDED, STUDIES, make_study, seed_sets, split_name
from .rekey import rekey


def _study_name(name: str) -> str:
    try:
        split_name(name)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return name


def _indices(text: str) -> list[int]:
    """``"3,5,7"`` -> ``[3, 5, 7]`` (``--only``)."""
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--only takes unit indices like 3,5,7, got {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    """The command line (module docstring); the studies are :data:`lib.studies.paper.STUDIES`."""
    parser = argparse.ArgumentParser(prog="python -m lib.studies", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the registered studies and what is published of each")
    run = sub.add_parser("run", help="run (or resume) a study and publish what is done")
    run.add_argument("name", type=_study_name, help=f"one of {sorted(STUDIES)}; NAME@K for {list(SEEDED)}")
    run.add_argument("--scheduler", default=None, help="a dask scheduler, tcp://HOST:PORT (default: a local pool)")
    run.add_argument("--workers", type=int, default=None, help="local pool size")
    run.add_argument("--limit", type=int, default=None, help="run only the first K units")
    run.add_argument(
        "--only",
        type=_indices,
        default=None,
        help="run only the units at these indices, I,J,... (0-based, study order)",
    )
    run.add_argument(
        "--device",
        default=None,
        help="where units of the fast trainer train: auto (CUDA when present; the default), cpu, cuda or cuda:N",
    )
    run.add_argument(
        "--stack",
        type=int,
        default=1,
        help="train up to K units of one shape as one run on the member axis (for a GPU; default 1: each alone)",
    )
    run.add_argument(
        "--checkpoint-every",
        type=int,
        default=None,
        help="optimiser steps between a unit's checkpoints (default 500; 0: none); a stopped unit resumes from its last",
    )
    pub = sub.add_parser("publish", help="publish what the results cache holds (computes nothing)")
    pub.add_argument("name", type=_study_name)
    eq = sub.add_parser("equate", help="re-key committed units after a refactor shown to change no number")
    eq.add_argument("names", nargs="*", type=_study_name, help="studies (default: every published one)")
    eq.add_argument("--since", default="HEAD", help="the git revision whose code computed the units (default HEAD)")
    eq.add_argument(
        "--tolerance",
        type=float,
        default=None,
        help="verify on a unit of another CPU model of the same ISA level within this absolute tolerance (recorded)",
    )
    eq.add_argument(
        "--then-here",
        action="store_true",
        help="where no unit was computed on a machine like this one, compute the cheapest by the code of --since and "
        "of now, here, and require equal bits (recorded)",
    )
    rk = sub.add_parser("rekey", help="re-key data/ from cache format 1 to format 2 (idempotent)")
    rk.add_argument("--legacy-root", required=True, help="a checkout of the last format-1 commit (132c8b1)")
    args = parser.parse_args(argv)
    if args.cmd == "rekey":
        for line in rekey(args.legacy_root):
            print(line)
        return 0
    if args.cmd == "equate":
        from pathlib import Path

        from ..core.env import DATA_DIR
        from ._equate import NotNeutral, equate, numerics_at, value_at

        root = Path(__file__).resolve().parents[2]
        names = args.names or sorted(p.stem for p in (Path(DATA_DIR) / "paper").glob("*.json"))
        failed = 0
        for name in names:
            try:
                then_here = (lambda i, name=name: value_at(root, args.since, name, i)) if args.then_here else None
                out = equate(
                    make_study(name),
                    lambda funcs: numerics_at(root, args.since, funcs),
                    tolerance=args.tolerance,
                    then_here=then_here,
                )
            except (NotNeutral, RuntimeError) as err:  # RuntimeError: a study defined by another's committed units
                failed += 1
                print(f"{name}: NOT re-keyed. {err}")
                continue
            print(json.dumps(out))
        return 1 if failed else 0
    if args.cmd == "list":
        for name in [n for base in sorted(STUDIES) for n in [base] + [f"{base}@{k}" for k in seed_sets(base)]]:
            try:
                got = published(name)
            except UnreadableStudy as err:
                print(f"{name}: UNREADABLE. {err}")
                continue
            print(
                f"{name}: "
                + (f"{got['done']} of {got['of']} units, {got['cpu_hours']} CPU-hours" if got else "not run")
            )
        return 0
    if args.cmd == "publish":
        record = publish(make_study(args.name))
    else:
        import os

        from ..core.unit_context import checkpoint_every, unit_device

        if args.device is not None:  # the workers inherit the environment
            os.environ["BOOK_UNIT_DEVICE"] = args.device
        if args.checkpoint_every is not None:
            os.environ["BOOK_CHECKPOINT_EVERY"] = str(args.checkpoint_every)
        try:
            device, every = unit_device(), checkpoint_every()
        except ValueError as err:
            parser.error(str(err))
        print(
            f"{args.name}: units of the fast trainer on {device}, "
            + (f"a checkpoint every {every} steps" if every else "no checkpoints"),
            file=sys.stderr,
        )
        record = run_study(
            make_study(args.name),
            scheduler=args.scheduler,
            workers=args.workers,
            limit=args.limit,
            only=args.only,
            stack=args.stack,
        )
    print(json.dumps({k: record[k] for k in ("study", "done", "of", "cpu_hours", "cpu_capability")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

r"""How long the linear map's plateau lasts at paper B's configuration, against the choices the paper leaves open.

Paper B trains its linear-map transformer (S = 16 input bits, s = 3 ones per row, one layer, ``d_model`` 128 in 8
heads, MLP 512, 8,192 tokens per step, lr 1e-3) and sees the loss leave its plateau within a few thousand steps; an
independent PyTorch reproduction of the same setting (AdamW, weight decay 0.01, PyTorch's default initialisation)
sees it leave after 800-4,200 steps. Our trainer's defaults differ from those in choices the paper does not state:
GPT-2's initialisation :math:`\mathcal N(0, 0.02^2)` with residual scaling (PyTorch's ``nn.Linear`` default at width
128 has a standard deviation of about 0.05), Adam with :math:`\beta_2 = 0.98` and no weight decay, and the rows of
the map drawn distinct. This study measures the plateau exit (the first held-out evaluation whose output-bit loss
falls below the exit threshold, :data:`lib.LINEAR_MAP_EXIT`) for each choice changed alone against the default, and
for all of the reproduction's choices together, each arm a stack of the same seeds:

========================  =================================================================================
arm                       change against the default (``GPTRunConfig``'s)
========================  =================================================================================
``default``               none: GPT-2 init (std 0.02, residual scaling), Adam (0.9, 0.98), distinct rows
``init_std_0.05``         GPT-2 init with std 0.05 (PyTorch's scale at this width)
``init_std_0.1``          GPT-2 init with std 0.1
``torch_init``            PyTorch's module defaults (:class:`lib.models.GPTConfig` ``init="torch"``)
``adamw``                 AdamW, betas (0.9, 0.999), weight decay 0.01 (PyTorch's AdamW with the reproduction's decay)
``free_rows``             rows of the map drawn independently (``distinct=False``; repeated rows allowed)
``reproduction``          ``torch_init`` + ``adamw`` + ``free_rows``
========================  =================================================================================

Positional encoding (learned here) is the fourth open choice; the book's GPT has only learned positions, so it is
not an arm. A member is frozen at its exit (``stop_below``), and an arm ends when all its seeds have exited, so
arms that leave the plateau cost less than the step budget.

At paper scale (:meth:`PlateauCalibrationConfig.paper`) the study costs up to 15 CPU-hours (about 0.35-0.4
CPU-seconds per member-step on a 2-core AVX-512 machine, 5,000 steps, 28 members); the committed study runs at the
CPU scale of independent runs of the same map (:meth:`~PlateauCalibrationConfig.cpu`, about a sixth of that per
member-step); :meth:`~PlateauCalibrationConfig.fast` is a small model on a small map, for tests.
Each arm is one cached run of :func:`lib.train.train_gpt`, run through :func:`lib.studies._sweep.run_sweep`, so an
interrupted study resumes where it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.cache import Cache, cached
from ._sweep import run_sweep
from ..tasks.linear_map import LinearMapTask
from ..train.gpt_train import GPTRunConfig, Member, train_gpt
from ..measures.curves import first_below
from ..core.validate import check_positive, check_size
from ._study import load_or_compute

__all__ = [
    "ARMS",
    "PlateauCalibrationConfig",
    "PlateauCalibration",
    "plateau_calibration",
    "load_plateau_calibration",
    "REGENERATE",
]

REGENERATE = "python -m lib.studies.plateau_calibration --publish"

#: Each arm: the fields of ``GPTRunConfig`` (and the map's ``distinct``) it changes against the default.
ARMS: dict[str, dict] = {
    "default": {},
    "init_std_0.05": {"init_std": 0.05},
    "init_std_0.1": {"init_std": 0.1},
    "torch_init": {"init": "torch"},
    "adamw": {"betas": (0.9, 0.999), "weight_decay": 0.01},
    "free_rows": {"distinct": False},
    "reproduction": {"init": "torch", "betas": (0.9, 0.999), "weight_decay": 0.01, "distinct": False},
}


@dataclass(frozen=True)
class PlateauCalibrationConfig:
    """One stack per arm of :data:`ARMS` (names in ``arms``), each over ``seeds``; the rest is the paper's setting.

    ``exit_below`` is the plateau-exit threshold on the held-out output-bit loss (:data:`lib.LINEAR_MAP_EXIT`; a test
    checks they agree) and the freezing criterion (``stop_below``).
    """

    arms: tuple[str, ...] = tuple(ARMS)
    seeds: tuple[int, ...] = (0, 1, 2, 3)
    S: int = 16
    s: int = 3
    map_seed: int = 0
    n_heads: int = 8
    d_head: int = 16
    d_mlp: int | None = 512
    tokens_per_step: int = 8192
    steps: int = 5000
    lr: float = 1e-3
    eval_every: int = 50
    eval_tokens: int = 8192
    exit_below: float = 0.55

    def __post_init__(self) -> None:
        unknown = [a for a in self.arms if a not in ARMS]
        if not self.arms or unknown or len(set(self.arms)) != len(self.arms):
            raise ValueError(f"arms must be distinct names from {tuple(ARMS)}, got {self.arms!r}")
        if len(self.seeds) < 2 or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must hold at least two distinct seeds, got {self.seeds!r}")
        check_size("S", self.S, 2)
        check_size("s", self.s, 1)
        check_positive("exit_below", self.exit_below)

    @classmethod
    def fast(cls) -> "PlateauCalibrationConfig":
        """A small model (``d_model`` 32) on a small map (S = 6, s = 2): the code path, not the paper's numbers."""
        return cls(
            seeds=(0, 1),
            S=6,
            s=2,
            n_heads=4,
            d_head=8,
            d_mlp=None,
            tokens_per_step=512,
            steps=400,
            lr=3e-3,
            eval_every=25,
            eval_tokens=1024,
        )

    @classmethod
    def cpu(cls, seeds: tuple[int, ...] = (0, 1, 2, 3)) -> "PlateauCalibrationConfig":
        """The same map at the CPU scale of the independent runs of paper B's reference (experiment A): ``d_model``
        64 in 8 heads of 8, MLP 256, 64 sequences (2,048 tokens) per step, lr 3e-3, 5,000 steps; those runs left the
        plateau at about 1,100 / 2,800 / 900 steps (seeds 0 / 1 / 2) with PyTorch's initialisation and Adam (0.9, 0.98).
        About a sixth of the paper configuration's cost per member-step."""
        return cls(seeds=seeds, n_heads=8, d_head=8, d_mlp=256, tokens_per_step=2048, lr=3e-3)

    @classmethod
    def paper(cls, seeds: tuple[int, ...] = (0, 1, 2, 3)) -> "PlateauCalibrationConfig":
        """Paper B's linear map at its own configuration, 5,000 steps (the defaults)."""
        return cls(seeds=seeds)

    @classmethod
    def paper_check(cls, seeds: tuple[int, ...]) -> "PlateauCalibrationConfig":
        """The paper-scale default's arm alone (PyTorch's initialisation, :mod:`lib.studies.paper_defaults`) at paper
        B's configuration on ``seeds`` not used before: does the new default leave the plateau within 5,000 steps?"""
        return cls(arms=("torch_init",), seeds=seeds)

    def run(self, arm: str) -> GPTRunConfig:
        """The stack of one arm: one member per seed on the same map."""
        change = dict(ARMS[arm])
        task = LinearMapTask(self.S, self.s, seed=self.map_seed, distinct=change.pop("distinct", True))
        return GPTRunConfig(
            members=tuple(Member(task, seed=k) for k in self.seeds),
            n_heads=self.n_heads,
            d_head=self.d_head,
            d_mlp=self.d_mlp,
            tokens_per_step=self.tokens_per_step,
            steps=self.steps,
            lr=self.lr,
            eval_every=self.eval_every,
            eval_tokens=self.eval_tokens,
            stop_below=self.exit_below,
            **change,
        )


@dataclass
class PlateauCalibration:
    """Per arm: the evaluation steps ``steps[arm]`` ``(K,)`` and held-out output-bit loss ``pred_loss[arm]`` ``(K, E)``
    (a frozen member repeats its last evaluation), and the plateau exit per seed, ``exits[arm]`` ``(E,)`` (``inf``:
    still on the plateau at the step budget)."""

    config: PlateauCalibrationConfig
    steps: dict[str, np.ndarray]
    pred_loss: dict[str, np.ndarray]
    exits: dict[str, np.ndarray]

    def exited(self, arm: str) -> int:
        """How many seeds of ``arm`` left the plateau within the budget."""
        return int(np.isfinite(self.exits[arm]).sum())

    def median_exit(self, arm: str) -> float:
        """Median exit over seeds, counting a seed still on the plateau at the budget (a lower bound on its exit)."""
        return float(np.median(np.where(np.isfinite(self.exits[arm]), self.exits[arm], self.config.steps)))

    def table(self) -> str:
        """One line per arm: exits per seed, how many exited, the median (censored at the budget)."""
        rows = [f"{'arm':<16} {'exits per seed':<32} exited  median"]
        for arm in self.config.arms:
            ex = " ".join("never" if not np.isfinite(e) else f"{e:.0f}" for e in self.exits[arm])
            rows.append(
                f"{arm:<16} {ex:<32} {self.exited(arm)}/{len(self.config.seeds)}     {self.median_exit(arm):.0f}"
            )
        return "\n".join(rows)


@cached
def plateau_calibration(config: PlateauCalibrationConfig, *, max_workers: int | None = None) -> PlateauCalibration:
    """Train every arm of ``config`` (one cached :func:`lib.train.train_gpt` stack each, on a process pool through
    :func:`lib.studies._sweep.run_sweep`, so an interrupted study resumes) and read each seed's plateau exit."""
    if not isinstance(config, PlateauCalibrationConfig):
        raise ValueError(f"config must be a PlateauCalibrationConfig, got {type(config).__name__}")
    sweep = run_sweep(
        train_gpt, [config.run(a) for a in config.arms], max_workers=max_workers, desc="plateau calibration"
    )
    runs = dict(zip(config.arms, sweep.results))
    return PlateauCalibration(
        config=config,
        steps={a: r.steps for a, r in runs.items()},
        pred_loss={a: r.pred_loss for a, r in runs.items()},
        exits={
            a: np.asarray(first_below(r.steps, r.pred_loss, config.exit_below), dtype=float) for a, r in runs.items()
        },
    )


def load_plateau_calibration(
    config: PlateauCalibrationConfig, *, compute: bool = False, cache: Cache | None = None
) -> PlateauCalibration:
    """The committed calibration for ``config`` (verified against the code), else computed if ``compute``."""
    cost = "about 1.5 CPU-hours at the CPU scale, up to 15 at paper scale"
    return load_or_compute(
        plateau_calibration,
        config,
        compute=compute,
        regenerate=f"{REGENERATE} --scale cpu|paper",
        cost=cost,
        cache=cache,
    )


def _main(argv=None) -> None:
    """``python -m lib.studies.plateau_calibration [--scale cpu|paper] [--publish]``."""
    import argparse
    import importlib

    import torch

    from ..core.cache import publish

    parser = argparse.ArgumentParser(description="Measure the linear map's plateau exit per open choice.")
    parser.add_argument(
        "--scale",
        choices=("cpu", "paper"),
        default="paper",
        help="paper: paper B's configuration (hours of CPU); cpu: the independent CPU-scale runs'",
    )
    parser.add_argument("--publish", action="store_true", help="copy the result to data/ with its manifest entry")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    mod = importlib.import_module("lib.studies.plateau_calibration")  # not __main__: the cache key names the module
    cfg = getattr(mod.PlateauCalibrationConfig, args.scale)()
    print(mod.plateau_calibration(cfg).table())
    if args.publish:
        print("published", publish(mod.plateau_calibration.__wrapped__, cfg, f"{REGENERATE} --scale {args.scale}"))


if __name__ == "__main__":
    _main()

r"""``b-mixer-tuning`` and ``b-mixer``: chapter 7's B-mixer at the paper's scale, transformer against MLP-Mixer.

(:meth:`lib.MixerComparisonConfig.paper`: the linear map at S = 16, s = 3, 5, 7, width 128 as 8 heads of 16, MLP 512,
8,192 tokens per step.) The tuning applies chapter 7's rule (:func:`lib.studies.mixer_tuning.mixer_tuning`) to both
architectures: every rate of the paper-scale grid (3e-4, 1e-3, 3e-3, 1e-2) at every sparsity, 3,000 steps from the
tuning seed, scored by the mean held-out output-bit loss over the budget averaged over the sparsities; the lowest
score chooses the rate. The comparison then trains both on the three evaluation seeds for 10,000 steps at the chosen
rates (its units exist only once the tuning is complete and committed: :data:`lib.studies.paper.STAGED`) and measures
chapter 7's ratio of seed-averaged curves with its control. One unit per (architecture, sparsity, rate) and per
(sparsity, architecture, seed), each a single member on the reference trainer
(:func:`lib.studies._units.reference_curves`), float32. A unit stops once its held-out loss is solved and repeats its
last evaluation to the budget, as a frozen member of chapter 7's stacks does.

Both start from PyTorch's default initialisation (:data:`lib.studies.paper_defaults.LINEAR_MAP_INIT`), as every
linear-map study at paper scale does; ``b-mixer-tuning-gpt2`` and ``b-mixer-gpt2`` are the same two stages from the
trainer's default initialisation (``"gpt2"``: normal, sigma = 0.02); they measure no claim and are shown as the contrast.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ...core.cache import DATA_DIR, Cache
from ...measures.comparisons import LINEAR_MAP_EXIT
from ...train.gpt_train import Member
from .._paper_scale import PaperStudy, publish, published
from .._study import unit
from ..mixer_comparison import MixerComparisonConfig
from ..mixer_tuning import mean_loss_over_budget
from ..paper_defaults import LINEAR_MAP_INIT


#: The two architectures of ``b-mixer-tuning`` and ``b-mixer`` (B-mixer compares them).
MIXER_ARCHS = ("attention", "mlp_mixer")


def _mixer_tuning_keys() -> list[tuple[str, int, float]]:
    """``(arch, s, lr)`` of every ``b-mixer-tuning`` unit, in the order they are run."""
    t = MixerComparisonConfig.paper().tuning
    return [(arch, s, lr) for arch in MIXER_ARCHS for s in t.lm_s for lr in t.lrs]


def _mixer_tuning_units(init: str):
    t = MixerComparisonConfig.paper().tuning
    out = []
    for arch, s, lr in _mixer_tuning_keys():
        stack = t.run_config(arch, "linear map")  # every (s, lr) of the grid in one stack; a unit holds one of them
        out.append(
            unit(
                "lib.studies._units:reference_curves",
                replace(stack, members=(Member(t.lm_task(s), seed=t.tune_seed),), lr=lr, init=init),
            )
        )
    return tuple(out)


def mixer_tuning_summary(values) -> dict:
    """Per unit (in the study's order; ``None``: not done) -> the published summary of ``b-mixer-tuning``: per
    architecture the score of each rate (chapter 7's rule, :func:`lib.studies.mixer_tuning.mean_loss_over_budget`
    averaged over the sparsities; ``null`` until every sparsity of that rate is done), the rate with the lowest
    score (``null`` until every rate is scored), and per rate the sparsities at which the run left the plateau within
    the budget (its output-bit loss below :data:`lib.LINEAR_MAP_EXIT` at some evaluation): a rate's score differs from
    the plateau's by noise alone when that list is empty."""
    keys = _mixer_tuning_keys()
    if len(values) != len(keys):
        raise ValueError(f"need {len(keys)} unit values, got {len(values)}")
    t = MixerComparisonConfig.paper().tuning
    by = dict(zip(keys, values))
    out = {"lrs": list(t.lrs), "sparsities": list(t.lm_s), "budget": t.lm_steps, "archs": {}}
    for arch in MIXER_ARCHS:
        scores = []
        for lr in t.lrs:
            runs = [by[arch, s, lr] for s in t.lm_s]
            scores.append(
                None
                if None in runs
                else float(np.mean([mean_loss_over_budget(v["pred_loss"], t.lm_steps, t.eval_every)[0] for v in runs]))
            )
        best = None if None in scores else t.lrs[int(np.argmin(scores))]
        left = [
            [
                s
                for s in t.lm_s
                if by[arch, s, lr] is not None and float(np.min(by[arch, s, lr]["pred_loss"])) < LINEAR_MAP_EXIT
            ]
            for lr in t.lrs
        ]
        out["archs"][arch] = {
            "scores": scores,
            "best_lr": best,
            "left_plateau": left,
            "steps_run": {
                str(s): [None if by[arch, s, lr] is None else by[arch, s, lr]["steps_run"] for lr in t.lrs]
                for s in t.lm_s
            },
        }
    return out


#: The initialisation of each version of the B-mixer studies: ``{suffix: GPTRunConfig.init}`` (module docstring).
MIXER_INITS = {"": LINEAR_MAP_INIT, "-gpt2": "gpt2"}


def _init_words(init: str) -> str:
    return (
        "PyTorch's default initialisation"
        if init == "torch"
        else "the trainer's default initialisation (normal, σ = 0.02)"
    )


def b_mixer_tuning(version: str = "") -> PaperStudy:
    """Chapter 7's learning-rate tuning at paper scale for the transformer and the MLP-Mixer (module docstring):
    24 units, no claim (``b-mixer`` trains at the rates it chooses); ``version`` is a key of :data:`MIXER_INITS`."""
    init = MIXER_INITS[version]
    return PaperStudy(
        f"b-mixer-tuning{version}",
        (),
        "chapter 7's tuning at paper scale for the transformer and the MLP-Mixer: the linear map at S = 16, "
        "s = 3, 5, 7, width 128 (8 heads of 16), MLP 512, 8,192 tokens per step, rates 3e-4, 1e-3, 3e-3, "
        f"1e-2, 3,000 steps from the tuning seed, {_init_words(init)}, float32, reference trainer; a unit "
        "stops once solved",
        _mixer_tuning_units(init),
        "lib.studies.paper.mixers:mixer_tuning_summary",
    )


def mixer_rates(data_dir: Path | str = DATA_DIR, version: str = "") -> dict[str, float] | None:
    """``{arch: rate}`` chosen by the committed ``b-mixer-tuning`` (of ``version``), or ``None`` until all its units
    are done."""
    tuning = b_mixer_tuning(version)
    if published(tuning.name, data_dir) is None:
        return None
    record = publish(
        tuning, cache=Cache(enabled=False), data_dir=data_dir, write=False
    )  # as its committed units give it
    if record is None:
        return None
    rates = {arch: got["best_lr"] for arch, got in record["summary"]["archs"].items()}
    return None if None in rates.values() else rates


def _mixer_keys() -> list[tuple[int, str, int]]:
    """``(s, arch, seed)`` of every ``b-mixer`` unit, in the order they are run: sparsity by sparsity, so that a
    study done in part has whole groups of the measure."""
    c = MixerComparisonConfig.paper()
    return [(s, arch, k) for s in c.tuning.lm_s for arch in MIXER_ARCHS for k in c.seeds]


def b_mixer(data_dir: Path | str = DATA_DIR, version: str = "") -> PaperStudy:
    """Chapter 7's B-mixer at paper scale (module docstring): 18 units at the rates ``b-mixer-tuning`` (of the same
    ``version``, a key of :data:`MIXER_INITS`) chose; a ``RuntimeError`` names the tuning's command while it is not
    complete. Only the default version measures the claim."""
    init, tuning = MIXER_INITS[version], f"b-mixer-tuning{version}"
    rates = mixer_rates(data_dir, version)
    if rates is None:
        raise RuntimeError(
            f"b-mixer{version} trains at the rates {tuning} chooses, which is not complete: run "
            f"`python -m lib.studies run {tuning}` first"
        )
    c = MixerComparisonConfig.paper()
    units = []
    for s, arch, k in _mixer_keys():
        stack = c.run_config(arch, "linear map", rates[arch])
        units.append(
            unit(
                "lib.studies._units:reference_curves",
                replace(stack, members=(Member(c.tuning.lm_task(s), seed=k),), init=init),
            )
        )
    return PaperStudy(
        f"b-mixer{version}",
        () if version else ("B-mixer",),
        "chapter 7's comparison at paper scale, transformer against MLP-Mixer: the linear map at S = 16, "
        f"s = 3, 5, 7, 3 seeds, 10,000 steps, each at the rate {tuning} chose "
        f"({', '.join(f'{a}: {r:g}' for a, r in rates.items())}), {_init_words(init)}, float32, "
        "reference trainer; a unit stops once solved (a solved run repeats its last loss, as a frozen "
        "member of chapter 7's stack)",
        tuple(units),
        "lib.studies.paper.mixers:mixer_summary",
        "" if version else "lib.studies.paper.mixers:mixer_measures",
    )


def mixer_summary(values) -> dict:
    """Per unit (in the study's order; ``None``: not done) -> the published summary of ``b-mixer``: the evaluation
    grid (every ``eval_every`` steps up to the budget) and per ``"arch,s"`` the output-bit loss curve of each seed on
    it (``null``: not done; a unit that stopped once solved repeats its last value to the budget)."""
    keys = _mixer_keys()
    if len(values) != len(keys):
        raise ValueError(f"need {len(keys)} unit values, got {len(values)}")
    c = MixerComparisonConfig.paper()
    budget, every = c.lm_steps, c.tuning.eval_every
    grid = list(range(0, budget + 1, every))
    curves: dict[str, list] = {}
    for (s, arch, _), v in zip(keys, values):
        curve = None
        if v is not None:
            seen = dict(zip(v["steps"], (loss[0] for loss in v["pred_loss"])))
            curve, last = [], None
            for step in grid:
                last = seen.get(step, last)
                curve.append(last)
            if None in curve:
                raise ValueError("a unit's curve must start at step 0 and be evaluated every eval_every steps")
        curves.setdefault(f"{arch},{s}", []).append(curve)
    return {
        "steps": grid,
        "budget": budget,
        "sparsities": list(c.tuning.lm_s),
        "seeds": list(c.seeds),
        "archs": list(MIXER_ARCHS),
        "curves": curves,
    }


def mixer_measures(summary: dict) -> dict:
    """What ``b-mixer`` measures of B-mixer, as chapter 7's check does: transformer over MLP-Mixer steps until the
    seed-averaged output-bit loss falls below :data:`lib.LINEAR_MAP_EXIT` (:func:`lib.curve_time_ratio`, geometric
    mean over the sparsities whose six runs are done), its interval resampling each architecture's seeds, and the
    transformer's seeds split in halves as the control (:func:`lib.halves_time_ratio`). ``{}`` while no sparsity is
    complete."""
    from types import SimpleNamespace

    from ...measures.comparisons import curve_time_ratio, group_time_ratios, halves_time_ratio
    from ...core.stats import group_bootstrap_interval

    tf_name, mix_name = summary["archs"]
    done = [
        s for s in summary["sparsities"] if all(None not in summary["curves"][f"{a},{s}"] for a in (tf_name, mix_name))
    ]
    if not done:
        return {}
    steps, budget, n = np.array(summary["steps"]), float(summary["budget"]), len(summary["seeds"])

    def run(arch):  # group-major (K, sparsities x seeds), as chapter 7's stacks
        return SimpleNamespace(
            steps=steps, pred_loss=np.array([c for s in done for c in summary["curves"][f"{arch},{s}"]], dtype=float).T
        )

    tf, mix = run(tf_name), run(mix_name)
    g = len(done)
    ratio = curve_time_ratio(tf, mix, g, LINEAR_MAP_EXIT, budget)
    interval = group_bootstrap_interval(
        lambda i, j: curve_time_ratio(tf, mix, g, LINEAR_MAP_EXIT, budget, i, j), (n, n)
    )
    terms = group_time_ratios(tf, mix, g, LINEAR_MAP_EXIT, budget)
    per_s = ", ".join(f"{'≥ ' if low else ''}{r:.1f} at s = {done[i]}" for i, r, low in terms) or "none"
    missing = [f"s = {s} not done yet" for s in summary["sparsities"] if s not in done]
    return {
        "B-mixer": {
            "value": ratio,
            "interval": interval,
            "control": halves_time_ratio(tf, g, LINEAR_MAP_EXIT, budget),
            "text": (
                f"transformer / MLP-Mixer steps until the seed-averaged loss leaves the plateau: {per_s} "
                f"(geometric mean {ratio:.1f}; ≥: the transformer's curve still on the plateau at step "
                f"{int(budget):,}, a lower bound)"
            ),
            "incomplete": missing,
        }
    }

"""Every registered negative control can pass: computed as its chapter computes it, on a synthetic case where the
effect *is* present in the control's data, it meets the claim's reproduced criterion.

A control that cannot pass by construction is no control (a claim measured against it cannot fail on its account):
the heads of A-loss exchanged (exclusive with the value) and B-bias's halves in the larger direction (≥ 1 against
"at most 0.3") were such controls. Each probe below builds
the smallest input of the same ``lib`` function the chapter calls; a control whose input is a whole training run or
sampler gets its probe from the function that turns that run into the number. Every trained or sampled check with a
control needs a probe here (:func:`test_every_control_has_a_probe`).
"""

from __future__ import annotations

import numpy as np
import pytest

import lib
from lib.claims import REGISTRY, meets, parts_hold
from lib.claims.registry import CH1, CH4, CH5, CH6, CH7, CH8

BUDGET = 1000.0


def _jump_share_of_a_step():
    """A-soft-order / A-loss: the share of a rise in one fine step, on a curve that jumps (the softmax effect)."""
    return lib.measures.grids.jump_fraction(np.r_[np.zeros(10), np.ones(10)])


def _a_soft_order_ch1():
    return _jump_share_of_a_step()  # the linear head's share, were it to jump


def _a_lin_order_ch1():
    return lib.measures.grids.jump_fraction(np.linspace(0, 1, 21))  # the softmax head's share, were it smooth


def _a_soft_coexist_ch1():
    return lib.measures.grids.count_minima(np.array([0.03, 0.03, 0.9]), np.zeros(3), atol=0.05)  # two minima


def _a_soft_300_ch1():
    P = np.linspace(100, 500, 41)  # the L = 16 scan's P*: the midpoint of its steepest step, were it at 300
    k = lib.measures.grids.steepest_step((P > 300).astype(float))
    return float(P[k : k + 2].mean())


def _a_loss_ch1():
    loss_jump = np.array([[0.95, 0.9, 0.92], [0.95, 0.9, 0.92]])  # (2 heads, data sets): both heads drop sharply
    sharp_soft = lambda g: parts_hold(
        "A-loss",
        {"softmax share": np.median(g[0]), "linear share": np.median(g[1])},  # noqa: E731
        chapter=CH1,
    )
    sharp_lin = np.array([[0.95, 0.9, 0.92], [0.05, 0.04, 0.06]])  # the linear head in the softmax role, sharp there
    return bool(sharp_soft(sharp_lin[[0, 1]])) and not bool(sharp_soft(loss_jump[[1, 1]]))  # control of the cell


def _fake_sweep(kind, L, P, target, A):
    """A filtered Adam sweep with one run per P (``target``, ``A``) for :func:`lib.adam_measures`."""
    from lib.train.copy_map import CopyMapConfig, CopyMapResult

    n = len(P)
    cfg = CopyMapConfig(kind, V=8, L=L, P_grid=tuple(int(p) for p in P), init_seeds=(0,), copy_init=False)
    zeros = np.zeros((n, 1))
    return CopyMapResult(
        config=cfg,
        P=np.asarray(P),
        inits=("seed 0",),
        U=zeros,
        train_loss=zeros,
        test_loss=zeros,
        target=np.asarray(target, dtype=float)[:, None],
        grad_norm=zeros,
        A=A[:, None],
        W=np.zeros((n, 1, 8, 8)),
        beta=zeros,
        best=np.zeros(n, dtype=int),
        steps_run=1,
    )


def _adam_pair(on_theory: bool, uniform: bool):
    """A softmax (L = 32) and a linear (L = 16) sweep whose runs sit on the MAP theory's target attention (or 0.5 off)
    and whose patterns are uniform (or the copy pattern)."""
    from lib.theory import order_parameters_vs_P

    out = []
    for kind, model, L, P in (
        ("softmax", "softmax", 32, np.array([200, 300, 400, 600, 900])),
        ("linear", "linear_v2", 16, np.array([5, 20, 80, 300])),
    ):
        target = order_parameters_vs_P(model, 8, L, P.astype(float), method="map").target + (0 if on_theory else 0.5)
        A = (
            np.full((len(P), L, L), 1.0 / L)
            if uniform
            else np.broadcast_to(lib.tasks.copy.shift_matrix(L).numpy(), (len(P), L, L)).copy()
        )
        out.append(_fake_sweep(kind, L, P, target, A))
    return out


def _a_adam_ch4():
    return lib.adam_measures(*_adam_pair(on_theory=True, uniform=True))["dev_worst"]  # the unfiltered run on theory


def _a_red_ch4():
    return lib.adam_measures(*_adam_pair(on_theory=True, uniform=True))["coverage_off"]  # a pattern of the plane


def _a_adam_pstar_ch4():
    from lib.studies.adam_replicas import FRACTIONS
    from lib.theory import first_order_transition

    fits = {}
    for L in (16, 32, 64):  # each jump placed between the grid points around 1.1 P* (the control's theory)
        P_th = float(first_order_transition(8, L, method="map").P_star)
        P = np.array(sorted({int(round(f * P_th)) for f in FRACTIONS}))
        fits[L] = _fake_sweep("softmax", L, P, (P > 1.1 * P_th).astype(float), np.zeros((len(P), L, L)))
    return lib.bracket_measures(fits)["shifted"]


def _a_soft_order_ch4():
    from types import SimpleNamespace

    from lib.readouts.posterior import hysteresis

    def branches(kind):  # chains of both initialisations that stay apart: the copy ones at 0.9, the others at 0.05
        is_copy = np.array([True, True, False, False])
        target = np.broadcast_to(
            np.where(is_copy, 0.9, 0.05)[None, :, None], (3, 4, 2)
        ).copy()  # (n_P, chains, samples)
        return SimpleNamespace(
            config=SimpleNamespace(kind=kind),
            P=np.array([100, 200, 300]),
            is_copy=is_copy,
            target=target,
            rhat=np.ones(3),
            branch_mean=lambda name, copy: target[:, is_copy == copy].mean(axis=(1, 2)),
        )

    return hysteresis(branches("softmax"), branches("linear"))["gap_lin"]  # a linear posterior with two branches


def _a_sgld_ch4():
    ref = np.array([0.1, 0.2, 0.4])  # the saddle-point theory's curve, were the samples on it
    return lib.relative_deviation(np.stack([ref, ref], axis=1), ref, np.ones(3, dtype=bool))


def _a_sgld_soft_ch4():
    P_half_L = 150.0  # the Bayes P* of the wrong length, were the samples to hold the copy branch from there
    return P_half_L / P_half_L


def _a_precursor_ch4():
    var = np.array([1.0, 1.0, 1.0, 1.0, 5.0])  # a fluctuation peak at the largest P
    return parts_hold("A-precursor", {"linear peak ratio": lib.peak_ratio(var, -1), "softmax growth": 1.0}, chapter=CH4)


def _b_random_ch5():
    from lib.lm.study_report import RunPoints

    steps = np.tile(np.array([100.0, 300.0] * 4), (1, 2, 1))  # (S, R, P): even prompts 3x sooner than odd ones
    never = np.zeros_like(steps, dtype=bool)
    pts = RunPoints(
        task="repetition",
        sizes=("s",),
        seeds=(0, 1),
        last=1000.0,
        seed_steps=np.array([[200.0, 200.0]]),
        never=np.zeros((1, 2), bool),
        present=np.ones((1, 2), bool),
        prompt_steps=steps,
        prompt_never=never,
    )
    return float(np.nanmin(pts.within[pts.learning_sizes()]))


def _b_never_ch5():
    from lib.lm.study_report import RunPoints

    pts = RunPoints(
        task="icr",
        sizes=("s",),
        seeds=(0, 1),
        last=1000.0,
        seed_steps=np.array([[200.0, 1000.0]]),
        never=np.array([[False, True]]),
        present=np.ones((1, 2), bool),
        prompt_steps=np.zeros((1, 2, 4)),
        prompt_never=np.zeros((1, 2, 4), bool),
    )
    return pts.never_count([0])  # a never-solver on the control task


def _b_size_ch5():
    from lib.lm.study_report import RunPoints

    t = np.array([[100.0, 400.0, 100.0, 400.0]])  # the even seeds 4x sooner than the odd ones
    pts = RunPoints(
        task="repetition",
        sizes=("s",),
        seeds=(0, 1, 2, 3),
        last=1000.0,
        seed_steps=t,
        never=np.zeros((1, 4), bool),
        present=np.ones((1, 4), bool),
        prompt_steps=np.zeros((1, 4, 2)),
        prompt_never=np.zeros((1, 4, 2), bool),
    )
    r = pts.halves_control()
    return min(r, 1 / r)


def _b_abrupt_ch5():
    from lib.lm.onset import max_rise

    p = np.array([[0.7, 0.7, 0.7, 0.7, 0.1, 0.1, 0.1, 0.1]])  # a prompt that falls at once: its reversed curve jumps
    st = np.arange(8) * 1000.0
    return float(np.median(max_rise(p[:, ::-1], st[-1] - st[::-1], 1000.0, 3)))  # as lib.lm.rise_summary


def _b_context_ch6():
    plateaus = np.array([[100.0, 110.0], [200.0, 210.0], [400.0, 410.0]])  # biased plateaus that double per doubling
    return lib.growth_per_doubling(plateaus, (8, 16, 32))


def _b_bias_ch6():
    return 1 / lib.halves_ratio(np.array([100.0, 1000.0, 100.0, 1000.0]), np.median)  # halves 10x apart


def _b_random_ch6():
    return lib.measures.curves.spread(np.array([100.0, 400.0, 250.0]))  # biased runs 4x apart


def _b_heads_ch6():
    loss = np.zeros((3, 4, 4))
    loss[..., 1::2] = 0.5  # the even seeds win every cell
    return lib.heads_halves_control(loss, 0.01)


def _b_heads_one_ch6():
    return 0  # runs at the most heads that leave the plateau, were none to leave (the count of the chapter's cell)


def _b_dhead_ch6():
    return lib.censored_ratio_interval(np.array([800.0, 900.0]), np.array([100.0, 120.0]), BUDGET).value


def _b_mixer_ch7():
    from types import SimpleNamespace

    steps = np.arange(0, 1001, 50.0)
    fast = np.where(steps < 100, 0.69, 0.0)  # even seeds leave at step 100, odd ones at 900
    slow = np.where(steps < 900, 0.69, 0.0)
    run = SimpleNamespace(steps=steps, pred_loss=np.stack([fast, slow, fast, slow], axis=1))
    return lib.halves_time_ratio(run, 1, lib.LINEAR_MAP_EXIT, BUDGET)


def _b_ca_best_ch7():
    losses = {"chance": np.full((5, 2), 0.69), "other": np.full((5, 2), 0.69)}  # nothing beats the chance model
    return lib.archs_beating(losses, "chance")


def _b_prepre_ch7():
    times = {"task": np.array([[100.0, 400.0, 100.0, 400.0]])}  # scratch seeds 4x apart
    nulls = lib.seed_nulls(times, {"task": BUDGET})
    return max(lib.bootstrap_interval(v).value for v in nulls.values())


def _s_precursor_ch8():
    test = lambda lin, soft: parts_hold(
        "S-precursor",
        {
            "linear slowing": lin,  # noqa: E731
            "softmax over linear slowing": soft / lin,
        },
        chapter=CH8,
    )
    slow_lin, slow_far, slow_soft = 20.0, 10.0, 2.0  # a linear head that slows far above its onset too
    return test(slow_far, slow_soft) or test(slow_lin, slow_lin)


def _s_heads_ch8():
    steps = np.array([50.0, 500.0, 50.0, 500.0])  # the seeds of one H, halves 10x apart
    return max(lib.censored_ratio_interval(steps[a::2], steps[b::2], BUDGET).value for a, b in ((1, 0), (0, 1)))


def _s_random_ch8():
    emergence = np.array([100.0, 102.0, 98.0])  # one seed's step across sizes, were it not to change with P
    return float(emergence.std() / emergence.mean())


def _s_context_ch8():
    return abs(1.2 - 1.1)  # A's exponent against the biased plateau's, were the bias to leave the growth


#: (claim id, chapter) -> probe. A probe returns the control as its chapter computes it, on data with the effect.
PROBES = {
    ("A-soft-order", CH1): _a_soft_order_ch1,
    ("A-soft-coexist", CH1): _a_soft_coexist_ch1,
    ("A-soft-300", CH1): _a_soft_300_ch1,
    ("A-lin-order", CH1): _a_lin_order_ch1,
    ("A-loss", CH1): _a_loss_ch1,
    ("A-adam", CH4): _a_adam_ch4,
    ("A-adam-Pstar", CH4): _a_adam_pstar_ch4,
    ("A-red", CH4): _a_red_ch4,
    ("A-soft-order", CH4): _a_soft_order_ch4,
    ("A-sgld", CH4): _a_sgld_ch4,
    ("A-sgld-soft", CH4): _a_sgld_soft_ch4,
    ("A-precursor", CH4): _a_precursor_ch4,
    ("B-random", CH5): _b_random_ch5,
    ("B-never", CH5): _b_never_ch5,
    ("B-size", CH5): _b_size_ch5,
    ("B-abrupt", CH5): _b_abrupt_ch5,
    ("B-context", CH6): _b_context_ch6,
    ("B-bias", CH6): _b_bias_ch6,
    ("B-random", CH6): _b_random_ch6,
    ("B-heads", CH6): _b_heads_ch6,
    ("B-heads-one", CH6): _b_heads_one_ch6,
    ("B-dhead", CH6): _b_dhead_ch6,
    ("B-mixer", CH7): _b_mixer_ch7,
    ("B-ca-best", CH7): _b_ca_best_ch7,
    ("B-prepre", CH7): _b_prepre_ch7,
    ("S-precursor", CH8): _s_precursor_ch8,
    ("S-heads", CH8): _s_heads_ch8,
    ("S-random", CH8): _s_random_ch8,
    ("S-context", CH8): _s_context_ch8,
}

#: Controls whose probe needs a study's whole readout (a trained fit, a patching run); each names the measure, shared
#: with the value, that makes it able to pass: the same function on the control's data.
SAME_AS_VALUE = {
    ("A-lin-V2", CH4): "the same scaling fit (lib.train.scaling_fits), its other exponent: passes when the crossover "
    "scales as V²",
    ("A-lin-cross", CH4): "the same scaling fit, the onset's exponent in L: passes when the onset scales as L^1.5",
    ("A-lin-cross-bulk", CH4): "the same scaling fit, the onset's exponent in L: passes when the onset scales as L²",
    ("B-patch", CH5): "the same recovery (lib.lm.study), for two random heads: passes when those two carry the gain",
    ("B-staircase", CH6): "the same rank correlation (lib.row_drops, lib.first_below) with another seed's focus "
    "steps: passes when seeds find the rows in the same order",
    ("B-sparsity", CH6): "the same gap (lib.sparsity_study) at step 0: passes when the initial loss depends on s",
    ("B-depth", CH6): "the same score of paired differences for odd minus even seeds: passes when the halves differ",
}


def _controlled_checks():
    return [(c.id, k.chapter) for c in REGISTRY.values() for k in c.checks if k.kind != "derived" and k.control]


def test_every_control_has_a_probe():
    missing = [key for key in _controlled_checks() if key not in PROBES and key not in SAME_AS_VALUE]
    assert not missing, f"controls with no probe that they can pass: {missing}"
    stale = [key for key in {**PROBES, **SAME_AS_VALUE} if key not in _controlled_checks()]
    assert not stale, f"probes of checks that have no control (or no longer exist): {stale}"


@pytest.mark.parametrize("key", sorted(PROBES), ids=lambda k: f"{k[0]}@{k[1][:2]}")
def test_the_control_can_pass_where_the_effect_is_present(key):
    cid, chapter = key
    value = PROBES[key]()
    if isinstance(value, (bool, np.bool_)):
        assert value, f"{cid} in {chapter}: the control cannot pass on data with the effect"
    else:
        assert meets(cid, float(value), chapter=chapter), f"{cid} in {chapter}: control {value} cannot pass"


def test_a_degenerate_control_is_caught():
    """The probes would catch the controls they replaced: B-bias's halves in the larger direction are never below 1,
    and A-loss with its heads exchanged fails whenever the value passes, so neither can pass with the effect there."""
    larger = lib.halves_ratio(np.array([100.0, 1000.0, 100.0, 1000.0]), np.median)
    assert not meets("B-bias", larger, chapter=CH6)
    # A-loss with the heads exchanged: whenever the value passes, the exchanged test fails
    sharp = np.array([[0.95, 0.9, 0.92], [0.05, 0.04, 0.06]])
    test = lambda g: parts_hold(
        "A-loss",
        {"softmax share": np.median(g[0]), "linear share": np.median(g[1])},  # noqa: E731
        chapter=CH1,
    )
    assert test(sharp) and not test(sharp[::-1])

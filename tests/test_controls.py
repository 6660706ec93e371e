"""Every registered negative control can pass: computed as its chapter computes it, on a synthetic case where the
effect *is* present in the control's data, it meets the claim's reproduced criterion.

A control that cannot pass by construction is no control (a claim measured against it cannot fail on its account):
the heads of A-loss exchanged (exclusive with the value) or the linear head in both of its roles (a share at
once >= 0.8 and <= 0.3), S-precursor's linear head in the softmax role (a ratio of 1 against "at most 0.5"), B-bias's halves in the larger direction (≥ 1 against
"at most 0.3") and B-prepre's stage 2 from untrained weights (scratch to the bit, always 1.00) were such controls.
Each probe below builds the smallest input of the same ``lib`` function the chapter calls; a control whose input is a
whole training run, sampler or patching run gets its probe from the function that turns that run into the number
(the scaling fit, the per-run patch analysis on a tiny GPT-NeoX, the staircase, the width and sparsity readouts).
Every trained or sampled check with a control needs a probe here (:func:`test_every_control_has_a_probe`); a probe
that takes ``effect`` is also run without the effect, where the control must fail (:data:`NULLS`).
"""

from __future__ import annotations

import copy
import functools
import inspect
from types import SimpleNamespace

import numpy as np
import pytest
import torch

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


def _fake_sweep(kind, L, P, target, A, test_loss=None):
    """A filtered Adam sweep with one run per P (``target``, ``A``, ``test_loss``, default 0) for
    :func:`lib.adam_measures`."""
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
        test_loss=zeros if test_loss is None else np.asarray(test_loss, dtype=float)[:, None],
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
    from lib.theory import exact_test_loss, order_parameters_vs_P

    out = []
    for kind, model, L, P in (
        ("softmax", "softmax", 32, np.array([200, 300, 400, 600, 900])),
        ("linear", "linear_v2", 16, np.array([5, 20, 80, 300])),
    ):
        t = order_parameters_vs_P(model, 8, L, P.astype(float), method="map")
        target = t.target + (0 if on_theory else 0.5)
        x = torch.as_tensor(t.x, dtype=torch.float64)
        loss = [
            float(exact_test_loss(model, x[i], float(p), 8, L)) + (0 if on_theory else 0.5) for i, p in enumerate(P)
        ]
        A = (
            np.full((len(P), L, L), 1.0 / L)
            if uniform
            else np.broadcast_to(lib.tasks.copy.shift_matrix(L).numpy(), (len(P), L, L)).copy()
        )
        out.append(_fake_sweep(kind, L, P, target, A, loss))
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


def _sgld(kind, P, copy_target, rand_target):
    """A sampled posterior (``lib.sample_copy_posterior``'s result, as the readouts use it) with two copy- and two
    random-initialised chains whose mean target attention is ``copy_target`` and ``rand_target`` (each ``(n_P,)``)."""
    is_copy = np.array([True, True, False, False])
    per_chain = np.where(
        is_copy[None, :], np.asarray(copy_target, float)[:, None], np.asarray(rand_target, float)[:, None]
    )
    target = np.repeat(per_chain[:, :, None], 2, axis=2)  # (n_P, chains, samples)
    return SimpleNamespace(
        config=SimpleNamespace(kind=kind),
        P=np.asarray(P),
        is_copy=is_copy,
        target=target,
        rhat=np.ones(len(P)),
        branch_mean=lambda name, copy: target[:, is_copy == copy].mean(axis=(1, 2)),
    )


def _a_soft_order_ch4():
    from lib.readouts.posterior import hysteresis

    # chains of both initialisations that stay apart (copy ones at 0.9, the others at 0.05): two branches
    two = lambda kind: _sgld(kind, [100, 200, 300], np.full(3, 0.9), np.full(3, 0.05))
    return hysteresis(two("softmax"), two("linear"))["gap_lin"]  # a linear posterior with two branches


def _a_sgld_ch4():
    c1, cG = np.array([0.1, 0.2, 0.4]), np.array([0.02, 0.05, 0.2])  # the saddle-point theory's curves
    on = lambda ref: np.stack([ref, ref], axis=1)  # noqa: E731  (two chains on the theory: the effect)
    return lib.order_parameter_deviation(on(c1), c1, on(cG), cG, np.ones(3, dtype=bool))


@functools.lru_cache
def _bayes_pstar(L: int, V: int = 8) -> float:
    from lib import theory as th

    return float(th.first_order_transition(V, L, method="bayes").P_star)


def _a_sgld_soft_ch4(effect: bool = True):
    L_soft = 32  # chapter 4's softmax head (V = 8)
    P_theory_bayes, P_half_L = _bayes_pstar(L_soft), _bayes_pstar(L_soft // 2)
    # effect: the copy-init chains hold the copy branch (target attention 0.9 >= 0.15) from the Bayes P* of L/2 on;
    # without it, from the Bayes P* of the right L (the value's theory)
    held_from = P_half_L if effect else P_theory_bayes
    P = np.round(np.geomspace(60, 1200, 25))
    P = np.unique(np.r_[P, np.ceil(held_from)])
    soft = _sgld("softmax", P, np.where(P >= held_from, 0.9, 0.05), np.full(P.size, 0.05))
    sampled = lib.sampled_transition(soft, P_theory_bayes)  # as chapter 4
    return sampled["lo"] / P_half_L


def _a_precursor_ch4():
    var = np.array([1.0, 1.0, 1.0, 1.0, 5.0])  # a fluctuation peak at the largest P
    return parts_hold("A-precursor", {"linear peak ratio": lib.peak_ratio(var, -1), "softmax growth": 1.0}, chapter=CH4)


def _scaling_study(onset, cross):
    """A linear-scaling study (``lib.LinearScaling``: five (V, L) cells, two data draws, two chains) whose curves put
    the onset at ``onset(V, L)`` and the crossover at ``cross(V, L)``: per cell the squared uniform coefficient is a
    hinge in ln P at the onset (the form ``onset_point`` fits) and the copy share rises linearly in ln P through 1/2 at
    the crossover."""
    from lib.studies.linear_scaling import LinearScaling

    study = LinearScaling(lib.LinearScalingConfig())
    for V, L in study.config.cells:
        P1, Px = onset(V, L), cross(V, L)
        P = np.geomspace(P1 / 20, Px * 20, 120)
        x = np.log(P)
        c1 = np.sqrt(0.01 + 0.05 * np.maximum(0.0, x - np.log(P1)))
        share = np.clip(0.5 + x - np.log(Px), 0.0, 1.0)
        study.P[V, L] = P
        study.c1[V, L] = np.broadcast_to(c1[None, :, None], (2, P.size, 2)).copy()  # (draws, n_P, chains)
        study.share[V, L] = np.broadcast_to(share[None, :, None], (2, P.size, 2)).copy()
    return study


def _a_lin_v2_ch4(effect: bool = True):
    # effect: the crossover scales as V² (the onset's law), P× ∝ L^1.5 V²; without it as paper A's V^1/2
    c = 2.0 if effect else 0.5
    study = _scaling_study(lambda V, L: 10 * (V / 4) ** 2, lambda V, L: 1e5 * (L / 8) ** 1.5 * (V / 4) ** c)
    return lib.scaling_exponents(study, "crossover")["V"].value  # the control: the crossover's exponent in V


def _onset_in_L(d: float) -> float:
    """The onset's exponent in L (A-lin-cross's control) of a study whose onset is P1 ∝ V² L^d."""
    study = _scaling_study(
        lambda V, L: 10 * (V / 4) ** 2 * (L / 8) ** d, lambda V, L: 1e5 * (L / 8) ** 1.5 * (V / 4) ** 0.5
    )
    return lib.scaling_exponents(study, "onset")["L"].value


def _a_lin_cross_ch4(effect: bool = True):
    return _onset_in_L(1.5 if effect else 0.0)  # effect: the onset scales as L^1.5 (without: V² alone, as paper A's)


def _a_lin_cross_bulk_ch4(effect: bool = True):
    return _onset_in_L(2.0 if effect else 0.0)  # effect: the onset scales as L² (without: no L dependence)


def _a_efficiency_ch4(effect: bool = True):
    # the control is the ratio between two linear training sets; with the effect one of them is a head that copies four
    # times sooner (as the softmax head does), without it both cross over at the same P
    study = _scaling_study(lambda V, L: 10 * (V / 4) ** 2, lambda V, L: 40 * L**1.5 * V**0.5)
    P, share = study.P[8, 32], study.share[8, 32]
    if effect:
        share[1] = np.clip(0.5 + np.log(P) - np.log(P[np.argmax(share[0, :, 0] >= 0.5)] / 4), 0.0, 1.0)[:, None]
    crossovers = lib.scaling_points(study, "crossover")[8, 32]  # as chapter 4
    P_soft = np.round(np.geomspace(60, 1200, 25))
    soft = _sgld("softmax", P_soft, np.where(P_soft >= 300, 0.9, 0.05), np.full(P_soft.size, 0.05))
    P_ref = _bayes_pstar(32)
    return lib.sampled_efficiency(crossovers, lib.sampled_transition(soft, P_ref), P_ref)["control"]


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


def _patch_run(n_head: int, changed, seed: int, d_head: int = 8, vocab: int = 32, n_prompts: int = 16):
    """One run patched by ``lib.lm.study._patch`` (the per-run analysis behind ``lib.lm.study``): a one-layer GPT-NeoX
    whose checkpoint after emergence differs from the one before only in the query and key weights of the heads in
    ``changed`` (their patterns sharpen), so those heads' patterns carry the whole gain in p(target), the target being
    what the new checkpoint predicts."""
    import torch
    from transformers import GPTNeoXForCausalLM

    from lib.lm.minisuite import ModelSize
    from lib.lm.patching import register_patchable
    from lib.lm.study import StudyConfig, _patch

    register_patchable()
    cfg = ModelSize("t", 1, n_head * d_head, n_head).hf_config(vocab)
    cfg._attn_implementation = "patchable"
    torch.manual_seed(seed)
    old = GPTNeoXForCausalLM(cfg).eval()
    with torch.no_grad():  # both checkpoints: attention output and unembedding large enough for p to follow a pattern
        old.get_output_embeddings().weight.mul_(30)
        old.gpt_neox.layers[0].attention.dense.weight.mul_(10)
    new = copy.deepcopy(old)
    qkv = new.gpt_neox.layers[0].attention.query_key_value  # rows per head: query, key, value (d_head each)
    with torch.no_grad():
        for h in changed:
            rows = slice(3 * d_head * h, 3 * d_head * h + 2 * d_head)
            qkv.weight[rows] *= 20
            qkv.bias[rows] *= 20
    ids = torch.randint(3, vocab, (n_prompts, 12), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        target = new(input_ids=ids).logits[:, -1].argmax(-1).numpy()
    prompts = SimpleNamespace(task="rep", input_ids=ids.numpy(), target_ids=target)
    suite = SimpleNamespace(load_model=lambda size, sd, step: new if step >= 2 else old, release=lambda *a: None)
    onset = np.full(n_prompts, 2)  # every prompt emerges at the third of four checkpoints: the pair is (0, 3)
    rp, why = _patch(
        StudyConfig(n_prompts=n_prompts, patch_tasks=("rep",)), suite, "t", seed, prompts, onset, (0, 1, 2, 3)
    )
    assert rp is not None, why
    return rp


def _b_patch_ch5(effect: bool = True):
    from lib.lm import patch_summary

    # effect: two random heads are the two whose new patterns carry the gain (a model of two heads, both changed);
    # without it, 2 of 16 heads carry it and a random pair mostly misses them
    n_head, changed = (2, (0, 1)) if effect else (16, (3, 11))
    seeds = (0, 1)
    runs = {  # the study table's runs of one size, as lib.lm.patch_summary reads them
        ("t", sd): SimpleNamespace(
            patches={"rep": _patch_run(n_head, changed, sd)}, key=SimpleNamespace(name=f"t-seed{sd}"), notes={}
        )
        for sd in seeds
    }
    table = SimpleNamespace(sizes=("t",), present=lambda size: seeds, runs=runs, n_heads={"t": n_head})
    patches = patch_summary(table, "rep", k=2)  # as chapter 5
    return float(np.nanmedian(patches.random))


def _b_staircase_ch6(effect: bool = True):
    # effect: every seed finds the rows in the same order (bit i at its i-th step, each seed at its own pace), so
    # another seed's focus steps are in the learned order too; without it alternate seeds find them in reverse
    E, S, H = 4, 6, 2
    steps = np.arange(0, 2001, 25.0)
    rank = np.array([np.arange(S) if effect or e % 2 == 0 else np.arange(S)[::-1] for e in range(E)])  # (E, S)
    learned_at = 200.0 + (100.0 + 50 * np.arange(E))[:, None] * (rank + 1)  # (E, S)
    token_loss = np.where(steps[:, None, None] >= learned_at, 0.01, np.log(2))  # (K, E, S)
    mass = np.full((steps.size, E, H, S), 0.1)
    mass[:, :, 0, :] = np.where(steps[:, None, None] >= learned_at - 50, 0.8, 0.1)  # head 0 focuses 50 steps before
    run = SimpleNamespace(steps=steps, token_loss=token_loss, mass=mass, config=SimpleNamespace(eval_every=25))
    stair = lib.staircase(run, learned=lib.SOLVED)  # as chapter 6 (LEARNED = lib.SOLVED)
    return float(np.median(stair.shuffled))


def _b_sparsity_ch6(effect: bool = True):
    from lib.studies.sparsity_study import SparsityStudy, SparsityStudyConfig

    # effect: the step-0 loss depends on s, ln 2 at s = S/2 and about 0.37 at the ends; without it ln 2 at every s,
    # with seed noise
    cfg = SparsityStudyConfig.fast()
    noise = np.random.default_rng(0).normal(0, 0.005, (2, 5, len(cfg.seeds)))
    initial = {}
    for i, (S, s_values) in enumerate(cfg.grid):
        s = np.array(s_values, dtype=float)
        loss = 0.35 + 0.343 * (1 - np.abs(2 * s / S - 1)) if effect else np.full(s.size, np.log(2))
        initial[S] = loss[:, None] + noise[i, : s.size]  # (len(s), seeds)
    study = SparsityStudy(cfg, final={S: np.full_like(v, np.log(2)) for S, v in initial.items()}, initial=initial)
    controls = {S: lib.bootstrap_interval(study.control_gap(S)) for S in study.final}  # as chapter 6
    return max(c.value for c in controls.values())


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


def _width_study(final):
    """A width study (``lib.studies.width_study.WidthStudy``, the default config) whose every curve sits at ln 2 for
    its first half and at ``final(key, seed)`` for its second: a run leaves the plateau exactly when that is below the
    exit."""
    from lib.studies.width_study import Curves, WidthStudy, WidthStudyConfig

    cfg = WidthStudyConfig()
    steps = np.arange(0, 801, 25.0)
    curves = {}
    for key in cfg.runs():
        n = len(cfg.seeds if key[0] == "grid" else cfg.ca_seeds)
        end = np.array([final(key, k) for k in range(n)])
        loss = np.where(steps[:, None] < 400, np.log(2), end[None, :])  # (K, seeds)
        curves[key] = Curves(steps=steps, loss=loss, pred_loss=loss)
    return WidthStudy(cfg, curves)


def _width_summary(final):
    study = _width_study(final)
    return study, lib.width_summary(study, lib.LINEAR_MAP_EXIT, lib.automaton_exit(study.config.ca_C))  # as chapter 6


def _b_heads_one_ch6(effect: bool = True):
    # effect: at the most heads no run leaves the plateau (all end at ln 2); without it every run there ends at 0.3
    from lib.studies.width_study import WidthStudyConfig

    top = WidthStudyConfig().heads[-1]  # the grid's last column, the most heads
    _, ws = _width_summary(lambda key, k: np.log(2) if key[:2] == ("grid", top) and effect else 0.3)
    return int(ws.grid_emerged[:, -1].sum())  # the control of the chapter's cell


def _b_depth_ch6(effect: bool = True):
    # effect: odd seeds end 0.2 higher than even ones at every depth; without it the odd-minus-even differences are
    # +0.2 and -0.2 in equal number (seed noise), in each half
    from lib.studies.width_study import WidthStudyConfig

    deepest = WidthStudyConfig().ca_depths[-1]
    if effect:
        end = lambda k, n: 0.3 + 0.2 * (k % 2)  # seed k at n layers
    else:
        end = lambda k, n: 0.3 + 0.2 * ((k + k // 2 + (n == deepest)) % 2)
    _, ws = _width_summary(lambda key, k: 0.3 if key[0] == "grid" else end(k, key[2]))  # key[2]: layers
    depth_loss = {n: np.array([end(k, n) for k in range(4)]) for n in (1, 2)}  # chapter 6's FAST runs, 1 and 2 layers
    return lib.interval_score(  # as chapter 6
        [
            lib.halves_interval(depth_loss[1], depth_loss[2]),
            lib.halves_interval(ws.depth_last[1], ws.depth_last[deepest]),
        ]
    )


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


#: Scratch steps of eight seeds, each seed twice as fast as the one before: seed noise alone gives a paired ratio of 2
#: (seed k over seed k + 1) for seven of eight seeds.
SCRATCH_CHAIN = 1000.0 * 2.0 ** -np.arange(8)


def _prepre_controls(scratch):
    """B-prepre's control as chapter 7 computes it (the seed null, ``lib.seed_nulls``) and its control before 2e06d1d
    (stage 2 from the stage-1 model's untrained weights, the last row of ``lib.prepretrain_speedups``' times), each
    chosen by the same maximum as the value (the interval reaching highest at its lower end), on one stack: every row
    is ``scratch``, the untrained start included (it repeats scratch to the bit)."""
    times = {"linear map": np.tile(scratch, (len(lib.PRE_VARIANTS) + 1, 1))}  # (variants + control, seeds)
    budgets = {"linear map": BUDGET}
    pick = lambda ivs: ivs[max(ivs, key=lambda k: ivs[k].lo)].value
    pre = lib.prepretrain_speedups(times, budgets, lib.PRE_VARIANTS)
    old = pick({t: lib.bootstrap_interval(v) for t, v in pre.null.items()})
    new = pick({k: lib.bootstrap_interval(v) for k, v in lib.seed_nulls(times, budgets).items()})
    return old, new


def _b_prepre_ch7(effect: bool = True):
    # effect: scratch seeds alone differ twofold in a chain; without it they agree to 1 %
    scratch = SCRATCH_CHAIN if effect else 100.0 * (1 + 0.01 * (np.arange(8) % 2))
    return _prepre_controls(scratch)[1]


def _s_precursor_test(lin, soft):
    return parts_hold("S-precursor", {"linear slowing": lin, "softmax over linear slowing": soft / lin}, chapter=CH8)


def _s_precursor_ch8(effect: bool = True):
    # effect in the linear half's control: a linear head that slows far above its onset too; in the softmax half's:
    # a softmax head that does not slow at its spinodal either. Without it: no slowing far above P1, and at the
    # spinodal as much as the linear head at its onset
    slow_lin, slow_soft = 20.0, 2.0
    slow_far, slow_spin = (10.0, 2.0) if effect else (1.2, 20.0)
    return _s_precursor_test(slow_far, slow_soft) or _s_precursor_test(slow_lin, slow_spin)  # as chapter 8


def test_each_half_of_s_precursor_s_control_can_pass_alone():
    slow_lin, slow_soft = 20.0, 2.0
    assert _s_precursor_test(10.0, slow_soft) and not _s_precursor_test(1.2, slow_soft)  # the linear half
    assert _s_precursor_test(slow_lin, 2.0) and not _s_precursor_test(slow_lin, 20.0)  # the softmax half (spinodal)


def _s_heads_ch8():
    steps = np.array([50.0, 500.0, 50.0, 500.0])  # the seeds of one H, halves 10x apart
    return max(lib.censored_ratio_interval(steps[a::2], steps[b::2], BUDGET).value for a, b in ((1, 0), (0, 1)))


def _s_random_ch8():
    emergence = np.array([100.0, 102.0, 98.0])  # one seed's step across sizes, were it not to change with P
    return float(emergence.std() / emergence.mean())


@functools.lru_cache
def _fit_A() -> float:
    """Chapter 8's A side: the exponent in L of the MAP P* (V = 8) over L >= 16."""
    from lib import theory as th

    L_ctx = np.array([8, 16, 32, 64, 128, 256])
    A_Pstar = th.first_order_transition(8, L_ctx, method="map").P_star
    return float(th.fit_power_law(A_Pstar[L_ctx >= 16], L=L_ctx[L_ctx >= 16])["L"])


def _s_context_ch8(effect: bool = True):
    from lib.studies.context_study import ContextStudy

    # effect: the biased plateau (c = 3) still grows as S^a_A, A's exponent (were the bias to leave the growth);
    # without it 20 steps at every S, as paper B finds
    cfg = lib.ContextStudyConfig.fast()
    steps = np.arange(0.0, 2001.0)
    ends = {S: 20 * (S / cfg.sizes[0]) ** (_fit_A() if effect else 0.0) for S in cfg.sizes}
    curves = {
        (S, 3.0): np.where(steps[:, None] < ends[S] + np.arange(len(cfg.seeds)), np.log(2), 0.1) for S in cfg.sizes
    }
    context = ContextStudy(cfg, steps={k: steps for k in curves}, pred_loss=curves)
    slope_biased = lib.plateau_exponent(context.plateaus(3.0), np.array(cfg.sizes))  # as chapter 8
    return float(abs(_fit_A() - slope_biased))


#: (claim id, chapter) -> probe. A probe returns the control as its chapter computes it, on data with the effect.
PROBES = {
    ("A-soft-order", CH1): _a_soft_order_ch1,
    ("A-soft-coexist", CH1): _a_soft_coexist_ch1,
    ("A-soft-300", CH1): _a_soft_300_ch1,
    ("A-lin-order", CH1): _a_lin_order_ch1,
    ("A-lin-V2", CH4): _a_lin_v2_ch4,
    ("A-lin-cross", CH4): _a_lin_cross_ch4,
    ("A-lin-cross-bulk", CH4): _a_lin_cross_bulk_ch4,
    ("A-efficiency", CH4): _a_efficiency_ch4,
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
    ("B-patch", CH5): _b_patch_ch5,
    ("B-context", CH6): _b_context_ch6,
    ("B-bias", CH6): _b_bias_ch6,
    ("B-random", CH6): _b_random_ch6,
    ("B-heads", CH6): _b_heads_ch6,
    ("B-heads-one", CH6): _b_heads_one_ch6,
    ("B-dhead", CH6): _b_dhead_ch6,
    ("B-staircase", CH6): _b_staircase_ch6,
    ("B-sparsity", CH6): _b_sparsity_ch6,
    ("B-depth", CH6): _b_depth_ch6,
    ("B-mixer", CH7): _b_mixer_ch7,
    ("B-ca-best", CH7): _b_ca_best_ch7,
    ("B-prepre", CH7): _b_prepre_ch7,
    ("S-precursor", CH8): _s_precursor_ch8,
    ("S-heads", CH8): _s_heads_ch8,
    ("S-random", CH8): _s_random_ch8,
    ("S-context", CH8): _s_context_ch8,
}

#: Controls with no probe, each with the one-line reason a probe is infeasible without a training run. None is left:
#: every one got a probe above (the linear-scaling exponents, the random-head patch, the staircase, the step-0 gap and
#: the depth halves were here, with the measure shared with the value named, until each had one).
SAME_AS_VALUE: dict[tuple[str, str], str] = {}

#: The same probe on data without the effect: the control must fail there (the probe discriminates).
NULLS = {
    key: functools.partial(PROBES[key], effect=False)
    for key in PROBES
    if "effect" in inspect.signature(PROBES[key]).parameters
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


@pytest.mark.parametrize("key", sorted(NULLS), ids=lambda k: f"{k[0]}@{k[1][:2]}")
def test_the_probe_fails_where_the_effect_is_absent(key):
    cid, chapter = key
    value = NULLS[key]()
    assert not meets(cid, float(value), chapter=chapter), (
        f"{cid} in {chapter}: control {value} passes without the effect"
    )


def test_a_degenerate_control_is_caught():
    """The probes would catch the controls they replaced: B-bias's halves in the larger direction are never below 1,
    A-loss with its heads exchanged fails whenever the value passes and with the linear head in both roles always,
    S-precursor's linear head in the softmax role gives a ratio of 1, and B-prepre's stage 2 from the untrained
    stage-1 weights (before 2e06d1d) repeats scratch to the bit, so none can pass with the effect there."""
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
    # A-loss with the linear head in both roles (the control until 840e8c1): no data make it pass
    assert not any(test(np.array([[x] * 3, [x] * 3])) for x in np.linspace(0.0, 1.0, 21))
    # S-precursor with the linear head in the softmax role too (until 840e8c1): a ratio of 1, never <= 0.5
    assert not any(_s_precursor_test(x, x) for x in (2.0, 20.0, 500.0))
    # B-prepre: on the same stack, where seeds alone differ twofold, the seed null passes and the untrained start
    # (a ratio of 1.00 on any stack: it equals training from scratch) cannot
    old, new = _prepre_controls(SCRATCH_CHAIN)
    assert meets("B-prepre", new, chapter=CH7) and old == 1.0 and not meets("B-prepre", old, chapter=CH7)
    assert _prepre_controls(np.array([100.0, 400.0, 100.0, 400.0]))[0] == 1.0


def test_a_adam_reads_the_test_loss_as_well_as_the_attention():
    import dataclasses

    soft, lin = _adam_pair(on_theory=True, uniform=True)
    m = lib.adam_measures(soft, lin)
    assert m["dev"] < 1e-12  # attention and loss on the MAP theory
    off = lib.adam_measures(dataclasses.replace(soft, test_loss=soft.test_loss + 0.02), lin)
    assert (
        off["loss_soft"] == pytest.approx(0.02) and off["dev"] == off["loss_soft"] and off["dev_soft"] == m["dev_soft"]
    )
    assert lib.adam_measures(*_adam_pair(on_theory=False, uniform=True))["dev"] == pytest.approx(0.5)


def test_a_lin_first_reads_the_half_rise_points_of_the_linear_plane_coefficients():
    import dataclasses

    soft, lin = _adam_pair(on_theory=True, uniform=True)
    L, P = lin.config.L, lin.P.astype(float)  # 4 sizes
    J, S = np.ones((L, L)), lib.tasks.copy.shift_matrix(L).numpy()
    c1, cG = np.array([0.0, 1.0, 1.0, 1.0]), np.array([0.0, 0.0, 0.0, 0.5])  # halfway crossings: P 1->2 and 3->4
    A = c1[:, None, None] * J / L + cG[:, None, None] * S  # (4, L, L)
    m = lib.adam_measures(soft, dataclasses.replace(lin, A=A[:, None]))
    assert m["lin_first"] == pytest.approx(np.sqrt(P[2] * P[3]) / np.sqrt(P[0] * P[1]))


def test_theory_deviation_and_jump_law_ratio_read_what_they_say():
    from lib.theory import SCALING_LAWS

    soft, lin = _adam_pair(on_theory=True, uniform=True)
    assert lib.theory_deviation(soft, lin, 8) < 1e-12  # on the MAP theory at its own V
    assert lib.theory_deviation(soft, lin, 8) < lib.theory_deviation(soft, lin, 8, 1.05)  # P moved: off it
    off = lib.theory_deviation(*_adam_pair(on_theory=False, uniform=True), 8)
    assert off == pytest.approx(0.5)
    law = {
        "per_L": {
            L: {"lo": 0.99 * 3 * SCALING_LAWS["L ln²L"](L), "hi": 1.01 * 3 * SCALING_LAWS["L ln²L"](L)}
            for L in (16, 32, 64)
        }
    }
    assert lib.jump_law_ratio(law) > 100  # jumps on L ln²L: every rival fits far worse
    rival = {"per_L": {L: {"lo": L**1.5, "hi": 1.02 * L**1.5} for L in (16, 32, 64)}}
    assert lib.jump_law_ratio(rival) < 0.5

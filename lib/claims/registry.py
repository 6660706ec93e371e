"""The registry: every claim the book tests, with its criteria, their reasons and its control.

The criteria were first set in the chapters at their first runs, and the controls later, both after data had been
seen; since then each changes only in a commit of its own that says why, and the ledger gives per check the commit
since which its criterion and its control stand (:mod:`lib.claims.history`).

One :class:`Claim` per claim the book carries from the two papers (and the book's own, source ``"ours"``). A claim is
tested by one :class:`Check` per chapter that measures it: what is measured (a ``lib`` function), on what
(*trained* or *sampled* models, or the book's own *derived* theory), the criterion for *reproduced* and, where the
paper gives grounds for one, for *partial* and *contradicted*, each with its reason, and the **negative control**:
the same measurement where the effect is absent by construction. A chapter passes only the measured value (and the
control's, and the per-seed samples): ``lib.claim(id, value, control=..., samples=...)``.

The reasons cite the paper's number or effect size. Where a criterion was first set in a chapter after its data had
been seen (the claims review names them), the entry says so and gives the reason it now stands on. A criterion changes
only in a commit of its own that says why.

``python -m lib.claims list`` prints this registry (``--json`` for scripts).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Mapping

from .criteria import Criterion, at_least, at_most, between, is_true, within

__all__ = [
    "Rule",
    "Check",
    "Claim",
    "KINDS",
    "REGISTRY",
    "SMALLER_SETTING",
    "EXPERIMENTS",
    "experiment",
    "get_claim",
    "get_check",
    "parts_hold",
    "part_holds",
    "meets",
]

KINDS = ("trained", "sampled", "derived")


@dataclass(frozen=True)
class Rule:
    """A criterion and its reason (taken from the paper's number or effect size, never from our measured value)."""

    criterion: Criterion
    why: str

    def to_json(self) -> dict:
        return {
            "criterion": self.criterion.describe(),
            "op": self.criterion.op,
            "lo": self.criterion.lo,
            "hi": self.criterion.hi,
            "why": self.why,
        }


@dataclass(frozen=True)
class Check:
    """One chapter's test of a claim.

    Attributes
    ----------
    chapter : str
        The chapter slug that runs it.
    kind : {"trained", "sampled", "derived"}
        What the measurement is made on: trained networks (Adam, GPT training), posterior samples (SGLD), or the
        book's own derivation (theory). A *derived* check is shown with status ``derived`` and never counted as a
        reproduction.
    measure : str
        What is measured, in words, naming the ``lib`` function.
    reproduced, partial, contradicted : Rule
        ``contradicted`` is tested first, then ``reproduced``, then ``partial``.
    control : str
        The negative control in words: the same measurement on a case where the effect is absent by construction.
        Empty: no control has been designed yet (such a check cannot be *reproduced*).
    statistic : {"median", "mean"}
        The statistic whose bootstrap interval over ``samples`` is taken.
    committed : str
        Non-empty when the measurement comes from a committed study (``data/``) with fixed seeds: names it.
        ``BOOK_SEED`` cannot move such a study, so the robustness runs say nothing about it.
    parts : tuple of (str, Criterion)
        For a qualitative check that joins several measured quantities: each quantity's name and its own criterion,
        kept here so that no chapter types a threshold. The check's value is whether every part passes
        (:func:`parts_hold`); its *reproduced* criterion is then ``is_true``.
    no_partial : str
        Why a check on trained or sampled models has no *partial* criterion (set from :data:`NO_PARTIAL`): a
        partial level is a weaker reading of the paper's statement with grounds of its own in the paper, and is never
        added after the data. Empty where there is a partial rule, and for derived checks (never counted).
    """

    chapter: str
    kind: str
    measure: str
    reproduced: Rule
    partial: Rule | None = None
    contradicted: Rule | None = None
    control: str = ""
    statistic: str = "median"
    fmt: str = ".3g"
    unit: str = ""
    committed: str = ""
    parts: tuple[tuple[str, Criterion], ...] = ()
    no_partial: str = ""

    def __post_init__(self):
        if self.no_partial and self.partial is not None:
            raise ValueError("a check with a partial rule cannot also say why it has none")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.statistic not in ("median", "mean"):
            raise ValueError(f"statistic must be 'median' or 'mean', got {self.statistic!r}")
        if self.parts and self.reproduced.criterion.op != "is_true":
            raise ValueError("a check with parts is qualitative: its reproduced criterion must be is_true")
        if len({name for name, _ in self.parts}) != len(self.parts):
            raise ValueError("the parts of a check need distinct names")

    def to_json(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if k not in ("reproduced", "partial", "contradicted", "parts")}
        for name in ("reproduced", "partial", "contradicted"):
            rule = getattr(self, name)
            out[name] = rule.to_json() if rule is not None else None
        out["parts"] = {name: crit.describe() for name, crit in self.parts}
        return out


@dataclass(frozen=True)
class Claim:
    """One claim: the source's statement and number, and the chapters' checks of it."""

    id: str
    statement: str
    source_value: str
    checks: tuple[Check, ...]
    source: str = ""
    choice: str = ""  # a choice of ours made because it matches the paper (said in the ledger row)

    def __post_init__(self):
        if not self.source:
            prefix = self.id.split("-", 1)[0]
            object.__setattr__(self, "source", prefix if prefix in ("A", "B") else "ours")
        chapters = [c.chapter for c in self.checks]
        if len(set(chapters)) != len(chapters):
            raise ValueError(f"claim {self.id}: two checks in one chapter")

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "source": self.source,
            "statement": self.statement,
            "source_value": self.source_value,
            "choice": self.choice,
            "checks": [c.to_json() for c in self.checks],
        }


def R(criterion: Criterion, why: str) -> Rule:
    return Rule(criterion, why)


def _parts_text(parts) -> str:
    """ "name ≥ x and name ≤ y": the parts' criteria in words (the registry's texts are built from the numbers)."""
    return " and ".join(f"{name} {crit.describe()}" for name, crit in parts)


CH1, CH2, CH3, CH4 = "01_copy_task", "02_bayesian_posterior", "03_linear_vs_softmax", "04_adam_and_sgld"
CH5, CH6, CH7, CH8 = "05_language_models", "06_sparse_patterns", "07_token_mixers", "08_synthesis"

#: A-precursor's parts (their reasons are the rules' below: mean field gives γ = 1 for a divergence and 0 for none).
_PRECURSOR_THEORY = (("linear γ", at_least(0.7)), ("softmax γ", at_most(0.3)))
_PRECURSOR_SGLD = (("linear peak ratio", at_least(1.5)), ("softmax growth", at_most(2.0)))
#: A-loss's parts: trained heads (the share of the loss drop in one fine step, medians over data sets: _JUMP, _SMOOTH)
#: and the theory's shape (exactly two linear drops, a plateau between them at most half the smaller drop's rate, a
#: finite softmax jump of the loss).
_LOSS_TRAINED = (("softmax share", at_least(0.8)), ("linear share", at_most(0.3)))
_LOSS_THEORY = (("linear drops", between(1.5, 2.5)), ("plateau rate", at_most(0.5)), ("softmax jump", at_least(0.05)))
#: A-soft-scale's rules (reproduced, partial; contradicted), the same for the theory's and for Adam's P*.
_LAW_RULES = (
    R(at_least(2.0), "a law is preferred when it fits at least twice as well as every competitor"),
    R(at_least(0.5), "within a factor 2 of the best competitor: the data cannot tell the laws apart"),
)
_LAW_CONTRADICTED = R(at_most(0.5), "a competing law fits at least twice as well as L ln²L")
#: S-precursor's parts: the relaxation time's slowing at the onset over far below it.
_SLOWING = (("linear slowing", at_least(5.0)), ("softmax over linear slowing", at_most(0.5)))

_JUMP = (
    "first order means a finite jump of the order parameter at P*: most (≥ 80 %) of the rise across the bracket "
    "falls in one fine step a few sequences wide"
)
_SMOOTH = (
    "a continuous (second-order) rise spreads over the bracket: no fine step carries more than 30 %, far from "
    "the ≥ 80 % of a jump"
)
_L32 = (
    "L=32, V=8 were chosen because our MAP theory puts P* ≈ 330 there, near paper A's ≈300 (its L and V are not in "
    "the available text): the agreement is built in, the Bayesian P* is shown beside it"
)
_SCALING = "the linear-scaling study (data/): SGLD at five (V, L), four data draws"
_LINEAR = (
    "the linear model A = (G + βJ)/L was chosen because it gives paper A's exponents (V² onset, L^{3/2}V^{1/2} "
    "crossover); its spike+bulk refinement gives a crossover ∝ L² instead"
)
_THEORY = "a property of the book's derivation, checked against itself (shown, not counted as a reproduction)"

CLAIMS: tuple[Claim, ...] = (
    # ------------------------------------------------------------------------------------------------- paper A
    Claim(
        "A-post",
        "The posterior over the attention matrix has a closed form once W is integrated out.",
        "exact (checked against Monte Carlo)",
        (
            Check(
                CH2,
                "derived",
                "largest |closed form − Monte Carlo| in standard errors over L, V, P and both heads "
                "(lib.theory.marginal_mc)",
                R(
                    at_most(4.0),
                    "an exact formula agrees with an unbiased Monte Carlo estimate to within a few "
                    "standard errors at every case (4 s.e. over six cases: a false alarm under 1 in 1,000)",
                ),
                control="the MAP profile (no Occam term), compared with the same Monte Carlo: it must be off",
                fmt=".2f",
            ),
        ),
    ),
    Claim(
        "A-red",
        "A 2-D order-parameter space (uniform ĉ_1, copy ĉ_G) carries most of the attention pattern ('coverage').",
        "most of the degrees of freedom",
        (
            Check(
                CH2,
                "derived",
                "smallest coverage (share of the non-uniform pattern in span{S, J}) of the exact "
                "finite-P minimisers of one data set, above each head's transition (softmax P > P*, linear P > P1; "
                "lib.theory.coverage); the large-P minimisers lie in the plane to rounding, so a criterion on them could "
                "only pass",
                R(at_least(0.9), "'most of the degrees of freedom' read as ≥ 90 % of the pattern"),
                R(at_least(0.5), "more than half"),
                fmt=".6f",
            ),
            Check(
                CH4,
                "trained",
                "smallest coverage of the Adam (MAP) minimisers of both heads above each "
                "head's transition (softmax P > P*, linear P > P1; lib.theory.coverage, lib.adam_measures); "
                "median over five data sets (the chapter's and four of lib.studies.adam_replicas). Softmax "
                "minimisers alone would pass at any P (the task's symmetry puts every converged softmax pattern "
                "near the plane, claims review 2), so the rule is chapter 2's: both heads",
                R(at_least(0.9), "'most of the degrees of freedom' read as ≥ 90 % of the pattern"),
                fmt=".3f",
                control="the same coverage of the same converged minimisers with each row's attention moved one "
                "key back (copying the token two back: the same structure, off the plane), the largest over both "
                "heads: must fail (a pattern of the plane, uniform or copy, would pass it)",
            ),
        ),
    ),
    Claim(
        "A-soft-order",
        "Softmax attention: the copy order parameter jumps discontinuously at P* (first-order "
        "transition); two minima coexist.",
        "first-order transition (abstract)",
        (
            Check(
                CH1,
                "trained",
                "share of the target-attention rise across the steepest coarse step that falls in "
                "the largest fine step, Adam filtered to the lowest U (lib.train.jump_fraction); median over five data sets (the "
                "chapter's and four of lib.studies.scan_replicas)",
                R(at_least(0.8), _JUMP),
                R(at_least(0.5), "half of the rise in one fine step"),
                control="the same share for linear attention, which paper A says rises continuously",
                fmt=".2f",
            ),
            Check(
                CH3,
                "derived",
                "jump of the target attention between the two coexisting minima of the reduced "
                "action at equal action (lib.theory.transitions)",
                R(at_least(0.05), "a finite jump, larger than the grid resolution of the theory"),
                fmt=".3f",
            ),
            Check(
                CH4,
                "sampled",
                "largest gap of the target attention between SGLD chains started at random and at "
                "the copy pattern, at one P (hysteresis); interval: bootstrap over chains within each branch",
                R(
                    at_least(0.1),
                    "two coexisting minima show as chains that stay apart by a finite amount "
                    "(≥ 0.1 of the attention, three times 1/L)",
                ),
                fmt=".3f",
                control="the same gap for linear attention, whose posterior paper A gives one minimum: must fail",
            ),
        ),
    ),
    Claim(
        "A-soft-coexist",
        "Softmax attention: two minima (uniform and copy) coexist around P*.",
        "coexisting minima (first-order signature)",
        (
            Check(
                CH1,
                "trained",
                "fine-grid P at which Adam converges to two distinct minima (lib.train.count_minima); median over "
                "five data sets",
                R(at_least(2), "coexistence over a range of P, not one accidental grid point"),
                control="the same count for linear attention (one minimum expected)",
                fmt=".0f",
            ),
        ),
    ),
    Claim(
        "A-soft-scale",
        "Softmax: the critical sample size scales as P* ∝ L ln²L.",
        "P* ∝ L ln²L (exponent 1); ≈300 samples in the paper's experiment",
        (
            Check(
                CH3,
                "derived",
                "how many times smaller the RMS log-residual of L ln²L is than that of the best of "
                "L ln L, L^1.25 and L^1.5 (one fitted prefactor each, no free exponent), for the MAP theory's P* "
                "at L ≥ 32 (lib.theory.compare_scaling_laws)",
                *_LAW_RULES,
                contradicted=_LAW_CONTRADICTED,
                fmt=".2f",
            ),
            Check(
                CH4,
                "trained",
                "the same ratio of RMS log-residuals (lib.theory.law_ratio) for filtered Adam's jump at L = 16, 32, "
                "64: the geometric midpoint of the grid step over which its target attention changes most "
                "(lib.bracket_measures); median over five data sets",
                *_LAW_RULES,
                contradicted=_LAW_CONTRADICTED,
                fmt=".2f",
            ),
        ),
    ),
    Claim(
        "A-soft-300",
        "Softmax transition near 300 training sequences in paper A's experiment.",
        "≈300 samples",
        (
            Check(
                CH1,
                "trained",
                "P* of filtered Adam: midpoint of the largest fine step (lib.scan_transition); median over five "
                "data sets",
                R(within(300, rel=0.25), "'near 300' read as within 25 % of the paper's ≈300"),
                R(within(300, rel=0.5), "within a factor 1.5"),
                control="the same scan at L = 16 (coarse grid 30–1,000), where paper A's L ln²L puts P* three "
                "times lower: must fail",
                fmt=".0f",
            ),
            Check(
                CH3,
                "derived",
                "P* of the MAP theory at L=32, V=8 (lib.theory)",
                R(within(300, rel=0.25), "'near 300' read as within 25 % of the paper's ≈300"),
                R(within(300, rel=0.5), "within a factor 1.5"),
                fmt=".0f",
            ),
        ),
        choice=_L32,
    ),
    Claim(
        "A-lin-order",
        "Linear attention: the copy pattern grows continuously (second-order onset, then a smooth crossover).",
        "continuous (abstract)",
        (
            Check(
                CH1,
                "trained",
                "the same share as A-soft-order, for linear attention (lib.train.jump_fraction); median over five data "
                "sets",
                R(at_most(0.3), _SMOOTH),
                control="the same share for softmax attention, which paper A says jumps",
                fmt=".3f",
            ),
            Check(
                CH3,
                "derived",
                "largest change of ĉ_G between neighbouring P of the theory, as a share of its range",
                R(
                    at_most(0.05),
                    "a jump would put a finite share of ĉ_G in one grid step; 5 % bounds it on a grid of ≈100 steps",
                ),
                fmt=".4f",
            ),
        ),
    ),
    Claim(
        "A-lin-V2",
        "Linear attention: the first (second-order) transition, uniform pooling, sets in at P* ∝ V².",
        "exponent 2 in V",
        (
            Check(
                CH3,
                "derived",
                "exponent of the theory's onset P1 against V (lib.theory.onsets)",
                R(within(2.0, tol=0.15), "the paper's exponent 2"),
                R(within(2.0, tol=0.3), "2 ± 0.3"),
                fmt=".2f",
            ),
            Check(
                CH4,
                "sampled",
                "exponent in V of the onset P1 of SGLD posterior samples (change point of the "
                "squared mean uniform coefficient in ln P, lib.train.scaling_fits), fitted jointly with L over five "
                "(V, L) cells, four data draws each",
                R(within(2.0, tol=0.15), "the paper's exponent 2"),
                R(within(2.0, tol=0.3), "2 ± 0.3"),
                control="the same fit's exponent in V of the crossover, which paper A puts at V^{1/2}, not V²: "
                "must fail",
                fmt=".2f",
                committed=_SCALING,
            ),
        ),
        choice=_LINEAR,
    ),
    Claim(
        "A-lin-cross",
        "Linear attention: the crossover to the copy pattern comes at P ∝ L^{3/2} V^{1/2}.",
        "exponents 3/2 in L, 1/2 in V",
        (
            Check(
                CH3,
                "derived",
                "larger deviation of the fitted saddle-point exponents from 3/2 and 1/2",
                R(at_most(0.15), "the paper's exponents to ±0.15"),
                R(at_most(0.3), "to ±0.3"),
                fmt=".2f",
            ),
            Check(
                CH4,
                "sampled",
                "exponent in L of the crossover of SGLD posterior samples (first P at which the "
                "copy share of the pattern reaches 1/2, lib.train.scaling_fits), fitted jointly with V over five "
                "(V, L) cells, four data draws each",
                R(within(1.5, tol=0.15), "the paper's exponent 3/2"),
                R(within(1.5, tol=0.25), "nearer the paper's 3/2 than the spike+bulk theory's 2"),
                contradicted=R(at_least(1.75), "nearer the spike+bulk theory's 2 than the paper's 3/2"),
                control="the same fit's exponent in L of the onset, which paper A puts at V² alone: must fail",
                fmt=".2f",
                committed=_SCALING,
            ),
        ),
        choice=_LINEAR,
    ),
    Claim(
        "A-lin-cross-bulk",
        "Ours: with the L²-dimensional bulk fluctuations of G, the linear crossover moves to P ∝ L².",
        "ours (derived; not in paper A's available text)",
        (
            Check(
                CH3,
                "derived",
                "exponent in L of the spike+bulk crossover",
                R(within(2.0, tol=0.2), "the bulk's L² degrees of freedom predict exponent 2"),
                fmt=".2f",
            ),
            Check(
                CH4,
                "sampled",
                "exponent in L of the crossover of SGLD posterior samples (as for A-lin-cross)",
                R(within(2.0, tol=0.2), "the bulk's L² degrees of freedom predict exponent 2"),
                contradicted=R(at_most(1.75), "nearer the saddle point's 3/2 than the bulk's 2"),
                control="the same fit's exponent in L of the onset (no L dependence expected): must fail",
                fmt=".2f",
                committed=_SCALING,
            ),
        ),
        source="ours",
    ),
    Claim(
        "A-lin-first",
        "Linear attention: uniform pooling ĉ_1 rises before the copy ĉ_G dominates.",
        "qualitative",
        (
            Check(
                CH3,
                "derived",
                "ratio of the P at which ĉ_G and ĉ_1 reach half their maximum (theory)",
                R(at_least(2.0), "'before' read as at least a factor 2 apart in P"),
                fmt=".1f",
            ),
            Check(
                CH4,
                "trained",
                "the same ratio for filtered Adam (linear, L = 16): the P at which its ĉ_G and ĉ_1 "
                "(lib.plane_coefficients) first reach half their largest value on the grid, interpolated in ln P "
                "(lib.adam_measures); median over five data sets",
                R(at_least(2.0), "'before' read as at least a factor 2 apart in P"),
                fmt=".1f",
            ),
        ),
    ),
    Claim(
        "A-loss",
        "Softmax: a sharp loss drop at P*; linear: a continuous drop, a plateau, a slower second drop.",
        "qualitative",
        (
            Check(
                CH1,
                "trained",
                "median over data sets of the share of the test-loss drop in one fine step "
                "(lib.train.jump_fraction on the loss): " + _parts_text(_LOSS_TRAINED) + "; interval: the test "
                "over bootstrap resamples of the data sets",
                R(is_true(_parts_text(_LOSS_TRAINED)), _JUMP),
                parts=_LOSS_TRAINED,
            ),
            Check(
                CH3,
                "derived",
                "the theory's Bayes test loss (lib.loss_drops): two separate linear drops and a "
                "softmax jump: " + _parts_text(_LOSS_THEORY),
                R(is_true(_parts_text(_LOSS_THEORY)), "the paper's qualitative shape"),
                parts=_LOSS_THEORY,
            ),
        ),
    ),
    Claim(
        "A-adam",
        "Adam runs filtered to the global minimum match the theory's order parameters and loss.",
        "quantitative agreement",
        (
            Check(
                CH4,
                "trained",
                "the larger of max |target attention of filtered Adam − MAP theory| and max |test loss of filtered "
                "Adam − the MAP theory's exact test loss| over P (both heads; lib.adam_measures); median over five "
                "data sets",
                R(
                    at_most(0.01),
                    "'quantitative agreement' read as 1 % of the attention and 1 % of the loss of a readout that "
                    "predicts nothing (the test loss's unit)",
                ),
                R(at_most(0.05), "5 % of each"),
                fmt=".4f",
                control="the same deviation for the run with the highest U at each P (the filter undone): must fail",
            ),
        ),
    ),
    Claim(
        "A-adam-Pstar",
        "Ours: filtered Adam jumps between the grid points that bracket the theory's P* (±2 %), at L = 16, 32, 64.",
        "ours (the theory's P* at V = 8)",
        (
            Check(
                CH4,
                "trained",
                "number of L at which Adam's jump lies inside the ±2 % bracket of the theory's P* "
                "(lib.bracket_measures); median over five data sets",
                R(at_least(3), "every L of the scan"),
                R(at_least(1), "at least one L"),
                fmt=".0f",
                control="the same count against a theory 10 % off (1.1 P*): must fail",
            ),
        ),
        source="ours",
    ),
    Claim(
        "A-sgld-soft",
        "SGLD samples match the theory: softmax transition at the theory's (Bayes) P*.",
        "quantitative agreement (paper A)",
        (
            Check(
                CH4,
                "sampled",
                "P from which the copy branch holds in SGLD, over the saddle-point Bayes P*; "
                "interval: bootstrap over the copy-init chains",
                R(within(1.0, rel=0.15), "'quantitative agreement' read as within 15 %"),
                R(between(0.5, 2.0), "within a factor 2"),
                control="the same ratio over the Bayes P* of half the sequence length (a theory at the wrong L): "
                "must fail",
                fmt=".2f",
            ),
        ),
        source="ours",
    ),
    Claim(
        "A-sgld",
        "SGLD samples match the theory's order parameters.",
        "quantitative agreement",
        (
            Check(
                CH4,
                "sampled",
                "for P ≥ 2 P1 (linear attention), the larger of the max relative deviation of SGLD ⟨ĉ_1⟩ from the "
                "spike+bulk theory and the max deviation of ⟨ĉ_G⟩ over the theory's largest ĉ_G in that range "
                "(lib.order_parameter_deviation; ĉ_G added after its deviations had been seen, the bound unchanged); "
                "interval: bootstrap over chains",
                R(at_most(0.15), "'quantitative agreement' read as within 15 %"),
                R(at_most(0.3), "within 30 %"),
                fmt=".2f",
                control="the same deviation from the saddle-point theory, which leaves out the bulk of G: must fail",
            ),
        ),
    ),
    Claim(
        "A-precursor",
        "The second-order (linear) transition is announced by growing fluctuations; the first-order "
        "(softmax) jump has no precursor.",
        "qualitative ('no precursor signal')",
        (
            Check(
                CH3,
                "derived",
                "susceptibility exponent γ of the reduced action near the transition: "
                + _parts_text(_PRECURSOR_THEORY),
                R(is_true(_parts_text(_PRECURSOR_THEORY)), "a divergence (γ near 1) against none (γ near 0)"),
                parts=_PRECURSOR_THEORY,
            ),
            Check(
                CH4,
                "sampled",
                "SGLD fluctuations: the linear Var(ĉ_1) at the onset over its neighbours' median "
                "(lib.peak_ratio) and the growth of the softmax Var(target) before the jump (lib.growth_before): "
                + _parts_text(_PRECURSOR_SGLD),
                R(
                    is_true(_parts_text(_PRECURSOR_SGLD)),
                    "a visible peak at the onset against a flat approach to the jump",
                ),
                control="the same test with the linear peak read at the largest P of the grid, far above the "
                "onset (no transition there): must fail",
                parts=_PRECURSOR_SGLD,
            ),
        ),
    ),
    Claim(
        "A-efficiency",
        "Softmax needs fewer samples than linear attention for the copy pattern at large L (L ln²L vs L^{3/2}V^{1/2}).",
        "scaling comparison",
        (
            Check(
                CH3,
                "derived",
                "P×(linear) / P*(softmax) at the largest L of the theory",
                R(at_least(1.5), "'fewer' read as at least a factor 1.5 at the largest L"),
                fmt=".2f",
            ),
            Check(
                CH4,
                "sampled",
                "at V = 8, L = 32: the linear head's sampled crossover (median over four data draws of the first P at "
                "which the SGLD copy share reaches 1/2, lib.scaling_points) over the smallest P at which the softmax "
                "head's copy-initialised SGLD chains hold the copy branch (lib.sampled_transition); lib."
                "sampled_efficiency. Interval: the bootstrap over data draws against the one over softmax chains, "
                "combined at their extremes",
                R(at_least(1.5), "the derived check's bound, unchanged ('fewer' read as at least a factor 1.5)"),
                fmt=".2f",
                control="the same ratio between two of the linear head's data draws, the latest crossover over the "
                "earliest (one head on both sides): must fail",
                committed=_SCALING,
            ),
        ),
    ),
    # ------------------------------------------------------------------------------------------------- paper B
    Claim(
        "B-random",
        "At a fixed model and task the emergence step varies widely across seeds.",
        "Pythia 14M: ≈2.5K to ≈115K steps (Fig. 1); a seed spread of ≈4–5× in an independent reproduction",
        (
            Check(
                CH5,
                "trained",
                "smallest, over the sizes at which some seed solves, of latest / earliest seed's "
                "point of emergence on string repetition (a run's point: its median prompt's first checkpoint from "
                "which smoothed p(target) stays >= 0.5, lib.lm.study; never = last step; "
                "lib.lm.RunPoints.spread_interval); interval: bootstrap over each size's seeds. A size at which "
                "no seed solves has spread 1 by construction and is left out (claims review 2)",
                R(
                    at_least(2.0),
                    "half, on a log scale, of the smallest spread reported (4×, an independent "
                    "reproduction); the bounds 1.5 / 1.2 were set after the data (claims review)",
                ),
                fmt=".2f",
                control="the same spread within one run: the median step of its even against its odd prompts "
                "(no seed difference by construction), the largest over a size's runs, the smallest over sizes: "
                "must fail",
                committed="the BPE suite's per-run analysis (data/lm/bpesuite)",
            ),
            Check(
                CH6,
                "trained",
                "latest / earliest emergence step over the seeds that emerge (linear map; runs "
                "not learned within the budget are left out, so the ratio is a lower bound); interval: bootstrap over "
                "seeds",
                R(at_least(2.0), "half, on a log scale, of the smallest spread reported (4×, the reproduction)"),
                control="the same spread for the runs with the attention bias c = 3 toward the true pattern, "
                "which removes the search (paper B): must fail",
                fmt=".1f",
            ),
        ),
    ),
    Claim(
        "B-never",
        "Some seeds never show the capability by the end of training.",
        "Pythia, repetition by 143K: 14M 6/10, 31M 8/10, 70M 5/10, 160M 9/10, 410M 10/10 seeds solve",
        (
            Check(
                CH5,
                "trained",
                "runs in which at least half the string-repetition prompts never reach their "
                "point of emergence (smoothed p(target) >= 0.5 from there on, lib.lm.study), at the sizes at which "
                "some seed solves (a size where none does says nothing about seeds; claims review 2); interval: "
                "bootstrap over each size's seeds (lib.lm.RunPoints.never_interval)",
                R(at_least(1), "the paper finds never-solvers at four of five sizes"),
                fmt="d",
                control="the same count on in-context repetition over the corpus-half words, a capability the "
                "corpus teaches every run by design (it repeats these words inside its spans), so that a count "
                "above zero would come from the measure (threshold, smoothing, horizon), not from the seeds: must "
                "fail; chosen after seeing that every run of the suite learns that task",
                committed="the BPE suite's per-run analysis (data/lm/bpesuite)",
            ),
        ),
    ),
    Claim(
        "B-size",
        "Larger models emerge earlier on average.",
        "Pythia mean steps: ≈78K (14M) … ≈5.8K (410M), ratio ≈0.07; not monotone (70M ≈100K)",
        (
            Check(
                CH5,
                "trained",
                "mean steps to emergence on string repetition (a run's median prompt, lib.lm.study), "
                "largest over smallest size (never = last step)",
                R(
                    at_most(0.5),
                    "at least a halving: a quarter, on a log scale, of the paper's ×0.07; the "
                    "bounds 0.7 / 0.95 were set after the data (claims review)",
                ),
                fmt=".2f",
                control="the same ratio between two halves of the smallest size's seeds (no size effect by "
                "construction), the smaller direction (the one that could pass 'at most'): must fail",
                statistic="mean",
                committed="the BPE suite's per-run analysis (data/lm/bpesuite)",
            ),
        ),
    ),
    Claim(
        "B-abrupt",
        "p(target) jumps between neighbouring checkpoints at the point of emergence.",
        "Pythia 410M, one prompt: ≈0.17 → 0.60 over 1K steps, of a rise to ≈0.74 (≈0.58 of the rise)",
        (
            Check(
                CH5,
                "trained",
                "median over the string-repetition prompts that emerge in the largest size's runs "
                "of the largest absolute rise of p(target) (smoothed over 3 checkpoints) within one regular "
                "checkpoint interval (lib.lm.onset.max_rise via lib.lm.study); interval: bootstrap over prompts",
                R(
                    at_least(0.2),
                    "about half the paper's example rise (+0.43 within one 1K-step checkpoint "
                    "interval); the share of the rise used before passed on shuffled curves as easily (claims "
                    "review) and is gone",
                ),
                R(at_least(0.1), "a quarter of the paper's example rise"),
                control="the same measure on the same prompts' curves reversed in time, i.e. their largest fall "
                "within one interval (a curve that flickers rises and falls alike; a one-way jump is absent by "
                "construction from the reversed curve): must fail; a never-learned task's prompts (in-context "
                "repetition over held-out words) and an even ramp of each prompt's own rise are shown beside it",
                fmt=".2f",
                committed="the BPE suite's per-run analysis (data/lm/bpesuite)",
            ),
        ),
    ),
    Claim(
        "B-patch",
        "Patching a few heads' attention patterns from after to before emergence recovers most of the gain.",
        "Pythia 410M: Δp +0.098 (previous-token head), +0.073 (copy head); two heads recover 'most of the "
        "performance increase'",
        (
            Check(
                CH5,
                "trained",
                "median over the largest size's runs of the share of the gain in p(target) on "
                "held-out string-repetition prompts that the top-2 heads' new patterns recover in the old model "
                "(heads ranked on the other half of the prompts; the pair of checkpoints spans the run's median "
                "emergence; lib.lm.study); interval: bootstrap over runs",
                R(
                    at_least(0.5),
                    "'most of the gain' read as at least half; the partial bound 0.2 was set "
                    "after the data (claims review, measured 0.247) and is gone",
                ),
                fmt=".2f",
                control="the same share for two heads drawn at random instead of the top two (per run the median "
                "of 16 draws, then the median over runs): must fail",
                committed="the BPE suite's per-run analysis (data/lm/bpesuite)",
            ),
        ),
    ),
    Claim(
        "B-staircase",
        "Linear map: the per-output-token losses drop one at a time, each when a head's attention "
        "finds that row's support.",
        "qualitative (Fig. 3)",
        (
            Check(
                CH6,
                "trained",
                "median over seeds of the rank correlation, within a seed, between the step at "
                "which an output bit is learned and the step at which a head first puts half its attention on that "
                "bit's true keys (lib.row_drops, lib.first_below)",
                R(
                    at_least(0.7),
                    "'each drop when a head finds that row's support' (Fig. 3): the drops follow the "
                    "heads' focus in order, a strong rank correlation",
                ),
                R(at_least(0.3), "a positive, moderate link"),
                control="the same correlation with each bit paired with another seed's focus steps",
                fmt=".2f",
            ),
        ),
    ),
    Claim(
        "B-sparsity",
        "Medium sparsity is hardest (final loss highest around s/S ≈ 1/2); at S = 32 only the extremes are learned.",
        "final loss ≈0.67 at s=8 vs 0.335 (s=1, 2) and 0.357 (s=15), S=16: gap 0.31 (S=16), 0.34 (S=32)",
        (
            Check(
                CH6,
                "trained",
                "median gap over seeds (loss at s=S/2 minus the worse of s=1 and s=S−1) at the "
                "state size whose 90 % interval reaches lower, with that interval (lib.sparsity_study)",
                R(at_least(0.155), "half of the paper's smaller gap (0.5 × 0.31)"),
                R(at_least(0.0), "a gap of the paper's sign"),
                control="the same gap at step 0, before any update, where the loss cannot depend on s",
                fmt=".3f",
            ),
        ),
    ),
    Claim(
        "B-context",
        "The loss plateau grows with context length.",
        "automaton: ≈380 steps (S=8) → ≈650 (S=32) → ≈8,700 (S=256), ≈1.9× per doubling; none at S=512",
        (
            Check(
                CH6,
                "trained",
                "plateau growth per doubling of S (median over seeds, 0 if not monotone; lib.growth_per_doubling): "
                "at FAST scale the automaton at a fixed token batch; at paper scale paper B's linear map at S = 8 to "
                "64, s = 3, a run that never leaves counted at its 10,000-step budget and the sizes taken up to the "
                "first whose median never leaves (lib.studies.paper.context); interval: bootstrap over seeds",
                R(at_least(1.5), "most of the paper's ≈1.9× per doubling"),
                R(at_least(1.2), "a clear growth"),
                control="the same growth with the attention bias toward the true pattern, which removes the "
                "search (paper B: ≈160–200 steps at every S)",
                fmt=".2f",
            ),
        ),
    ),
    Claim(
        "B-bias",
        "A bias of the attention scores toward the ground-truth pattern removes the plateau.",
        "≈160–200 steps at every S with the bias vs ≈380–8,700 without",
        (
            Check(
                CH6,
                "trained",
                "largest ratio over S of the biased to the unbiased median plateau (automaton, "
                "c = 3; lib.bias_ratio); interval: bootstrap over seeds",
                R(at_most(0.3), "the paper's ratio is ≤ 0.5 at S=8 and ≈0.02 at S=256: most of the plateau gone"),
                control="the same ratio of median emergence steps between two halves of the unbiased linear-map "
                "seeds (no bias in either; censored runs at the budget), the smaller direction: must fail (the "
                "larger direction, used before, is ≥ 1 and could never pass 'at most 0.3')",
                fmt=".2f",
            ),
        ),
    ),
    Claim(
        "B-heads",
        "More heads help more than bigger heads on the linear map.",
        "H × d_head grid: H ≥ 16 solved for every d_head (H = 1 at chance: B-heads-one)",
        (
            Check(
                CH6,
                "trained",
                "share of (H, d_head) cells in which doubling H lowers the final loss more than "
                "doubling d_head (committed study; lib.heads_vs_head_size); interval: bootstrap over seeds",
                R(at_least(0.75), "the paper's grid: more heads win in every decisive pair; ≥ 3 of 4"),
                R(at_least(0.6), "a majority beyond a coin flip"),
                contradicted=R(at_most(0.4), "bigger heads win most decisive pairs: the paper's opposite"),
                control="the same share between two halves of each cell's seeds (even seeds' mean final loss "
                "lower, over the decisive cells; the same architecture by construction): must fail",
                fmt=".2f",
                committed="the width study (data/)",
            ),
        ),
    ),
    Claim(
        "B-heads-one",
        "A single head never learns the linear map, whatever its size.",
        "H × d_head grid: H=1 ends at chance for every d_head",
        (
            Check(
                CH6,
                "trained",
                "runs with H=1 (all d_head) that leave the plateau (committed width study)",
                R(at_most(0), "'never': the paper's H=1 row ends at chance for every d_head"),
                contradicted=R(at_least(1), "one run with a single head that learns is a counterexample"),
                control="the same count at the most heads of the grid, where the paper finds every run learns",
                fmt="d",
                committed="the width study (data/)",
            ),
        ),
    ),
    Claim(
        "B-dhead",
        "The automaton needs a minimum head size: very thin heads plateau longest.",
        "fixed width 128: H=128 (d_head=1) plateau ≈2,000 steps vs ≈300–500 for H=4–16",
        (
            Check(
                CH6,
                "trained",
                "median plateau of the thinnest over the thickest heads (committed study); interval: "
                "bootstrap over each one's seeds (censored at the budget; none where the thickest heads' median "
                "is itself at the budget, lib.censored_ratio_interval)",
                R(at_least(2.0), "the paper's ratio is ≈4–7; half of the smaller"),
                fmt=".2f",
                control="the same ratio between the two halves of the thickest heads' seeds (the larger "
                "direction; censored runs at the budget): must fail",
                committed="the width study (data/)",
            ),
        ),
    ),
    Claim(
        "B-depth",
        "Depth hurts the linear map and helps the multi-rule automaton.",
        "qualitative (the paper's App. B.5)",
        (
            Check(
                CH6,
                "trained",
                "halves whose 90 % interval of the median paired final-loss difference lies on the "
                "paper's side of 0 (−1 if one lies on the other side)",
                R(at_least(2), "both halves of the claim"),
                R(at_least(1), "one half"),
                contradicted=R(at_most(-1), "a half on the opposite side"),
                fmt="d",
                control="the same score for odd minus even seeds at equal depth (at each depth of each half): no "
                "depth difference by construction, must fail",
                committed="the width study (data/): the automaton half",
            ),
        ),
    ),
    Claim(
        "B-mixer",
        "The MLP-Mixer learns the sparse linear map almost an order of magnitude faster than a transformer.",
        "'almost an order of magnitude' in sample efficiency",
        (
            Check(
                CH7,
                "trained",
                "geometric mean over s of transformer / MLP-Mixer steps to leave the plateau, "
                "seed-averaged curves (lib.curve_time_ratio); interval: bootstrap over each one's seeds. The plateau "
                "exit stays the measure at paper scale too (decided before b-mixer's s = 5 and 7 units ran): paper B's "
                "steps to a solved loss is shown beside it, unscored, because it was chosen only after the s = 3 "
                "units had shown which of the two favours the paper",
                R(at_least(5.0), "half of an order of magnitude"),
                R(at_least(2.0), "a clear speed-up"),
                control="the same ratio between two halves of the transformer's own seeds (one architecture by "
                "construction; the larger direction): must fail",
                fmt=".1f",
            ),
        ),
    ),
    Claim(
        "B-ca-best",
        "On the cellular automaton the transformer is the best architecture; Mamba, Gated DeltaNet and "
        "RWKV mostly underperform.",
        "qualitative",
        (
            Check(
                CH7,
                "trained",
                "architectures (of six others) with a lower mean held-out loss than the "
                "transformer (committed study; lib.archs_beating); interval: bootstrap over each one's "
                "evaluation seeds",
                R(at_most(0), "'best' means none better"),
                R(at_most(2), "at most two of six better"),
                contradicted=R(
                    at_least(4),
                    "most of the six others better: the transformer among the worst, "
                    "the paper's opposite (symmetric to 'at most two better')",
                ),
                fmt=".0f",
                control="the same count for a model that stays at chance (held-out loss ln C throughout), which "
                "learns nothing by construction: must fail",
                committed="the mixer study (data/)",
            ),
        ),
    ),
    Claim(
        "B-prepre",
        "Pre-pretraining on Dyck strings or cellular automata can speed up emergence (preliminary; "
        "varies by task and seed).",
        "qualitative",
        (
            Check(
                CH7,
                "trained",
                "median paired speed-up over seeds (scratch / pre-pretrained steps to leave the "
                "plateau) of the (corpus, transfer, task) pair whose 90 % interval reaches highest at its lower "
                "end, the positive control (automaton corpus before the automaton task) left out",
                R(at_least(1.5), "'speed up' read as 1.5× at least"),
                R(at_least(1.2), "1.2×"),
                control="the same statistic for two runs from scratch that differ only in their seed (scratch seed "
                "k over seed k + d, cyclically, lib.seed_nulls; no pre-pretraining by construction), the pairing "
                "chosen by the same maximum: must fail (it replaces stage 2 from the stage-1 model's untrained "
                "weights, one other initialisation shared by every seed)",
                fmt=".2f",
            ),
        ),
    ),
    # ------------------------------------------------------------------------------------------------- synthesis
    Claim(
        "S-random",
        "Ours: in paper A's copy model, the emergence step barely varies across seeds.",
        "paper B: emergence step varies across seeds, some never emerge",
        (
            Check(
                CH8,
                "trained",
                "largest coefficient of variation of the emergence step across seeds (over the "
                "training-set sizes), with its 90 % bootstrap interval over seeds at that size",
                R(at_most(0.15), "paper B's spreads are ≥ 4×; a CV of 0.15 is a spread of about 1.5×"),
                control="the same coefficient for one seed across the training-set sizes that emerge, where the "
                "step changes with P by construction (the smallest over seeds): must fail",
                fmt=".3f",
            ),
        ),
        source="ours",
    ),
    Claim(
        "S-precursor",
        "Ours: in training, the linear onset is announced by critical slowing down; the softmax P* is not.",
        "paper A: second order announced by growing fluctuations, first order without precursor",
        (
            Check(
                CH8,
                "trained",
                "relaxation time of gradient descent (mean over seeds) at the onset over far "
                "below it; interval: the test over bootstrap resamples of each head's seeds",
                R(
                    is_true(_parts_text(_SLOWING)),
                    "a divergence against none: the linear head slows at "
                    "least fivefold at its onset, the softmax head at P* by at most half as much",
                ),
                control="two, one per half, the control passing if either does: the same test with the linear "
                "head's slowing read far above its onset (P ≥ 3 P1, no transition there), and with the softmax "
                "head's slowing read at the size nearest the spinodal of its uniform branch (where that minimum "
                "loses its curvature, so the runs on it should slow): must fail",
                parts=_SLOWING,
            ),
        ),
        source="ours",
    ),
    Claim(
        "S-context",
        "Ours: paper A's sample-size exponent in L and paper B's plateau exponent in S agree.",
        "A: P* ∝ L ln²L; B: plateau grows with context",
        (
            Check(
                CH8,
                "trained",
                "|A's exponent of P* in L − B's exponent of the median plateau in S| (lib.plateau_exponent "
                "on chapter 6's context study); interval: bootstrap over B's seeds",
                R(
                    at_most(0.25),
                    "the two exponents agree to a quarter of a power (their units differ: "
                    "sequences vs steps); the former bound 2 s.e. of a 3-point fit passed noisier data more easily",
                ),
                control="the same difference with B's plateau under the attention bias c = 3, which removes the "
                "search (chapter 6): must fail",
                fmt=".2f",
            ),
        ),
        source="ours",
    ),
    Claim(
        "S-heads",
        "Ours: in paper A's copy model, more heads do not speed up emergence: they delay it.",
        "paper B: more heads help (linear map)",
        (
            Check(
                CH8,
                "trained",
                "median emergence step with the most heads over that with one head, at the middle "
                "P (runs that never emerge counted at the step budget, so a censored numerator makes it a lower "
                "bound; lib.censored_ratio_interval over seeds: no interval where the one-head median is itself at the budget: "
                "two censored medians give 1 and bound nothing)",
                R(
                    at_least(1.25),
                    "a delay: a quarter later or more with more heads (ours; paper B's parallel "
                    "search predicts a ratio below 1)",
                ),
                R(at_least(1.0), "not faster"),
                contradicted=R(at_most(0.8), "faster by a fifth or more with more heads, as paper B finds"),
                control="the same ratio between two halves of the seeds of one H (no head effect by "
                "construction), both directions, H = 1 and the most heads, the largest: must fail; runs recorded "
                "every 5 steps (at 25 the one-head steps all fell on one grid point and the control was 1 by "
                "quantisation, claims review 2)",
                statistic="median",
                fmt=".2f",
            ),
        ),
        source="ours",
    ),
)

#: Why a check on trained or sampled models has no *partial* level, per (claim id, chapter). Fixed with the criteria:
#: where the claims review found a partial bound set after the data, it was removed and none is put back.
NO_PARTIAL: dict[tuple[str, str], str] = {
    ("A-efficiency", CH4): "the derived check's single bound, copied unchanged; a weaker level added now would be "
    "set after the data",
    ("A-lin-first", CH4): "qualitative: 'before' is one ordering of two rises, read as a factor 2 in P; a smaller "
    "factor would not separate them on a grid of ratio 1.67",
    ("A-red", CH4): "the paper's 'most of the degrees of freedom' is one bound; a lower coverage would not be the "
    "two-parameter reduction it claims",
    ("A-soft-order", CH4): "hysteresis is present or absent: a gap below 0.1 of the attention (3/L) is within the "
    "chains' own spread, so there is no weaker reading",
    ("A-soft-coexist", CH1): "coexistence has no weaker form: one grid point with two minima can be an accident, "
    "which is why the bound asks for two",
    ("A-lin-order", CH1): "continuous against a jump is a dichotomy: a share between the 0.3 here and the 0.8 of a "
    "jump (A-soft-order) is neither, and shows as not at our scale",
    ("A-lin-cross-bulk", CH4): "the bulk's exponent 2 against the saddle point's 3/2 (the contradicted rule): between "
    "the two bounds the data decide for neither, so there is no partial reading",
    ("A-loss", CH1): "qualitative: each part is a dichotomy of the kind of A-soft-order and A-lin-order",
    ("A-precursor", CH4): "qualitative (a precursor present or absent); registered without a weaker form, and none "
    "is added after the data",
    ("B-random", CH5): "the partial bounds 1.5 / 1.2 were set after the data (claims review) and removed; none is "
    "put back",
    ("B-random", CH6): "the paper states no weaker spread than the 4× of the reproduction; below 2 a spread is what "
    "an evaluation grid and a few seeds give without a search",
    ("B-never", CH5): "a count: one run that never solves shows it, none does not",
    ("B-size", CH5): "the partial bounds 0.7 / 0.95 were set after the data (claims review) and removed; none is put "
    "back",
    ("B-patch", CH5): "the partial bound 0.2 was set after the data (claims review, measured 0.247) and removed; "
    "none is put back",
    ("B-bias", CH6): "the paper's weakest effect, a ratio of 0.5 at S = 8, could ground a partial level, but the "
    "check already flips between runs here: a level added now would be set after the data",
    ("B-heads-one", CH6): "'never' is a count of zero: one run that learns contradicts it (the contradicted rule)",
    ("B-dhead", CH6): "the paper's ratio (≈4–7) gives one bound, half of its smaller end; a weaker level added now, "
    "with the check not at our scale, would be set after the data",
    ("S-random", CH8): "ours, with no number in either paper: one bound reads 'barely varies' against paper B's ≥ 4×",
    ("S-precursor", CH8): "qualitative and ours: a divergence against none, no weaker form",
    ("S-context", CH8): "ours: 'agree' has one bound (a quarter of a power); a looser one would pass exponents that "
    "disagree",
}


def _with_reasons(claim: Claim) -> Claim:
    from dataclasses import replace

    return replace(
        claim, checks=tuple(replace(k, no_partial=NO_PARTIAL.get((claim.id, k.chapter), "")) for k in claim.checks)
    )


REGISTRY: dict[str, Claim] = {c.id: _with_reasons(c) for c in CLAIMS}
if len(REGISTRY) != len(CLAIMS):  # pragma: no cover - a typo in the table above
    raise RuntimeError("duplicate claim id in the registry")


#: Our setting where it is smaller than the paper's, per (claim id, chapter) of a check that has a
#: *contradicted* rule: a contradiction found at FAST scale is judged *not at our scale* there (a smaller model failing
#: says nothing against the paper's), and only a study at the paper's setting (the paper-scale column) can contradict.
SMALLER_SETTING: dict[tuple[str, str], str] = {
    ("B-heads", CH6): "FAST: S = 8, s = 2, H up to 16, 800 steps of 512 tokens; paper B: S = 16, s = 3, H up to 32, "
    "10,000 steps of 8,192 tokens",
    ("B-heads-one", CH6): "FAST: S = 8, s = 2, 800 steps of 512 tokens; paper B: S = 16, s = 3, 10,000 steps of "
    "8,192 tokens",
    ("B-depth", CH6): "FAST: linear map S = 8 over 800 steps, automaton C = 2, N = 16, T = 4, width 32; paper B: "
    "S = 16, C = 4, N = 256, T = 16, width 128",
    ("B-ca-best", CH7): "FAST: automaton C = 2, N = 16, S = 8, T = 4, 4 layers of 4 heads x 8, 4,000 steps of 1,024 "
    "tokens; paper B: C = 4, N = 256, T = 16, width 128",
    ("A-soft-scale", CH4): "Adam at L = 16, 32, 64; paper A's law is asymptotic in L, and our MAP theory's prefactor "
    "still drifts at L = 1024 (chapter 3)",
}


#: Checks that read one experiment's data, per experiment: the headline counts such rows as one experiment (four rows
#: from one set of scans are one piece of evidence, not four). A check not listed is an experiment of its own.
EXPERIMENTS: dict[str, tuple[tuple[str, str], ...]] = {
    "chapter 1's Adam scans": (
        ("A-soft-order", CH1),
        ("A-soft-coexist", CH1),
        ("A-lin-order", CH1),
        ("A-loss", CH1),
        ("A-soft-300", CH1),
    ),
    "chapter 4's Adam fits": (
        ("A-adam", CH4),
        ("A-adam-Pstar", CH4),
        ("A-red", CH4),
        ("A-soft-scale", CH4),
        ("A-lin-first", CH4),
    ),
    "chapter 4's SGLD chains": (("A-soft-order", CH4), ("A-sgld-soft", CH4), ("A-sgld", CH4), ("A-precursor", CH4)),
    "the linear-scaling study": (
        ("A-lin-V2", CH4),
        ("A-lin-cross", CH4),
        ("A-lin-cross-bulk", CH4),
        ("A-efficiency", CH4),
    ),
    "chapter 5's language-model suite": (
        ("B-random", CH5),
        ("B-never", CH5),
        ("B-size", CH5),
        ("B-abrupt", CH5),
        ("B-patch", CH5),
    ),
    "chapter 6's context study": (("B-context", CH6), ("B-bias", CH6), ("S-context", CH8)),
    "chapter 6's width study": (("B-heads", CH6), ("B-heads-one", CH6), ("B-dhead", CH6), ("B-depth", CH6)),
}


def experiment(id: str, chapter: str) -> str:
    """The experiment whose data claim ``id``'s check in ``chapter`` reads (:data:`EXPERIMENTS`; else its own)."""
    for name, rows in EXPERIMENTS.items():
        if (id, chapter) in rows:
            return name
    return f"{id} ({chapter})"


def get_claim(id: str) -> Claim:
    """The registered claim ``id``; ``KeyError`` with the known ids otherwise."""
    try:
        return REGISTRY[id]
    except KeyError:
        raise KeyError(
            f"claim {id!r} is not in the registry (lib/claims/registry.py); known: {', '.join(sorted(REGISTRY))}"
        ) from None


def parts_hold(id: str, values: Mapping[str, float], chapter: str | None = None) -> bool:
    """Whether every part of claim ``id``'s check in ``chapter`` (default: the executing chapter,
    :func:`lib.core.context.context`) passes its registered criterion (:attr:`Check.parts`); ``values`` maps each part's
    name to its measured value. The chapter passes the result as the claim's value, so the thresholds live here."""
    chapter = _executing(chapter)
    _, check = get_check(id, chapter)
    if not check.parts:
        raise ValueError(f"claim {id!r} has no parts in chapter {chapter!r}")
    names = [name for name, _ in check.parts]
    if sorted(values) != sorted(names):
        raise ValueError(f"claim {id!r} in {chapter!r} has the parts {names}, got {sorted(values)}")
    return all(crit(values[name]) for name, crit in check.parts)


def _executing(chapter: str | None) -> str:
    """``chapter``, or the executing chapter's slug (:func:`lib.core.context.context`) when ``None``."""
    if chapter is not None:
        return chapter
    from ..core.context import context

    return context().chapter


def meets(id: str, value: float, rule: str = "reproduced", chapter: str | None = None) -> bool:
    """Whether ``value`` passes the ``rule`` (``"reproduced"``, ``"partial"`` or ``"contradicted"``) criterion of
    claim ``id``'s check in ``chapter`` (default: the executing chapter): for a sentence that says on which side of
    the registered threshold a value lies (a control's, say) without typing the threshold."""
    if rule not in ("reproduced", "partial", "contradicted"):
        raise ValueError(f"rule must be 'reproduced', 'partial' or 'contradicted', got {rule!r}")
    chapter = _executing(chapter)
    found = getattr(get_check(id, chapter)[1], rule)
    if found is None:
        raise ValueError(f"claim {id!r} in {chapter!r} has no {rule} rule")
    return found.criterion(value)


def part_holds(id: str, part: str, value: float, chapter: str | None = None) -> bool:
    """Whether one part of claim ``id``'s check (:func:`parts_hold`) passes its criterion with ``value``."""
    chapter = _executing(chapter)
    _, check = get_check(id, chapter)
    found = dict(check.parts)
    if part not in found:
        raise ValueError(f"claim {id!r} in {chapter!r} has no part {part!r} (it has {list(found)})")
    return found[part](value)


def get_check(id: str, chapter: str) -> tuple[Claim, Check]:
    """The claim ``id`` and its check in ``chapter``."""
    claim = get_claim(id)
    for check in claim.checks:
        if check.chapter == chapter:
            return claim, check
    raise KeyError(
        f"claim {id!r} has no check registered for chapter {chapter!r} (it has: "
        f"{', '.join(c.chapter for c in claim.checks)})"
    )

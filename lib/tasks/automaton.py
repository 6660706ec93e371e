r"""Paper B's cellular automaton: ``T`` states of ``S`` cells in ``C`` colours, one rule table per sequence.

Cell ``i`` of the next state is a lookup in a rule table ``R`` with :math:`C^3` entries, indexed by the 3-cell
window around ``i`` with periodic boundary (our choice: centred window, wrap-around; the paper's drawing uses
:math:`(i, i+1, i+2)`, equivalent up to relabelling):

.. math:: x_{t+1}[i] = R\big[C^2\,x_t[i-1] + C\,x_t[i] + x_t[i+1]\big], \qquad \text{indices mod } S.

A pool of ``N`` tables is drawn once per run and one table is sampled per sequence; with ``N > 1`` the model must
infer the active table from the earlier states in context (the paper: C = 4, N = 256, T = 16). With ``N = 1`` the
table is learned in the weights and only the attention search remains.

*Balanced* tables (our choice, after ``reference/ca_cpu.md``): each table is a random permutation of
``arange(C^3) % C``, so every colour appears :math:`C^2` times. Unbalanced random tables at ``C = 2`` let the
model lower its loss by counting colours in context, which hides the plateau.

A sequence is the ``T`` states flattened, ``S*T`` tokens. The model reads tokens ``0..ST-2``; query ``p-1``
predicts cell ``p = (t, i)`` and, for ``t >= 1``, needs exactly the keys ``(t-1, i-1), (t-1, i), (t-1, i+1)``
(:func:`automaton_mask`). Cells of the first state are coin flips (not predictable).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..core.validate import check_size

__all__ = [
    "AutomatonTask",
    "sample_rules",
    "automaton_step",
    "automaton_batch",
    "automaton_mask",
    "predictable_queries",
]


@dataclass(frozen=True)
class AutomatonTask:
    """One cellular-automaton task (a frozen config, usable as a cache key).

    Attributes
    ----------
    C : int
        Colours (>= 2).
    S : int
        Cells per state (>= 3, so the window's three cells are distinct).
    T : int
        States per sequence (>= 2).
    N : int
        Rule tables in the pool (>= 1); one is drawn per sequence.
    seed : int
        Seed of the pool (:func:`sample_rules`).
    balanced : bool
        Each table holds every colour equally often (see the module docstring).
    """

    C: int = 2
    S: int = 8
    T: int = 4
    N: int = 1
    seed: int = 0
    balanced: bool = True

    def __post_init__(self) -> None:
        check_size("C", self.C, 2)
        check_size("S", self.S, 3)
        check_size("T", self.T, 2)
        check_size("N", self.N, 1)
        check_size("seed", self.seed, 0)
        if not isinstance(self.balanced, bool):
            raise ValueError(f"balanced must be a bool, got {self.balanced!r}")

    @property
    def seq_len(self) -> int:
        """Tokens per sequence, ``S*T``."""
        return self.S * self.T

    @property
    def vocab(self) -> int:
        """Vocabulary size (colours)."""
        return self.C


def sample_rules(task: AutomatonTask) -> torch.Tensor:
    """The pool of ``N`` rule tables, ``(N, C**3)`` int64 with entries in ``0..C-1``."""
    if not isinstance(task, AutomatonTask):
        raise ValueError(f"task must be an AutomatonTask, got {type(task).__name__}")
    g = torch.Generator().manual_seed(task.seed)
    K = task.C**3
    if task.balanced:
        base = torch.arange(K) % task.C
        return torch.stack([base[torch.randperm(K, generator=g)] for _ in range(task.N)])
    return torch.randint(0, task.C, (task.N, K), generator=g)


def automaton_step(x: torch.Tensor, table: torch.Tensor, C: int) -> torch.Tensor:
    """One step of the automaton with wrap-around.

    Parameters
    ----------
    x : Tensor, shape ``(..., S)``
        States (int, values in ``0..C-1``).
    table : Tensor, shape ``(..., C**3)``
        One rule table per state (leading axes as ``x``'s).
    C : int
        Colours.
    """
    C = check_size("C", C, 2)
    if table.shape[-1] != C**3:
        raise ValueError(f"table must end with C**3 = {C**3} entries, got shape {tuple(table.shape)}")
    if x.shape[:-1] != table.shape[:-1]:
        raise ValueError(f"x {tuple(x.shape)} and table {tuple(table.shape)} need the same leading axes")
    if x.shape[-1] < 3:
        raise ValueError(f"x needs at least 3 cells, got {x.shape[-1]}")
    idx = x.roll(1, -1) * C * C + x * C + x.roll(-1, -1)  # (..., S): window (i-1, i, i+1)
    return table.gather(-1, idx)


def automaton_batch(
    rules: torch.Tensor, n: int, S: int, T: int, generator: torch.Generator, *, return_rules: bool = False
):
    """``n`` fresh sequences, ``(n, S*T)`` int64: random first state, then ``T-1`` steps of a table from the pool.

    With ``return_rules=True`` also returns the index of each sequence's table, ``(n,)``.
    """
    if not torch.is_tensor(rules) or rules.dim() != 2:
        raise ValueError(f"rules must be an (N, C**3) tensor, got {getattr(rules, 'shape', rules)!r}")
    C = round(rules.shape[1] ** (1 / 3))
    if C**3 != rules.shape[1] or C < 2:
        raise ValueError(f"rules must have C**3 columns for some C >= 2, got {rules.shape[1]}")
    n, S, T = check_size("n", n, 1), check_size("S", S, 3), check_size("T", T, 2)
    which = torch.randint(0, rules.shape[0], (n,), generator=generator)
    tab = rules[which]  # (n, C**3)
    x = torch.randint(0, C, (n, S), generator=generator)
    states = [x]
    for _ in range(T - 1):
        x = automaton_step(x, tab, C)
        states.append(x)
    tokens = torch.stack(states, 1).reshape(n, S * T)  # (n, T, S) -> (n, S*T)
    return (tokens, which) if return_rules else tokens


def automaton_mask(S: int, T: int) -> torch.Tensor:
    """Ground-truth attention mask over the ``S*T-1`` input positions, float 0/1 ``(ST-1, ST-1)``.

    Query ``p-1`` (predicting cell ``p = (t, i)``, ``t >= 1``) has ones at keys ``(t-1)S + (i+d) mod S``,
    ``d in {-1, 0, 1}``; rows of the first state's queries are zero.
    """
    S, T = check_size("S", S, 3), check_size("T", T, 2)
    L = S * T - 1
    M = torch.zeros(L, L)
    p = torch.arange(S, S * T)
    t, i = p // S, p % S
    for d in (-1, 0, 1):
        M[p - 1, (t - 1) * S + (i + d) % S] = 1.0
    return M


def predictable_queries(S: int, T: int) -> torch.Tensor:
    """Query positions whose targets are determined by the previous state: ``S-1 .. ST-2``."""
    S, T = check_size("S", S, 3), check_size("T", T, 2)
    return torch.arange(S - 1, S * T - 1)

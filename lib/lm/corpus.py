"""The mini-suite's synthetic corpus: token streams built so that previous-token and induction heads must form.

Each training row is a concatenation of *segments*, with ``<eos>`` between segments with probability ``p_eos``:

* ``zipf``: 4–16 pseudo-words drawn from a Zipf(1) law over their rank (background text);
* ``randrep``: a uniform-random span of 6–16 tokens (pseudo-words or digits) repeated 1–3 times, the last copy
  partial: the next token of a repeat is predictable only by looking back (induction);
* ``digits``: 5–10 random digits repeated once or twice, the last copy partial (the string-repetition task);
* ``pattern``: a period of 2–4 letters or words repeated (pattern completion);
* ``ioi``: ``when A and B went to the P , A gave a O to B .`` with giver and receiver randomised.

The recipe (mix, lengths) follows ``shared/reference/minisuite.md``, which measured that a 50 % share of repeated
random spans is what makes the repetition task learnable in a few thousand steps. Generation is on the fly from a
``numpy`` generator: a run's data order is fixed by its seed, as in PolyPythias (the seed changes init and data).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .tokenizer import Vocab

__all__ = ["CorpusConfig", "CorpusSampler", "SEGMENTS"]

SEGMENTS = ("zipf", "randrep", "digits", "pattern", "ioi")


@dataclass(frozen=True)
class CorpusConfig:
    """The segment mix and the row length.

    Attributes
    ----------
    mix : tuple of (segment, weight)
        Probability of each segment kind (normalised).
    p_eos : float
        Probability of an ``<eos>`` between two segments.
    seq_len : int
        Tokens per training row (the model sees ``seq_len`` inputs and ``seq_len`` next-token targets).
    """

    mix: tuple[tuple[str, float], ...] = (("zipf", 0.15), ("randrep", 0.5), ("digits", 0.2), ("pattern", 0.075), ("ioi", 0.075))
    p_eos: float = 0.08
    seq_len: int = 64

    def __post_init__(self):
        names = [m[0] for m in self.mix]
        unknown = set(names) - set(SEGMENTS)
        if unknown or len(set(names)) != len(names):
            raise ValueError(f"mix must name distinct segments among {SEGMENTS}, got {names}")
        if any(not (w >= 0) for _, w in self.mix) or sum(w for _, w in self.mix) <= 0:
            raise ValueError(f"mix weights must be non-negative with a positive sum, got {self.mix}")
        if not 0 <= self.p_eos < 1:
            raise ValueError(f"p_eos must be in [0, 1), got {self.p_eos}")
        if not isinstance(self.seq_len, int) or self.seq_len < 16:
            raise ValueError(f"seq_len must be an int >= 16, got {self.seq_len!r}")


class CorpusSampler:
    """Draws training rows ``(batch, seq_len + 1)`` of token ids from one seeded stream.

    Parameters
    ----------
    config : CorpusConfig
    vocab : Vocab
    seed : int
        Seed of the data stream (the mini-suite uses ``10000 + run seed``).
    """

    def __init__(self, config: CorpusConfig, vocab: Vocab, seed: int):
        if not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        self.config = config
        self.rng = np.random.default_rng(int(seed))
        self.eos = vocab.id("<eos>")
        self.pseudo = vocab.group_ids("pseudo")
        self.digits = vocab.group_ids("digits")
        self.letters = vocab.group_ids("letters")
        self.names = vocab.group_ids("names")
        self.places = vocab.group_ids("places")
        self.objects = vocab.group_ids("objects")
        self.fn = {w: vocab.id(w) for w in ("when", "and", "went", "to", "the", "gave", "a", ",", ".")}
        ranks = np.arange(1, len(self.pseudo) + 1)
        self.zipf_p = (1.0 / ranks) / (1.0 / ranks).sum()
        names, weights = zip(*config.mix)
        self.kinds = names
        self.kind_p = np.asarray(weights, dtype=float) / sum(weights)

    # segments --------------------------------------------------------------------------------------
    def _zipf(self) -> list[int]:
        k = self.rng.integers(4, 17)
        return list(self.rng.choice(self.pseudo, size=k, p=self.zipf_p))

    def _randrep(self) -> list[int]:
        k = int(self.rng.integers(6, 17))
        pool = self.pseudo if self.rng.random() < 0.7 else self.digits
        span = list(self.rng.choice(pool, size=k))
        r = int(self.rng.integers(1, 4))
        return (span * (r + 1))[: k * r + int(self.rng.integers(1, k + 1))]

    def _digits(self) -> list[int]:
        k = int(self.rng.integers(5, 11))
        span = list(self.rng.choice(self.digits, size=k))
        r = int(self.rng.integers(1, 3))
        return (span * (r + 1))[: k * r + int(self.rng.integers(1, k + 1))]

    def _pattern(self) -> list[int]:
        period = int(self.rng.integers(2, 5))
        pool = self.letters if self.rng.random() < 0.5 else self.pseudo
        unit = list(self.rng.choice(pool, size=period, replace=False))
        n = int(self.rng.integers(2 * period + 1, 4 * period + 2))
        return (unit * 5)[:n]

    def _ioi(self) -> list[int]:
        a, b = self.rng.choice(self.names, size=2, replace=False)
        if self.rng.random() < 0.5:
            a, b = b, a
        f = self.fn
        place, obj = self.rng.choice(self.places), self.rng.choice(self.objects)
        return [f["when"], a, f["and"], b, f["went"], f["to"], f["the"], place, f[","], a, f["gave"], f["a"], obj,
                f["to"], b, f["."]]

    def row(self) -> np.ndarray:
        """One row of ``seq_len + 1`` token ids."""
        need = self.config.seq_len + 1
        out: list[int] = []
        while len(out) < need:
            kind = self.kinds[self.rng.choice(len(self.kinds), p=self.kind_p)]
            out.extend(getattr(self, f"_{kind}")())
            if self.rng.random() < self.config.p_eos:
                out.append(self.eos)
        return np.asarray(out[:need], dtype=np.int64)

    def batch(self, batch_size: int) -> np.ndarray:
        """``(batch_size, seq_len + 1)`` token ids."""
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        return np.stack([self.row() for _ in range(batch_size)])  # (B, T+1)

    # resumability -----------------------------------------------------------------------------------
    def get_state(self) -> dict:
        return self.rng.bit_generator.state

    def set_state(self, state: dict) -> None:
        self.rng.bit_generator.state = state

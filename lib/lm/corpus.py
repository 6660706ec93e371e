"""The mini-suite's synthetic corpus: token streams built so that previous-token and induction heads must form.

Each training row is a concatenation of *segments*, with ``<eos>`` between segments with probability ``p_eos``:

* ``zipf``: 4–16 pseudo-words drawn from a Zipf(1) law over their rank (background text);
* ``randrep``: a uniform-random span of 6–16 tokens (pseudo-words or digits) repeated 1–3 times, the last copy
  partial: the next token of a repeat is predictable only by looking back (induction);
* ``digits``: 5–10 random digits repeated once or twice, the last copy partial (the string-repetition task);
* ``pattern``: a period of 2–4 letters or words repeated (pattern completion);
* ``ioi``: ``when A and B went to the P , A gave a O to B .`` with giver and receiver randomised.

The recipe (mix, lengths) follows the mini-suite design notes, which measured that a 50 % share of repeated
random spans is what makes the repetition task learnable in a few thousand steps. Generation is on the fly from a
``numpy`` generator: a run's data order is fixed by its seed, as in PolyPythias (the seed changes init and data).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .tokenizer import Vocab

__all__ = [
    "CorpusConfig",
    "CorpusSampler",
    "SEGMENTS",
    "PROSE_SEGMENTS",
    "ProseCorpusConfig",
    "prose_stream",
    "ProseSampler",
    "RANDREP_POOLS",
    "randrep_pool",
]

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

    mix: tuple[tuple[str, float], ...] = (
        ("zipf", 0.15),
        ("randrep", 0.5),
        ("digits", 0.2),
        ("pattern", 0.075),
        ("ioi", 0.075),
    )
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


class _SegmentRows:
    """Rows of ``seq_len + 1`` tokens as seeded draws of segments (``self._segment(kind)``, kinds drawn with
    ``self.kind_p``) with ``eos`` between segments with probability ``p_eos``; resumable through the generator state."""

    def row(self) -> np.ndarray:
        """One row of ``seq_len + 1`` token ids."""
        need = self.config.seq_len + 1
        out: list[int] = []
        while len(out) < need:
            out.extend(self._segment(self.kinds[self.rng.choice(len(self.kinds), p=self.kind_p)]))
            if self.rng.random() < self.config.p_eos:
                out.append(self.eos)
        return np.asarray(out[:need], dtype=np.int64)

    def batch(self, batch_size: int) -> np.ndarray:
        """``(batch_size, seq_len + 1)`` token ids."""
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        return np.stack([self.row() for _ in range(batch_size)])  # (B, T+1)

    def get_state(self) -> dict:
        return self.rng.bit_generator.state

    def set_state(self, state: dict) -> None:
        self.rng.bit_generator.state = state


class CorpusSampler(_SegmentRows):
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
        return [
            f["when"],
            a,
            f["and"],
            b,
            f["went"],
            f["to"],
            f["the"],
            place,
            f[","],
            a,
            f["gave"],
            f["a"],
            obj,
            f["to"],
            b,
            f["."],
        ]

    def _segment(self, kind: str) -> list[int]:
        return getattr(self, f"_{kind}")()


# ------------------------------------------------------------------------------------------------ English prose
PROSE_SEGMENTS = ("prose", "reprose", "randrep")


@dataclass(frozen=True)
class ProseCorpusConfig:
    """The corpus of the byte-level BPE suite: English prose (:mod:`lib.lm.english`) tokenized once into a stream,
    and rows cut from it as segments, none of them in the format of an evaluation prompt:

    * ``prose``: a contiguous span of 8-40 tokens of the stream (background text);
    * ``reprose``: a contiguous span of ``span`` tokens repeated 1-3 times, the last copy partial (a phrase that
      recurs, as names and phrases recur in real text);
    * ``randrep``: ``span`` tokens drawn independently and repeated the same way: the next token of a repeat is
      predictable only by looking back (induction). ``randrep_pool="stream"`` draws them from the stream (English's
      token frequencies, so digits appear only at their rate in prose); ``"words"`` draws each uniformly, with
      probability ``word_share`` from the single-token whole English words of the ``"corpus"`` half
      (:func:`lib.lm.english.word_half`) and otherwise from the single-token digits and capital letters
      (:func:`randrep_pool`). Uniform draws over a few hundred tokens are what makes induction form within a CPU
      budget (a stream draw is mostly the few most frequent tokens, predictable without looking back).

    The digit-string, word-list, letter-pattern and IOI formats of :mod:`lib.lm.prompts` are not generated: no
    segment repeats a span of digits only, of distinct words, or a period of three letters on purpose, and the words
    of the word-list prompts (the ``"prompts"`` half) occur only inside prose. The stream is the same for every run
    (``text_seed``), and a run's seed sets which rows it sees, as in PolyPythias.
    """

    mix: tuple[tuple[str, float], ...] = (("prose", 0.5), ("reprose", 0.0), ("randrep", 0.5))
    n_words: int = 1_000_000
    text_seed: int = 0
    span: tuple[int, int] = (6, 16)
    p_eos: float = 0.08
    seq_len: int = 64
    randrep_pool: str = "stream"
    word_share: float = 0.7

    def __post_init__(self):
        names = [m[0] for m in self.mix]
        if set(names) - set(PROSE_SEGMENTS) or len(set(names)) != len(names):
            raise ValueError(f"mix must name distinct segments among {PROSE_SEGMENTS}, got {names}")
        if any(not (w >= 0) for _, w in self.mix) or sum(w for _, w in self.mix) <= 0:
            raise ValueError(f"mix weights must be non-negative with a positive sum, got {self.mix}")
        if not (isinstance(self.n_words, int) and self.n_words >= 1000):
            raise ValueError(f"n_words must be an int >= 1000, got {self.n_words!r}")
        lo, hi = self.span
        if not (isinstance(lo, int) and isinstance(hi, int) and 2 <= lo <= hi):
            raise ValueError(f"span must be (lo, hi) ints with 2 <= lo <= hi, got {self.span!r}")
        if not 0 <= self.p_eos < 1:
            raise ValueError(f"p_eos must be in [0, 1), got {self.p_eos}")
        if not isinstance(self.seq_len, int) or self.seq_len < 16:
            raise ValueError(f"seq_len must be an int >= 16, got {self.seq_len!r}")
        if self.randrep_pool not in RANDREP_POOLS:
            raise ValueError(f"randrep_pool must be one of {RANDREP_POOLS}, got {self.randrep_pool!r}")
        if not 0 <= self.word_share <= 1:
            raise ValueError(f"word_share must be in [0, 1], got {self.word_share}")


RANDREP_POOLS = ("stream", "words")


def randrep_pool(tokenizer) -> tuple[np.ndarray, np.ndarray]:
    """The ``"words"`` pool of ``randrep`` spans for a byte-level BPE: ``(word ids, symbol ids)``.

    Word ids: ``" word"`` for each whole English word (:func:`lib.lm.english.english_words`) of the ``"corpus"``
    half that is one token; symbol ids: ``" 0"``-``" 9"`` and ``" A"``-``" Z"`` where one token. ``ValueError``
    when either is empty.
    """
    from .english import english_words, word_half
    from .tasks import single_tokens  # the prompts' own test of "one token", so pool and prompts agree

    def ids(items) -> list[int]:
        kept = single_tokens(tokenizer, items)
        return [r[0] for r in tokenizer([" " + w for w in kept], add_special_tokens=False)["input_ids"]] if kept else []

    words = ids([w for w in english_words() if word_half(w) == "corpus"])
    symbols = ids(list("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    if not words or not symbols:
        raise ValueError(
            f"the tokenizer has {len(words)} single-token corpus words and {len(symbols)} single-token "
            "digits/capitals; the 'words' pool needs both"
        )
    return np.asarray(words, dtype=np.int64), np.asarray(symbols, dtype=np.int64)


def prose_stream(config: ProseCorpusConfig, tokenizer) -> np.ndarray:
    """The corpus's token stream ``(n,)``: ``n_words`` of prose from ``text_seed``, tokenized with a leading space
    (every word is then a ``Ġword`` pre-token, as inside Pythia's training text)."""
    from .english import sample_words

    words = sample_words(config.n_words, np.random.default_rng([config.text_seed, 11]))
    chunks = [" " + " ".join(words[i : i + 1000]) for i in range(0, len(words), 1000)]
    ids = tokenizer(chunks, add_special_tokens=False)["input_ids"]
    return np.concatenate([np.asarray(r, dtype=np.int64) for r in ids])


class ProseSampler(_SegmentRows):
    """Draws training rows ``(batch, seq_len + 1)`` from a prose stream (:class:`ProseCorpusConfig`), seeded.

    Parameters
    ----------
    config : ProseCorpusConfig
    stream : (n,) int array
        :func:`prose_stream`'s tokens.
    eos : int
        The end-of-text id put between segments with probability ``p_eos``.
    seed : int
        Seed of the row order (the mini-suite uses ``10000 + run seed``).
    pool : (word ids, symbol ids), optional
        :func:`randrep_pool`'s ids; required when ``config.randrep_pool == "words"``.
    """

    def __init__(self, config: ProseCorpusConfig, stream: np.ndarray, eos: int, seed: int, pool=None):
        if not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        if stream.ndim != 1 or stream.size < 100:
            raise ValueError(f"stream must be a 1-D token array of at least 100 tokens, got shape {stream.shape}")
        if (config.randrep_pool == "words") != (pool is not None):
            raise ValueError("pass pool=(word ids, symbol ids) exactly when config.randrep_pool == 'words'")
        self.config, self.stream, self.eos = config, stream, int(eos)
        self.pool = None if pool is None else tuple(np.asarray(p, dtype=np.int64) for p in pool)
        self.rng = np.random.default_rng(int(seed))
        names, weights = zip(*config.mix)
        self.kinds, self.kind_p = names, np.asarray(weights, dtype=float) / sum(weights)

    def _repeat(self, span: list[int]) -> list[int]:
        k, r = len(span), int(self.rng.integers(1, 4))
        return (span * (r + 1))[: k * r + int(self.rng.integers(1, k + 1))]

    def _segment(self, kind: str) -> list[int]:
        n = self.stream.size
        if kind == "prose":
            k = int(self.rng.integers(8, 41))
            i = int(self.rng.integers(0, n - k))
            return self.stream[i : i + k].tolist()
        k = int(self.rng.integers(self.config.span[0], self.config.span[1] + 1))
        if kind == "reprose":
            i = int(self.rng.integers(0, n - k))
            return self._repeat(self.stream[i : i + k].tolist())
        if self.pool is None:
            return self._repeat(self.stream[self.rng.integers(0, n, size=k)].tolist())
        words, symbols = self.pool
        from_words = self.rng.random(k) < self.config.word_share  # (k,) which positions draw a word
        span = np.where(from_words, self.rng.choice(words, size=k), self.rng.choice(symbols, size=k))
        return self._repeat(span.tolist())

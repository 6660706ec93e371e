r"""Ordinary English prose, offline: text sampled from a word-trigram model of English.

Pythia's tokenizer is a byte-level BPE learned on the Pile; the mini-suite's must be learned on English for the hub
code to meet the same splitting problems here (a word without its leading space is other tokens; rare words are
several). No corpus can be downloaded at run time, so the prose comes from the word-trigram model that the
``essential-generators`` package ships (``markov_textgen.json``, MIT licence): for each pair of words
:math:`(w_{t-2}, w_{t-1})` the observed next words and their frequencies. :func:`sample_words` walks that chain
with a seeded ``numpy`` generator (our sampler), restarting at a random capitalised pair where the chain ends, so
the text has English's word frequencies, spelling and short-range order, though not its meaning.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from importlib import resources

import numpy as np

__all__ = ["TrigramChain", "load_chain", "sample_words", "sample_text", "english_words", "word_half", "WORD_HALVES"]


class TrigramChain:
    """The trigram model as arrays: pair ``i`` is ``(left[i], right[i])``; its next words are
    ``next_word[start[i]:start[i+1]]`` with cumulative probabilities ``cum[start[i]:start[i+1]]``."""

    def __init__(self, raw: dict):
        pairs = sorted(raw)
        self.index = {p: i for i, p in enumerate(pairs)}
        self.left = [raw[p]["left"] for p in pairs]
        self.right = [raw[p]["right"] for p in pairs]
        nxt, cum, start = [], [], [0]
        for p in pairs:
            words, weights = raw[p]["transitions"], np.asarray(raw[p]["weights"], dtype=float)
            nxt.extend(words)
            cum.extend(np.cumsum(weights / weights.sum()) if weights.size else [])
            start.append(len(nxt))
        self.next_word, self.cum, self.start = nxt, np.asarray(cum), np.asarray(start)
        self.openings = np.array([i for i, w in enumerate(self.left) if w[:1].isupper() and w.isalpha()])

    def __len__(self) -> int:
        return len(self.left)


@lru_cache(maxsize=1)
def load_chain() -> TrigramChain:
    """The package's trigram model (about 300,000 word pairs; a few seconds to load, once per process)."""
    path = resources.files("essential_generators") / "markov_textgen.json"
    with path.open(encoding="utf-8") as fh:
        return TrigramChain(json.load(fh))


def sample_words(n: int, rng: np.random.Generator, chain: TrigramChain | None = None) -> list[str]:
    """``n`` words of prose from the chain (line breaks of the source, ``<br/>``, dropped)."""
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    chain = chain or load_chain()
    words: list[str] = []  # the walk, line breaks included (they are states of the chain)
    kept = 0
    pair = int(rng.choice(chain.openings))
    words += [chain.left[pair], chain.right[pair]]
    kept += 2
    while kept < n:
        lo, hi = chain.start[pair], chain.start[pair + 1]
        nxt = None
        if hi > lo:
            nxt = chain.next_word[lo + min(int(np.searchsorted(chain.cum[lo:hi], rng.random())), hi - lo - 1)]
        key = f"{words[-1]} {nxt}" if nxt is not None else None
        if key is None or key not in chain.index:
            pair = int(rng.choice(chain.openings))  # the chain ends here: a new sentence
            words += [chain.left[pair], chain.right[pair]]
            kept += 2
            continue
        words.append(nxt)
        kept += nxt != "<br/>"
        pair = chain.index[key]
    return [w for w in words if w != "<br/>"][:n]


def sample_text(n_words: int, seed: int) -> str:
    """``n_words`` words of prose from seed ``seed``, joined by spaces."""
    return " ".join(sample_words(n_words, np.random.default_rng(seed)))


#: The two halves of the English word list (:func:`word_half`): words of repeated random spans in the mini-suite's
#: corpus, and words kept for the in-context-repetition prompts (seen in training only inside prose).
WORD_HALVES = ("corpus", "prompts")


@lru_cache(maxsize=4)
def english_words(min_len: int = 4, max_len: int = 8) -> tuple[str, ...]:
    """The chain's lower-case ASCII words of ``min_len``-``max_len`` letters, sorted (whole English words, the
    pools of every word task, for any tokenizer)."""
    if not (isinstance(min_len, int) and isinstance(max_len, int) and 1 <= min_len <= max_len):
        raise ValueError(f"need ints 1 <= min_len <= max_len, got {min_len!r}, {max_len!r}")
    chain = load_chain()
    vocab = set(chain.left) | set(chain.right) | set(chain.next_word)
    return tuple(
        sorted(w for w in vocab if w.isascii() and w.isalpha() and w.islower() and min_len <= len(w) <= max_len)
    )


def word_half(word: str) -> str:
    """Which of :data:`WORD_HALVES` a word belongs to: the parity of its sha256's first byte (fixed for every
    word and tokenizer, independent of any seed, so a prompt's words never depend on a corpus's config)."""
    return WORD_HALVES[hashlib.sha256(word.encode()).digest()[0] & 1]

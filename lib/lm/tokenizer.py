"""The mini-suite's word-level tokenizer: digits, letters, names, places, objects, function words, pseudo-words.

Every word is one token, so prompts for the four tasks have single-token targets by construction. The pseudo-words
(``sadu``, ``gatoni``, ...) are generated from a fixed seed as 2–3 consonant+vowel syllables; their order is their
frequency rank in the corpus (Zipf). The tokenizer is a ``tokenizers`` ``WordLevel`` model with whitespace splitting,
wrapped as a ``transformers.PreTrainedTokenizerFast`` so that it saves next to each checkpoint exactly as Pythia's
does (``save_pretrained``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["VocabConfig", "Vocab", "build_vocab", "build_tokenizer", "single_token_id", "SPECIAL_TOKENS"]

SPECIAL_TOKENS = ("<pad>", "<unk>", "<eos>")
DIGITS = tuple(str(d) for d in range(10))
LETTERS = tuple(chr(ord("A") + i) for i in range(26))
NAMES = (
    "Mary",
    "John",
    "Anna",
    "Paul",
    "Lisa",
    "Mark",
    "Sara",
    "Tom",
    "Emma",
    "Jack",
    "Kate",
    "Sam",
    "Lucy",
    "Ben",
    "Rose",
    "Dan",
)
PLACES = ("store", "garden", "school", "office", "house", "station", "park", "market")
OBJECTS = ("ring", "book", "drink", "snack", "apple", "ball", "cup", "key")
FUNCTION_WORDS = ("when", "then", "and", "went", "to", "the", "gave", "a", "handed", ",", ".")
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


@dataclass(frozen=True)
class VocabConfig:
    """How the vocabulary is built.

    Attributes
    ----------
    n_pseudo : int
        Number of pseudo-words (the corpus's filler vocabulary).
    seed : int
        Seed of the pseudo-word generator.
    """

    n_pseudo: int = 300
    seed: int = 0

    def __post_init__(self):
        if not isinstance(self.n_pseudo, int) or not 10 <= self.n_pseudo <= 2000:
            raise ValueError(f"n_pseudo must be an int in [10, 2000], got {self.n_pseudo!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {self.seed!r}")


@dataclass(frozen=True)
class Vocab:
    """The word groups and the full token list (index = token id)."""

    tokens: tuple[str, ...]
    pseudo: tuple[str, ...]

    @property
    def ids(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.tokens)}

    def group_ids(self, group: str) -> np.ndarray:
        """Token ids of one group: digits, letters, names, places, objects, function, pseudo."""
        groups = {
            "digits": DIGITS,
            "letters": LETTERS,
            "names": NAMES,
            "places": PLACES,
            "objects": OBJECTS,
            "function": FUNCTION_WORDS,
            "pseudo": self.pseudo,
        }
        if group not in groups:
            raise ValueError(f"group must be one of {sorted(groups)}, got {group!r}")
        ids = self.ids
        return np.array([ids[w] for w in groups[group]], dtype=np.int64)

    def id(self, word: str) -> int:
        try:
            return self.ids[word]
        except KeyError:
            raise ValueError(f"word {word!r} is not in the vocabulary") from None


def _pseudo_words(n: int, seed: int, taken: set[str]) -> tuple[str, ...]:
    rng = np.random.default_rng(seed)
    words: list[str] = []
    seen = set(w.lower() for w in taken)
    while len(words) < n:
        n_syl = int(rng.integers(2, 4))
        w = "".join(
            _CONSONANTS[rng.integers(len(_CONSONANTS))] + _VOWELS[rng.integers(len(_VOWELS))] for _ in range(n_syl)
        )
        if w not in seen:
            seen.add(w)
            words.append(w)
    return tuple(words)


@lru_cache(maxsize=8)
def build_vocab(config: VocabConfig = VocabConfig()) -> Vocab:
    """The vocabulary: special tokens, digits, letters, names, places, objects, function words, pseudo-words."""
    fixed = SPECIAL_TOKENS + DIGITS + LETTERS + NAMES + PLACES + OBJECTS + FUNCTION_WORDS
    if len(set(fixed)) != len(fixed):
        raise RuntimeError("duplicate words in the fixed vocabulary")
    pseudo = _pseudo_words(config.n_pseudo, config.seed, set(fixed))
    return Vocab(tokens=fixed + pseudo, pseudo=pseudo)


def build_tokenizer(config: VocabConfig = VocabConfig()):
    """A ``PreTrainedTokenizerFast`` over :func:`build_vocab` (word level, whitespace split, no special tokens added)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = build_vocab(config)
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab.tokens)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", eos_token="<eos>")
    return tok


def single_token_id(tokenizer, text: str, *, what: str = "target") -> int:
    """The id of ``text`` if it is exactly one token (no special tokens added), else a ``ValueError`` showing it."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        pieces = tokenizer.convert_ids_to_tokens(ids)
        raise ValueError(f"{what} {text!r} is {len(ids)} tokens {pieces}, not a single token")
    if tokenizer.unk_token_id is not None and ids[0] == tokenizer.unk_token_id:
        raise ValueError(f"{what} {text!r} is the unknown token: not in the vocabulary")
    return int(ids[0])

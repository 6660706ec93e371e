"""A byte-level BPE tokenizer of Pythia's kind, learned here on English prose (:mod:`lib.lm.english`).

GPT-NeoX's tokenizer (Pythia's) is a byte-level BPE: text is split into pre-tokens at spaces, each space kept as the
first byte of the following word (``"Ġword"``, no space added in front of the text), bytes mapped to printable
characters, then merges learned by frequency. Here the same construction is trained with ``tokenizers``
(:func:`train_bpe`) on ``n_words`` of prose; the special tokens are Pythia's ``<|endoftext|>`` (id 0: begin, end,
unknown) and ``<|padding|>`` (id 1). The wrapped ``PreTrainedTokenizerFast`` saves with ``save_pretrained`` as
Pythia's does, so the prompts and the hub code meet the same splitting on it as on Pythia: ``"word"`` and
``" word"`` are different tokens, and a rare word is several.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BPEConfig", "train_bpe", "ENDOFTEXT", "PADDING"]

ENDOFTEXT = "<|endoftext|>"
PADDING = "<|padding|>"


@dataclass(frozen=True)
class BPEConfig:
    """What the tokenizer is learned from: ``n_words`` of prose from ``seed``, ``vocab_size`` tokens in all."""

    vocab_size: int = 4096
    n_words: int = 400_000
    seed: int = 0

    def __post_init__(self):
        if not isinstance(self.vocab_size, int) or not 300 <= self.vocab_size <= 65536:
            raise ValueError(f"vocab_size must be an int in [300, 65536] (256 bytes + merges), got {self.vocab_size!r}")
        if not isinstance(self.n_words, int) or self.n_words < 1000:
            raise ValueError(f"n_words must be an int >= 1000, got {self.n_words!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {self.seed!r}")


def train_bpe(config: BPEConfig = BPEConfig(), texts=None):
    """Learn the byte-level BPE; ``texts`` (an iterable of strings) replaces the sampled prose when given.

    Deterministic for a config (the prose is seeded and ``tokenizers``' trainer is deterministic on one input order).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    if texts is None:
        from .english import sample_words
        import numpy as np

        words = sample_words(config.n_words, np.random.default_rng([config.seed, 7]))
        texts = [" ".join(words[i : i + 200]) for i in range(0, len(words), 200)]  # 200-word lines
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=config.vocab_size,
        special_tokens=[ENDOFTEXT, PADDING],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=core, bos_token=ENDOFTEXT, eos_token=ENDOFTEXT, unk_token=ENDOFTEXT, pad_token=PADDING
    )

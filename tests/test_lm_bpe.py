"""The English prose sampler and the byte-level BPE learned on it: seeded, Pythia-like in how it splits text."""

from __future__ import annotations

import numpy as np
import pytest

from lib.lm.bpe import ENDOFTEXT, PADDING, BPEConfig, train_bpe
from lib.lm.english import load_chain, sample_text, sample_words


@pytest.fixture(scope="module")
def tok():
    return train_bpe()  # the default: what the mini-suite uses


def test_prose_is_seeded_english_from_the_chain():
    a, b = sample_words(3000, np.random.default_rng(1)), sample_words(3000, np.random.default_rng(1))
    assert a == b and len(a) == 3000 and a != sample_words(3000, np.random.default_rng(2))
    assert not any("<br/>" in w for w in a)
    freq = {w: a.count(w) for w in ("the", "of", "and")}
    assert min(freq.values()) > 30  # function words dominate, as in English (about 6 %, 3 %, 3 % of words)
    chain = load_chain()
    pairs = sum(f"{x} {y}" in chain.index for x, y in zip(a, a[1:]))
    assert pairs / (len(a) - 1) > 0.9  # consecutive words are pairs of the model (restarts aside)
    assert sample_text(50, 5) == sample_text(50, 5)
    with pytest.raises(ValueError, match="positive int"):
        sample_words(0, np.random.default_rng(0))


def test_the_bpe_splits_like_pythias(tok, tmp_path):
    from transformers import AutoTokenizer

    v = tok.get_vocab()
    assert v[ENDOFTEXT] == 0 and v[PADDING] == 1 and len(tok) == BPEConfig().vocab_size
    ids = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    assert ids(" the") != ids("the") and len(ids(" the")) == 1  # the leading space is part of the word
    assert all(len(ids(f" {d}")) == 1 for d in "0123456789")
    assert len(ids(" antidisestablishment")) > 2  # a rare word is several tokens
    text = "Zoë's café, 1,024 µs — naïve “quotes”\n"
    assert tok.decode(ids(text)) == text  # byte level: every string round-trips
    tok.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    assert again(text, add_special_tokens=False)["input_ids"] == ids(text)


def test_the_bpe_is_deterministic_and_validated():
    small = BPEConfig(vocab_size=600, n_words=20_000, seed=3)
    assert train_bpe(small).get_vocab() == train_bpe(small).get_vocab()
    assert train_bpe(small).get_vocab() != train_bpe(BPEConfig(vocab_size=600, n_words=20_000, seed=4)).get_vocab()
    with pytest.raises(ValueError, match="vocab_size"):
        BPEConfig(vocab_size=100)
    with pytest.raises(ValueError, match="n_words"):
        BPEConfig(n_words=10)


def test_the_prose_corpus_repeats_spans_and_never_writes_a_prompt_format(tok):
    from lib.lm.corpus import ProseCorpusConfig, ProseSampler, prose_stream

    cfg = ProseCorpusConfig(n_words=20_000)
    stream = prose_stream(cfg, tok)
    assert stream.min() >= 2 and stream.size > 20_000  # prose only: no special tokens, about 1.3 tokens per word
    a = ProseSampler(cfg, stream, tok.eos_token_id, 10_000).batch(64)
    assert np.array_equal(a, ProseSampler(cfg, stream, tok.eos_token_id, 10_000).batch(64))
    assert not np.array_equal(a, ProseSampler(cfg, stream, tok.eos_token_id, 10_001).batch(64))
    assert a.shape == (64, 65) and (a == tok.eos_token_id).any()
    # induction is rewarded: many positions repeat the token 6-16 back
    back = np.mean([(r[k:] == r[:-k]).mean() for r in a for k in range(6, 17)])
    assert back > 0.02
    # the rep prompt's format (8 or more single-digit tokens in a row) is not generated
    digits = {tok.convert_tokens_to_ids(f"Ġ{d}") for d in "0123456789"}
    longest = max(
        max((len(run) for run in "".join("d" if t in digits else "." for t in r).split(".")), default=0) for r in a
    )
    assert longest < 8
    with pytest.raises(ValueError, match="mix"):
        ProseCorpusConfig(mix=(("digits", 1.0),))


def test_a_bpe_mini_suite_builds_with_pythias_tokenizer_kind(tmp_path):
    from lib.lm.minisuite import TINY_BPE_SUITE, MiniSuiteConfig, build_suite
    from lib.lm.suite import LocalSuite
    from lib.lm.tokenizer import VocabConfig

    suite = LocalSuite(tmp_path) if build_suite(TINY_BPE_SUITE, tmp_path) else None
    tok = suite.load_tokenizer()
    assert type(tok.backend_tokenizer.model).__name__ == "BPE" and len(tok) == 512
    model = suite.load_model("30k", 1, 40)
    assert model.config.vocab_size == 512 and model.config.eos_token_id == tok.eos_token_id == 0
    with pytest.raises(ValueError, match="BPE vocabulary goes with the prose corpus"):
        MiniSuiteConfig(vocab=TINY_BPE_SUITE.vocab)
    with pytest.raises(ValueError, match="BPE vocabulary goes with the prose corpus"):
        MiniSuiteConfig(vocab=VocabConfig(), corpus=TINY_BPE_SUITE.corpus)

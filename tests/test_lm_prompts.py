"""The mini-suite's tokenizer and corpus, and the four tasks as validated prompt sets."""

from __future__ import annotations

import numpy as np
import pytest

from lib.lm.corpus import CorpusConfig, CorpusSampler
from lib.lm.prompts import PAPER_EXAMPLE, TASKS, make_prompts, prompt_set
from lib.lm.tokenizer import NAMES, PLACES, VocabConfig, build_tokenizer, build_vocab, single_token_id


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer()


def test_digits_and_words_are_single_tokens(tok):
    vocab = build_vocab()
    for word in [str(d) for d in range(10)] + list(NAMES) + list(PLACES) + list(vocab.pseudo[:50]):
        assert single_token_id(tok, " " + word) == vocab.id(word)
    ids = tok("0 7 3 1 2 0 2 3", add_special_tokens=False)["input_ids"]
    assert ids == [vocab.id(c) for c in "07312023"]


def test_vocabulary_is_deterministic_and_distinct():
    a, b = build_vocab(VocabConfig(seed=0)), build_vocab(VocabConfig(seed=0))
    assert a == b and len(set(a.tokens)) == len(a.tokens) == 382
    assert build_vocab(VocabConfig(seed=1)).pseudo != a.pseudo
    with pytest.raises(ValueError, match="n_pseudo"):
        VocabConfig(n_pseudo=3)


def test_multi_token_or_unknown_targets_are_rejected_with_the_prompt(tok):
    with pytest.raises(ValueError, match=r"prompt '0 1 2'.*2 tokens"):
        prompt_set("rep", ["0 1 2"], [" 1 2"], tok)
    with pytest.raises(ValueError, match=r"prompt '0 1 2'.*unknown token"):
        prompt_set("rep", ["0 1 2"], [" zzzqq"], tok)
    with pytest.raises(ValueError, match="one token length"):
        prompt_set("rep", ["0 1 2", "0 1"], [" 3", " 3"], tok)


@pytest.mark.parametrize("task", TASKS)
def test_tasks_give_batches_with_single_token_targets(tok, task):
    ps = make_prompts(task, tok, n=16, seed=3)
    assert ps.input_ids.shape[0] == 16 and ps.target_ids.shape == (16,)
    for p, t, tid in zip(ps.prompts, ps.targets, ps.target_ids):
        assert single_token_id(tok, t) == tid
    again = make_prompts(task, tok, n=16, seed=3)
    assert again.prompts == ps.prompts


def test_repetition_task_is_paper_b_example_then_copies(tok):
    ps = make_prompts("rep", tok, n=8)
    assert (ps.prompts[0], ps.targets[0]) == PAPER_EXAMPLE
    for p, t in zip(ps.prompts, ps.targets):
        d = p.split()
        assert len(d) == 15 and d[8:] == d[:7] and t.strip() == tok.convert_ids_to_tokens([tok(t)["input_ids"][0]])[0]


def test_unknown_task_is_rejected(tok):
    with pytest.raises(ValueError, match="task must be one of"):
        make_prompts("copy", tok)


def test_corpus_rows_are_in_vocabulary_and_seeded():
    vocab = build_vocab()
    a = CorpusSampler(CorpusConfig(), vocab, 10000).batch(8)
    b = CorpusSampler(CorpusConfig(), vocab, 10000).batch(8)
    assert a.shape == (8, 65) and np.array_equal(a, b)
    assert a.min() >= 0 and a.max() < len(vocab.tokens)
    with pytest.raises(ValueError, match="mix"):
        CorpusConfig(mix=(("nonsense", 1.0),))

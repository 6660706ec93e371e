"""Paper B's four tasks as prompt sets with single-token targets, for any tokenizer (the mini-suite's or Pythia's).

* ``rep`` (string repetition): 8 random digits, then the first 7 again; the target is the 8th digit. Prompt 0 is
  paper B's example ``0 7 3 1 2 0 2 3 0 7 3 1 2 0 2`` → ``3``.
* ``icr`` (in-context repetition): 10 distinct random words, then the first 5 again; the target is the 6th.
  Words: the mini-suite's pseudo-words of frequency rank 100–300; for a BPE tokenizer, single-token lower-case words
  from a band of its vocabulary (our choice: the paper's prompts are not public).
* ``pat`` (pattern completion): ``X Y Z X Y Z X`` → ``Y`` over distinct capital letters (our choice).
* ``ioi`` (indirect object identification): for a word-level tokenizer the corpus's template
  ``when A and B went to the P , A gave a O to`` → ``B``; for any other tokenizer Wang et al.'s BABA templates
  (hub only), with names, places and objects kept only where they are single tokens.

:func:`make_prompts` builds these sets for the word-level mini-suite only (it is not in :mod:`lib.lm`'s public API):
a byte-level BPE tokenizer (Pythia's, the BPE mini-suite's) gets its prompts from :func:`lib.lm.tasks.build_prompts`,
the per-run study's builder, and is refused here with a ``ValueError`` that says so.

Every target is checked to be one token (the prompt is shown when it is not), and all prompts of a set have the same
token length, so a set is one ``(N, T)`` batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .tokenizer import NAMES, OBJECTS, PLACES, single_token_id

__all__ = [
    "TASKS",
    "TASK_TITLES",
    "PromptSet",
    "make_prompts",
    "prompt_set",
    "is_word_level",
    "word_pool",
    "IOI_TEMPLATES",
    "PAPER_EXAMPLE",
]

TASKS = ("rep", "icr", "pat", "ioi")
TASK_TITLES = {
    "rep": "string repetition",
    "icr": "in-context repetition",
    "pat": "pattern completion",
    "ioi": "indirect object (IOI)",
}
PAPER_EXAMPLE = ("0 7 3 1 2 0 2 3 0 7 3 1 2 0 2", " 3")
#: Wang et al. (2022) BABA templates ([B] = subject, [A] = indirect object); the prompt stops before the final [A].
IOI_TEMPLATES = (
    "Then, [B] and [A] went to the [PLACE]. [B] gave a [OBJECT] to [A]",
    "Then, [B] and [A] had a lot of fun at the [PLACE]. [B] gave a [OBJECT] to [A]",
    "Then, [B] and [A] were working at the [PLACE]. [B] decided to give a [OBJECT] to [A]",
    "After [B] and [A] went to the [PLACE], [B] gave a [OBJECT] to [A]",
    "While [B] and [A] were working at the [PLACE], [B] gave a [OBJECT] to [A]",
    "Friends [B] and [A] found a [OBJECT] at the [PLACE]. [B] gave it to [A]",
)
_WORD_IOI = "when [B] and [A] went to the [PLACE] , [B] gave a [OBJECT] to [A]"


@dataclass(frozen=True)
class PromptSet:
    """N prompts of one task, tokenized.

    Attributes
    ----------
    task : str
    prompts, targets : tuple of str
        The texts (targets with their leading space, e.g. ``" 3"``).
    input_ids : (N, T) int64 array
    target_ids : (N,) int64 array
    """

    task: str
    prompts: tuple[str, ...]
    targets: tuple[str, ...]
    input_ids: np.ndarray
    target_ids: np.ndarray

    def __len__(self) -> int:
        return len(self.prompts)

    def subset(self, index) -> "PromptSet":
        index = np.atleast_1d(np.asarray(index))
        return PromptSet(
            self.task,
            tuple(self.prompts[i] for i in index),
            tuple(self.targets[i] for i in index),
            self.input_ids[index],
            self.target_ids[index],
        )


def prompt_set(task: str, prompts, targets, tokenizer) -> PromptSet:
    """Tokenize and validate: each target one token, every prompt the same length. ``ValueError`` shows the prompt."""
    prompts, targets = tuple(prompts), tuple(targets)
    if not prompts or len(prompts) != len(targets):
        raise ValueError(
            f"prompts and targets must be non-empty and of equal length, got {len(prompts)} and {len(targets)}"
        )
    rows, tids = [], []
    for p, t in zip(prompts, targets):
        try:
            tids.append(single_token_id(tokenizer, t))
        except ValueError as err:
            raise ValueError(f"prompt {p!r}: {err}") from None
        ids = tokenizer(p, add_special_tokens=False)["input_ids"]
        if tokenizer.unk_token_id is not None and tokenizer.unk_token_id in ids:
            raise ValueError(f"prompt {p!r} contains a word the tokenizer does not know")
        rows.append(ids)
    lengths = {len(r) for r in rows}
    if len(lengths) != 1:
        i = next(i for i, r in enumerate(rows) if len(r) != len(rows[0]))
        raise ValueError(
            f"prompts of a set must have one token length; {prompts[0]!r} has {len(rows[0])} tokens, "
            f"{prompts[i]!r} has {len(rows[i])}"
        )
    return PromptSet(task, prompts, targets, np.asarray(rows, dtype=np.int64), np.asarray(tids, dtype=np.int64))


def is_word_level(tokenizer) -> bool:
    """True for the mini-suite's word-level tokenizer (words are separated by spaces, punctuation included)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    return backend is not None and type(backend.model).__name__ == "WordLevel"


def word_pool(tokenizer, lo: int = 100, hi: int = 300) -> list[str]:
    """Single-token lower-case words for the ``icr`` task.

    Word-level tokenizer: its pseudo-words (lower-case, not one of the fixed words) ranked by id, ranks ``lo:hi``.
    BPE tokenizer: tokens ``Ġword`` (4–8 letters) ranked by id, ranks ``20·lo : 20·hi`` (our choice of band).
    """
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    if is_word_level(tokenizer):
        fixed = {w.lower() for w in NAMES + PLACES + OBJECTS} | {"when", "then", "and", "went", "the", "gave", "handed"}
        words = [w for w, _ in vocab if w.isalpha() and w.islower() and len(w) >= 4 and w not in fixed]
        return words[lo:hi]
    words = [
        w[1:] for w, _ in vocab if w.startswith("Ġ") and w[1:].isalpha() and w[1:].islower() and 4 <= len(w) - 1 <= 8
    ]
    return words[20 * lo : 20 * hi]


def _fill(template: str, a: str, b: str, place: str, obj: str) -> tuple[str, str]:
    text = template.replace("[A]", a).replace("[B]", b).replace("[PLACE]", place).replace("[OBJECT]", obj)
    prompt, _, last = text.rpartition(" ")
    return prompt, " " + last


def _single(tokenizer, words, word_level: bool) -> list[str]:
    out = []
    for w in words:
        try:
            single_token_id(tokenizer, " " + w if not word_level else w)
            out.append(w)
        except ValueError:
            pass
    return out


def make_prompts(task: str, tokenizer, n: int = 32, seed: int = 0) -> PromptSet:
    """``n`` prompts of ``task`` (one of :data:`TASKS`) for the word-level mini-suite's ``tokenizer``, from a seeded
    generator (IOI: the corpus's template).

    Raises
    ------
    ValueError
        An unknown task, a bad ``n``, or a tokenizer that is not word-level (a byte-level BPE's prompts are
        :func:`lib.lm.tasks.build_prompts`).
    """
    if task not in TASKS:
        raise ValueError(f"make_prompts: task must be one of {TASKS}, got {task!r}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"make_prompts: n must be a positive int, got {n!r}")
    if not is_word_level(tokenizer):
        raise ValueError(
            f"make_prompts builds the word-level mini-suite's prompts, and this {type(tokenizer).__name__} is not "
            "word-level: build a byte-level BPE's prompts (Pythia's, the BPE mini-suite's) with "
            "lib.lm.tasks.build_prompts"
        )
    rng = np.random.default_rng([seed, TASKS.index(task)])
    prompts, targets = [], []
    if task == "rep":
        for i in range(n):
            if i == 0:
                p, t = PAPER_EXAMPLE
            else:
                d = [str(x) for x in rng.integers(0, 10, size=8)]
                p, t = " ".join(d + d[:7]), " " + d[7]
            prompts.append(p)
            targets.append(t)
    elif task == "icr":
        pool = _single(tokenizer, word_pool(tokenizer), True)
        if len(pool) < 10:
            raise ValueError(f"the tokenizer has only {len(pool)} single-token words for the icr task, need 10")
        for _ in range(n):
            w = list(rng.choice(pool, size=10, replace=False))
            prompts.append(" ".join(w + w[:5]))
            targets.append(" " + w[5])
    elif task == "pat":
        letters = [chr(ord("A") + i) for i in range(26)]
        for _ in range(n):
            u = list(rng.choice(letters, size=3, replace=False))
            prompts.append(" ".join(u + u + u[:1]))
            targets.append(" " + u[1])
    else:
        names = _single(tokenizer, NAMES, True)
        places, objects = _single(tokenizer, PLACES, True), _single(tokenizer, OBJECTS, True)
        if len(names) < 2 or not places or not objects:
            raise ValueError(f"too few single-token names/places/objects for IOI: {names}, {places}, {objects}")
        for _ in range(n):
            a, b = rng.choice(names, size=2, replace=False)
            p, t = _fill(_WORD_IOI, str(a), str(b), str(rng.choice(places)), str(rng.choice(objects)))
            prompts.append(p)
            targets.append(t)
    return prompt_set(task, prompts, targets, tokenizer)

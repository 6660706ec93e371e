"""Paper B's four tasks as prompt sets built one way for every byte-level BPE tokenizer (Pythia's and the BPE suite's).

Pythia's tokenizer keeps a word's leading space inside its token (``" 3"``, ``" house"``), and text inside a document
is preceded by one; so every prompt here starts with a space and every word of it is one ``" word"`` token, checked
on the tokenizer at hand (:func:`single_tokens`). The sets:

* ``rep`` (string repetition): 8 random digits, then the first 7 again; the target is the 8th digit. Prompt 0 is
  paper B's example ``0 7 3 1 2 0 2 3 0 7 3 1 2 0 2`` → ``3``.
* ``icr`` (in-context repetition): 10 distinct whole English words, then the first 5 again; the target is the 6th.
  The words are the ``"corpus"`` half of :func:`lib.lm.english.english_words` (:func:`lib.lm.english.word_half`),
  those that are one token: the words the BPE suite's corpus repeats in its random spans (mixed with digits and
  capitals, so this format is a rare special case of the corpus's, not a segment of its own), as every word of
  Pythia's prompts has been repeated somewhere in the Pile.
* ``icr_held`` (in-context repetition, held-out words): the same format over the ``"prompts"`` half, words the BPE
  suite's corpus uses in its prose but never repeats in a span. It asks whether copying generalises to tokens never
  seen copied; at our scale it does not (a feasibility run of the 3-layer size: 0 of 32 prompts at any checkpoint),
  which makes it the never-solver reference of the abruptness measure. On Pythia it is one more icr set.
* ``pat`` (pattern completion): ``X Y Z X Y Z X`` → ``Y`` over distinct capital letters that are one token.
* ``ioi`` (indirect object identification): Wang et al.'s BABA templates. Names: the first :data:`N_ENTITIES`
  single-token entries of :data:`IOI_NAMES` followed by :data:`IOI_FALLBACK` (capitalised proper nouns of English
  prose), so Pythia gets first names and a tokenizer with few single-token names gets proper nouns, by one rule;
  places and objects: the single-token entries of :data:`IOI_PLACES` and :data:`IOI_OBJECTS`.

The choices of pools and templates are ours (paper B's prompts are not public). Every target is one token, and all
prompts of a set have one token length (one ``(N, T)`` batch); a ``ValueError`` names what is missing otherwise.
Word-level tokenizers (the first mini-suite's, :mod:`lib.lm.prompts`) are not served here.
"""

from __future__ import annotations

import numpy as np

from .prompts import IOI_TEMPLATES, PAPER_EXAMPLE, PromptSet, is_word_level, prompt_set
from .prompts import TASK_TITLES as _TITLES
from .prompts import TASKS as _PAPER_TASKS

__all__ = [
    "TASKS",
    "TASK_TITLES",
    "PERIODS",
    "build_prompts",
    "single_tokens",
    "task_pools",
    "IOI_NAMES",
    "IOI_FALLBACK",
    "IOI_PLACES",
    "IOI_OBJECTS",
    "N_ENTITIES",
]

#: Paper B's four tasks and the held-out-word variant of in-context repetition (appended: a task's index seeds it).
TASKS = _PAPER_TASKS + ("icr_held",)
TASK_TITLES = {**_TITLES, "icr_held": "in-context repetition, held-out words"}
#: Length of the repeated span in each task's prompts (for the head scores); IOI has none.
PERIODS = {"rep": 8, "icr": 10, "icr_held": 10, "pat": 3}
#: How many IOI names a prompt set draws from (the first ones of the candidate order).
N_ENTITIES = 12
IOI_NAMES = (
    "Mary",
    "John",
    "James",
    "Paul",
    "William",
    "David",
    "Robert",
    "Michael",
    "Thomas",
    "Charles",
    "George",
    "Peter",
    "Richard",
    "Joseph",
    "Henry",
    "Mark",
    "Martin",
    "Frank",
    "Anna",
    "Lisa",
    "Sarah",
    "Emma",
    "Kate",
    "Jack",
    "Tom",
    "Sam",
    "Lucy",
    "Ben",
    "Rose",
    "Dan",
)
IOI_FALLBACK = (
    "France",
    "Germany",
    "Japan",
    "Canada",
    "Mexico",
    "Brazil",
    "Egypt",
    "Denmark",
    "Europe",
    "Africa",
    "America",
    "Chicago",
    "Seattle",
    "Atlanta",
    "Tampa",
    "Alaska",
    "Virginia",
    "California",
    "Montana",
    "Argentina",
    "Belgium",
    "Asia",
)
IOI_PLACES = (
    "store",
    "garden",
    "school",
    "office",
    "house",
    "station",
    "park",
    "market",
    "church",
    "city",
    "river",
    "hospital",
    "library",
    "beach",
    "farm",
    "hotel",
    "museum",
    "area",
    "country",
    "state",
    "world",
)
IOI_OBJECTS = (
    "ring",
    "book",
    "drink",
    "snack",
    "apple",
    "ball",
    "cup",
    "key",
    "letter",
    "gift",
    "water",
    "food",
    "money",
    "paper",
    "name",
    "list",
    "system",
    "group",
)
_CAPITALS = tuple(chr(ord("A") + i) for i in range(26))
_DIGITS = tuple(str(d) for d in range(10))


def single_tokens(tokenizer, words) -> list[str]:
    """The words ``w`` of ``words`` (in order) for which ``" " + w`` is exactly one token that is not unknown."""
    words = list(words)
    if not words:
        return []
    ids = tokenizer([" " + w for w in words], add_special_tokens=False)["input_ids"]
    unk = tokenizer.unk_token_id
    return [w for w, r in zip(words, ids) if len(r) == 1 and (unk is None or r[0] != unk)]


def task_pools(tokenizer) -> dict[str, tuple[str, ...]]:
    """What each task draws from on ``tokenizer``: ``digits``, ``words``, ``capitals``, ``names``, ``places``,
    ``objects`` (all single ``" word"`` tokens; ``words`` from the corpus half, ``held_words`` from the prompts half).
    ``ValueError`` for a word-level tokenizer."""
    from .english import english_words, word_half

    if is_word_level(tokenizer):
        raise ValueError(
            "lib.lm.tasks builds prompts for byte-level BPE tokenizers; the word-level mini-suite's "
            "prompts are lib.lm.prompts.make_prompts"
        )
    words = english_words()
    seen = [w for w in words if word_half(w) == "corpus"]
    held = [w for w in words if word_half(w) == "prompts"]
    names = single_tokens(tokenizer, IOI_NAMES + IOI_FALLBACK)[:N_ENTITIES]
    return {
        "digits": tuple(single_tokens(tokenizer, _DIGITS)),
        "words": tuple(single_tokens(tokenizer, seen)),
        "held_words": tuple(single_tokens(tokenizer, held)),
        "capitals": tuple(single_tokens(tokenizer, _CAPITALS)),
        "names": tuple(names),
        "places": tuple(single_tokens(tokenizer, IOI_PLACES)),
        "objects": tuple(single_tokens(tokenizer, IOI_OBJECTS)),
    }


def _need(pools: dict, key: str, k: int, task: str) -> tuple[str, ...]:
    if len(pools[key]) < k:
        raise ValueError(
            f"task {task!r} needs {k} single-token {key} on this tokenizer, it has {len(pools[key])}: "
            f"{list(pools[key])}"
        )
    return pools[key]


def build_prompts(task: str, tokenizer, n: int = 32, seed: int = 0, *, template: int = 0) -> PromptSet:
    """``n`` prompts of ``task`` (one of :data:`TASKS`) for a byte-level BPE ``tokenizer``, from a seeded generator.

    Every prompt starts with a space; ``template`` picks the IOI template (our choice: 0, the first BABA one).
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if not 0 <= template < len(IOI_TEMPLATES):
        raise ValueError(f"template must be in [0, {len(IOI_TEMPLATES)}), got {template}")
    pools = task_pools(tokenizer)
    rng = np.random.default_rng([seed, TASKS.index(task), 2])
    prompts, targets = [], []
    for i in range(n):
        if task == "rep":
            digits = _need(pools, "digits", 10, task)
            if i == 0:
                seq = PAPER_EXAMPLE[0].split() + [PAPER_EXAMPLE[1].strip()]
            else:
                d = list(rng.choice(digits, size=8))
                seq = d + d[:8]
        elif task in ("icr", "icr_held"):
            w = list(
                rng.choice(_need(pools, "words" if task == "icr" else "held_words", 10, task), size=10, replace=False)
            )
            seq = w + w[:6]
        elif task == "pat":
            u = list(rng.choice(_need(pools, "capitals", 3, task), size=3, replace=False))
            seq = u + u + u[:2]
        else:
            a, b = rng.choice(_need(pools, "names", 2, task), size=2, replace=False)
            place = rng.choice(_need(pools, "places", 1, task))
            obj = rng.choice(_need(pools, "objects", 1, task))
            text = IOI_TEMPLATES[template].replace("[A]", str(a)).replace("[B]", str(b))
            text = text.replace("[PLACE]", str(place)).replace("[OBJECT]", str(obj))
            seq = text.split(" ")
        prompts.append(" " + " ".join(str(s) for s in seq[:-1]))
        targets.append(" " + str(seq[-1]))
    return prompt_set(task, prompts, targets, tokenizer)

r"""The registered paper-scale studies (:mod:`lib.studies._paper_scale`), one module each, and what they measure.

:mod:`~lib.studies.paper.sparsity`, :mod:`~lib.studies.paper.heads` (``b-heads-one``, ``b-heads``),
:mod:`~lib.studies.paper.seeds` (``bf16-calibration``, ``b-random``) and :mod:`~lib.studies.paper.mixers`
(``b-mixer-tuning``, ``b-mixer`` and their ``-gpt2`` versions): each study's units, summary, and what its summary
measures of the registry's claims. Here: the registry of studies (:data:`STUDIES`, :func:`make_study`), the records
as their committed units give them (:func:`study_record`) and the ledger's *paper scale* column (:func:`paper_records`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ...core.cache import DATA_DIR, Cache
from .._paper_scale import PaperStudy, publish, published
from .._study import resolve
from .heads import b_heads, b_heads_one
from .mixers import _mixer_keys, b_mixer, b_mixer_tuning
from .seeds import b_random, bf16_calibration
from .sparsity import b_sparsity

__all__ = ["STUDIES", "STAGED", "make_study", "paper_records", "study_record", "paper_claim", "study_progress"]


#: ``{name: function returning the PaperStudy}`` (``b-mixer`` takes ``data_dir``: its rates come from a study).
STUDIES: dict[str, Callable[..., PaperStudy]] = {
    "b-sparsity": b_sparsity,
    "b-heads-one": b_heads_one,
    "bf16-calibration": bf16_calibration,
    "b-random": b_random,
    "b-mixer-tuning": b_mixer_tuning,
    "b-mixer": b_mixer,
    "b-heads": b_heads,
    "b-mixer-tuning-gpt2": lambda: b_mixer_tuning("-gpt2"),
    "b-mixer-gpt2": lambda data_dir=DATA_DIR: b_mixer(data_dir, "-gpt2"),
}
#: Studies whose units depend on another study's committed result: ``{name: the study it needs}``.
STAGED = {"b-mixer": "b-mixer-tuning", "b-mixer-gpt2": "b-mixer-tuning-gpt2"}


def make_study(name: str, data_dir: Path | str = DATA_DIR) -> PaperStudy:
    """The study ``name`` (a staged one built from the committed results under ``data_dir``)."""
    return STUDIES[name](data_dir) if name in STAGED else STUDIES[name]()


def paper_records(data_dir: Path | str = DATA_DIR) -> list:
    """The ledger's *paper scale* column: one :class:`lib.claims.ClaimRecord` (``scale="paper"``) per claim a
    published study measures, judged by the registry's check for that claim exactly as at FAST scale
    (:func:`lib.claims.build_record`), with "k of n units" and the study's cost in its note. Every such study is
    committed with fixed seeds, so none is *reproduced* before it is rerun at other seed offsets."""
    from ...claims import REGISTRY, build_record

    records = []
    for name in STUDIES:
        if published(name, data_dir) is None:
            continue
        study = make_study(name, data_dir)
        record = study_record(name, data_dir) if study.measures else None
        if record is None:
            continue
        measured = resolve(study.measures)(record["summary"])
        for cid, m in measured.items():
            chapter = m.get("chapter") or REGISTRY[cid].checks[0].chapter
            note = (
                f"paper-scale study {name}: {record['done']} of {record['of']} units, {record['cpu_hours']} "
                f"CPU-hours ({', '.join(record['cpu_capability'])}); `{record['command']}`"
            )
            records.append(
                build_record(
                    cid,
                    chapter,
                    m.get("value"),
                    control=m.get("control"),
                    samples=m.get("samples"),
                    interval=m.get("interval"),
                    text=m.get("text"),
                    note=note,
                    scale="paper",
                    committed=f"the paper-scale study {name} (data/paper/)",
                    incomplete=m.get("incomplete", ()),
                    robustness=[],
                    extra={"study": name},
                )
            )
    return records


def study_record(name: str, data_dir: Path | str = DATA_DIR) -> dict | None:
    """The record of study ``name`` as its committed units give it now (:func:`lib.studies._paper_scale.publish` of the units
    under ``data/paper/`` alone, through the study's current summary; nothing computed, nothing written), or ``None``
    when nothing is published. The ledger and the chapters read this, so they always describe exactly the committed
    units of the current code."""
    if published(name, data_dir) is None:
        return None
    return publish(make_study(name, data_dir), cache=Cache(enabled=False), data_dir=data_dir, write=False)


def paper_claim(id: str, data_dir: Path | str = DATA_DIR, show: bool = True):
    """Claim ``id``'s row of the *paper scale* column (:func:`paper_records`), shown as a claim box beside the FAST
    one; ``None`` (shown as a line saying so) where no committed study measures it yet. Nothing is recorded in the
    notebook's metadata: the ledger reads the committed studies itself."""
    found = [r for r in paper_records(data_dir) if r.id == id]
    record = found[0] if found else None
    if show:
        from IPython.display import HTML, display

        display(
            HTML(record._repr_html_())
            if record is not None
            else HTML(f"<p><em>Claim {id} at paper scale: not run (no committed study measures it yet).</em></p>")
        )
    return record


def study_progress(record: dict | None, name: str | None = None) -> dict:
    """``done``, ``of`` and ``cpu_hours`` of a study's record (:func:`study_record`); for ``None`` (nothing
    published) zeros, with ``of`` the number of units of study ``name`` when it is given."""
    if record is None:
        of = 0 if name is None else len(_mixer_keys()) if name in STAGED else len(STUDIES[name]().units)
        return {"done": 0, "of": of, "cpu_hours": 0.0}
    return {k: record[k] for k in ("done", "of", "cpu_hours")}

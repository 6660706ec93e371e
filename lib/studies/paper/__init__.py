r"""The registered paper-scale studies (:mod:`lib.studies._paper_scale`), one module each, and what they measure.

:mod:`~lib.studies.paper.sparsity`, :mod:`~lib.studies.paper.heads` (``b-heads-one``, ``b-heads``),
:mod:`~lib.studies.paper.seeds` (``bf16-calibration``, ``b-random``), :mod:`~lib.studies.paper.context`
(``b-context``) and :mod:`~lib.studies.paper.mixers`
(``b-mixer-tuning``, ``b-mixer`` and their ``-gpt2`` versions): each study's units, summary, and what its summary
measures of the registry's claims. Here: the registry of studies (:data:`STUDIES`, :func:`make_study`), the records
as their committed units give them (:func:`study_record`) and the ledger's *paper scale* column (:func:`paper_records`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ...core.cache import DATA_DIR, Cache
from .._paper_scale import PaperStudy, UnreadableStudy, publish, published
from .._study import resolve
from .context import b_context
from .heads import b_heads, b_heads_one
from .mixers import _mixer_keys, b_mixer, b_mixer_tuning
from .seeds import b_random, bf16_calibration
from .sparsity import b_sparsity

__all__ = [
    "STUDIES",
    "STAGED",
    "SEEDED",
    "make_study",
    "split_name",
    "seed_sets",
    "paper_records",
    "study_record",
    "paper_claim",
    "study_progress",
]


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
    "b-context": b_context,
}
#: Studies whose units depend on another study's committed result: ``{name: the study it needs}``.
STAGED = {"b-mixer": "b-mixer-tuning", "b-mixer-gpt2": "b-mixer-tuning-gpt2"}
#: Studies that can be run again at a seed offset ``k`` as ``<name>@<k>``: the same units with every seed moved by
#: ``k``, an independent seed set (:func:`paper_records` judges a claim by every set that is complete).
SEEDED = ("b-sparsity", "b-heads-one", "b-heads", "b-random", "b-context")


def split_name(name: str) -> tuple[str, int]:
    """``(registered study, seed offset)`` of a study name ``<study>`` or ``<study>@<k>`` (``k`` a positive integer,
    only for the studies of :data:`SEEDED`)."""
    base, at, k = name.partition("@")
    if base not in STUDIES:
        raise ValueError(f"no paper-scale study {base!r} (in {name!r}); the studies are {sorted(STUDIES)}")
    if not at:
        return base, 0
    if base not in SEEDED:
        raise ValueError(f"study {base!r} has no seed offsets (in {name!r}); those that have: {list(SEEDED)}")
    if not k.isdigit() or int(k) <= 0:
        raise ValueError(f"the seed offset of {name!r} must be a positive integer, got {k!r}")
    return base, int(k)


def make_study(name: str, data_dir: Path | str = DATA_DIR) -> PaperStudy:
    """The study ``name`` (``<study>`` or, for a study of :data:`SEEDED`, ``<study>@<k>`` at seed offset ``k``; a
    staged one built from the committed results under ``data_dir``)."""
    base, offset = split_name(name)
    if base in STAGED:
        return STUDIES[base](data_dir)
    return STUDIES[base](offset) if offset else STUDIES[base]()


def seed_sets(name: str, data_dir: Path | str = DATA_DIR) -> list[int]:
    """The seed offsets ``k > 0`` at which study ``name`` is published (``data/paper/<name>@<k>.json``), ascending."""
    found = []
    for path in (Path(data_dir) / "paper").glob(f"{name}@*.json"):
        k = path.stem.partition("@")[2]
        if k.isdigit() and int(k) > 0:
            found.append(int(k))
    return sorted(found)


def _measured(name: str, data_dir: Path | str) -> tuple[dict | None, dict]:
    """``(record, {claim id: what the study measures of it})`` of the published study ``name``."""
    study = make_study(name, data_dir)
    record = study_record(name, data_dir) if study.measures else None
    return record, ({} if record is None else resolve(study.measures)(record["summary"]))


def paper_records(data_dir: Path | str = DATA_DIR) -> list:
    """The ledger's *paper scale* column: one :class:`lib.claims.ClaimRecord` (``scale="paper"``) per claim a
    published study measures, judged by the registry's check for that claim exactly as at FAST scale
    (:func:`lib.claims.build_record`), with "k of n units" and the study's cost in its note.

    The seeds a study was first committed with are its first seed set; its runs at seed offsets (``<name>@<k>``,
    :data:`SEEDED`) are the others, and they play the part of FAST's robustness runs: a claim is *reproduced* only
    when its criterion, interval and failing control hold in the first set and every complete other set gives the
    same status (:func:`lib.claims.judge`). With no complete other set the study counts as one with fixed seeds, so
    it is at most *partial*. A set still running is named in the note and judges nothing."""
    from ...claims import REGISTRY, build_record

    records = []
    for name in STUDIES:
        try:
            if published(name, data_dir) is None:
                continue
            record, measured = _measured(name, data_dir)
        except UnreadableStudy as err:  # the ledger says so and goes on
            records += _unreadable(name, err, data_dir)
            continue
        if record is None:
            continue
        others = {}
        for k in seed_sets(name, data_dir):
            try:
                others[k] = _measured(f"{name}@{k}", data_dir)
            except UnreadableStudy as err:
                others[k] = (None, {}, str(err))
        for cid, m in measured.items():
            chapter = m.get("chapter") or REGISTRY[cid].checks[0].chapter
            fixed = f"the paper-scale study {name} (data/paper/)"

            def judged(m, note, robustness, committed):
                return build_record(
                    cid,
                    chapter,
                    m.get("value"),
                    control=m.get("control"),
                    samples=m.get("samples"),
                    interval=m.get("interval"),
                    text=m.get("text"),
                    note=note,
                    scale="paper",
                    committed=committed,
                    incomplete=m.get("incomplete", ()),
                    robustness=robustness,
                    extra={"study": name, "seed_sets": sets},
                )

            sets, runs, lines = {}, [], []
            for k, (rec_k, meas_k, *why) in others.items():
                m_k = meas_k.get(cid)
                raw = "not run" if m_k is None else judged(m_k, "", [], fixed).raw_status
                sets[str(k)] = {
                    "raw_status": raw,
                    "text": None if m_k is None else m_k.get("text"),
                    "done": rec_k["done"] if rec_k else 0,
                    "of": rec_k["of"] if rec_k else 0,
                    "cpu_hours": rec_k["cpu_hours"] if rec_k else 0.0,
                }
                lines.append(
                    f"seed set +{k} ({sets[str(k)]['done']} of {sets[str(k)]['of']} units): "
                    + (f"{m_k.get('text')} [{raw}]" if m_k else why[0] if why else "nothing measured yet")
                )
                if raw not in ("incomplete", "not run"):
                    runs.append({"label": f"BOOK_SEED={k}", "statuses": {f"{chapter}/{cid}": raw}})
            note = (
                f"paper-scale study {name}: {record['done']} of {record['of']} units, {record['cpu_hours']} "
                f"CPU-hours ({', '.join(record['cpu_capability'])}); `{record['command']}`"
                + "".join(f"; {line}" for line in lines)
            )
            records.append(judged(m, note, runs, "" if runs else fixed))
    return records


def _unreadable(name: str, err: Exception, data_dir) -> list:
    """One *not run* record per claim of study ``name``, whose file cannot be read, saying why and how to repair it."""
    from ...claims import REGISTRY, build_record

    study = make_study(name, data_dir) if name not in STAGED else None
    claims = study.claims if study is not None else STUDIES_CLAIMS.get(name, ())
    return [
        build_record(
            cid,
            REGISTRY[cid].checks[0].chapter,
            None,
            note=f"paper-scale study {name}: unreadable. {err}",
            scale="paper",
            robustness=[],
            extra={"study": name, "unreadable": True},
        )
        for cid in claims
    ]


#: The claims of the staged studies, whose units cannot be built without their stage's committed result.
STUDIES_CLAIMS = {"b-mixer": ("B-mixer",), "b-mixer-gpt2": ()}


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
        of = 0 if name is None else len(_mixer_keys()) if name in STAGED else len(make_study(name).units)
        return {"done": 0, "of": of, "cpu_hours": 0.0}
    return {k: record[k] for k in ("done", "of", "cpu_hours")}

#!/usr/bin/env python3
"""The book's build steps (called by the Makefile; see README).

    python tools/bookctl.py sync [--check]     write each chapter's Colab cell from _config.yml and its paired .ipynb
    python tools/bookctl.py stage [OUT]        copy the book into OUT (default build/book), chapters as notebooks
    python tools/bookctl.py ledger [OUT]       generate OUT/_ledger.md from the executed chapters' claim records
    python tools/bookctl.py robustness OUT --label L   record an executed book's raw statuses in data/robustness.json
        [--check SNAPSHOT | --accept SNAPSHOT]  compare every status with the committed snapshot (fail on a change),
                                                or rewrite the snapshot's entries for this scale
    python tools/bookctl.py new NN_slug TITLE  start a chapter from templates/chapter.md
    python tools/bookctl.py chapters [--first N] [--prefix P] [--suffix S]   list the TOC's chapters

Why a staging folder: nbmake executes the staged notebooks once (in parallel, FAST by default) and writes their
outputs back; the claims ledger is generated from those outputs; Sphinx then renders them without executing
anything again. One execution per chapter serves the tests, the ledger and the HTML.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BOOTSTRAP_MARK = "# colab-bootstrap"
LEDGER_FILE = "_ledger.md"
COUNTS_FILE = "_ledger_counts.md"  # the count per status, included at the top of the landing page
TABLE_FILE = "_claims_table.md"  # the landing page's plain table, one row per claim
STUDIES_FILE = "_paper_studies.md"  # the Methods appendix's table of paper-scale studies
SNAPSHOT = ROOT / "data" / "ledger.json"
ACCEPT_COMMAND = "make accept-ledger"
STAGED_TOP_LEVEL = ("_config.yml", "_toc.yml")


# ----------------------------------------------------------------------------------------------- config
def load_config(root: Path = ROOT) -> dict:
    return yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))


def repository_url(root: Path = ROOT) -> str:
    url = load_config(root).get("repository", {}).get("url", "")
    if not url.startswith("https://"):
        raise SystemExit(f"_config.yml: repository.url must be an https URL, got {url!r}")
    return url


def toc_files(root: Path = ROOT) -> list[str]:
    """Every docname in _toc.yml (root first), in reading order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    names = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                names.append(node["file"])
            for key in ("parts", "chapters", "sections"):
                for child in node.get(key, []) or []:
                    walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk({k: v for k, v in toc.items() if k != "root"})
    return names


def chapter_docnames(root: Path = ROOT) -> list[str]:
    return [n for n in toc_files(root) if n.startswith("chapters/")]


# ----------------------------------------------------------------------------------------------- reading
#: The book's prose budget (issue 47): about an evening's reading at 200 words a minute.
PROSE_BUDGET = 20_000
_GLUE_ROLE = re.compile(r"\{glue:[a-z]+\}`[^`]*`")
_WORD = re.compile(r"[A-Za-z0-9][\w'’.-]*")


def prose_words(root: Path = ROOT) -> dict[str, int]:
    """Words of prose per page of the TOC, in reading order.

    Prose is the page's markdown (for a chapter, its markdown cells); a glued value counts as one word, code cells and
    their outputs count as none.
    """
    import jupytext

    counts = {}
    for doc in toc_files(root):
        path = root / f"{doc}.md"
        if doc.startswith("chapters/"):
            text = "\n".join(c.source for c in jupytext.read(path).cells if c.cell_type == "markdown")
        else:
            text = path.read_text(encoding="utf-8")
        counts[doc] = len(_WORD.findall(_GLUE_ROLE.sub("N", text)))
    return counts


# ----------------------------------------------------------------------------------------------- sync
#: Packages a chapter needs beyond Colab's own (installed at the versions requirements.txt pins, only where Colab's
#: differ; torch is never among them: Colab's CUDA build stays).
COLAB_PACKAGES = {
    "chapters/05_language_models": (
        "transformers",
        "tokenizers",
        "safetensors",
        "huggingface_hub",
        "essential-generators",
    ),
}


def requirement_pins(names, root: Path = ROOT) -> list[str]:
    """``name==version`` from requirements.txt for each of ``names`` (a ``SystemExit`` names one that is unpinned)."""
    pins = {}
    for line in (root / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[name.split("[")[0].strip().lower().replace("_", "-")] = (
                f"{name.split('[')[0].strip()}=={version.strip()}"
            )
    out = []
    for name in names:
        key = name.lower().replace("_", "-")
        if key not in pins:
            raise SystemExit(f"requirements.txt pins no version of {name} (needed by a chapter in Colab)")
        out.append(pins[key])
    return out


def bootstrap_code(url: str, pins=()) -> str:
    folder = "/content/" + url.rstrip("/").rsplit("/", 1)[-1]
    lines = [
        f"{BOOTSTRAP_MARK}: written by `make sync` from _config.yml; hidden in the book, runs only in Google Colab.",
        "import sys",
        'if "google.colab" in sys.modules:',
        "    import os, subprocess",
        f'    if not os.path.isdir("{folder}"):',
        f'        subprocess.run(["git", "clone", "--depth", "1", "{url}", "{folder}"], check=True)',
        f'    sys.path.insert(0, "{folder}")',
    ]
    if pins:
        lines += [
            "    from importlib import metadata",
            "",
            "    def _pinned(pin):",
            '        name, version = pin.split("==")',
            "        try:",
            "            return metadata.version(name) == version",
            "        except metadata.PackageNotFoundError:",
            "            return False",
            "",
            f"    _missing = [p for p in {list(pins)!r} if not _pinned(p)]",
            "    if _missing:  # the versions this chapter is tested with",
            '        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *_missing], check=True)',
        ]
    return "\n".join(lines)


_BOOTSTRAP_RE = re.compile(r"(^" + re.escape(BOOTSTRAP_MARK) + r".*?)(?=^```)", re.S | re.M)


def synced_markdown(text: str, url: str, name: str, pins=()) -> str:
    """The chapter's MyST text with its Colab cell rewritten for ``url`` (installing ``pins`` where Colab differs)."""
    matches = _BOOTSTRAP_RE.findall(text)
    if len(matches) != 1:
        raise SystemExit(
            f"{name}: expected exactly one code cell starting with '{BOOTSTRAP_MARK}', found {len(matches)}"
        )
    return _BOOTSTRAP_RE.sub(lambda _m: bootstrap_code(url, pins) + "\n", text, count=1)


def read_chapter(md_path: Path):
    """A MyST chapter as a notebook, with deterministic cell ids (jupytext draws random ones)."""
    import hashlib

    import jupytext

    nb = jupytext.read(md_path)
    for i, cell in enumerate(nb.cells):
        cell.id = f"c{i:03d}-" + hashlib.sha1(cell.source.encode("utf-8")).hexdigest()[:8]
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def notebook_text(md_path: Path) -> str:
    """The output-free .ipynb that pairs with a MyST chapter (what Colab opens)."""
    import jupytext

    return jupytext.writes(read_chapter(md_path), fmt="ipynb")


def sync(root: Path = ROOT, check: bool = False) -> list[str]:
    """Write (or, with ``check``, compare) each chapter's Colab cell and paired .ipynb. Returns the problems."""
    url = repository_url(root)
    problems = []
    for doc in chapter_docnames(root):
        md = root / f"{doc}.md"
        if not md.exists():
            problems.append(f"{doc}: listed in _toc.yml but {md.relative_to(root)} does not exist")
            continue
        text = md.read_text(encoding="utf-8")
        new_text = synced_markdown(text, url, doc, requirement_pins(COLAB_PACKAGES.get(doc, ()), root))
        if new_text != text:
            if check:
                problems.append(f"{doc}.md: its Colab cell does not match repository.url in _config.yml")
            else:
                md.write_text(new_text, encoding="utf-8")
        ipynb = root / f"{doc}.ipynb"
        want = notebook_text(md)
        have = ipynb.read_text(encoding="utf-8") if ipynb.exists() else None
        if have != want:
            if check:
                problems.append(f"{doc}.ipynb is out of sync with {doc}.md (run `make sync`)")
            else:
                ipynb.write_text(want, encoding="utf-8")
    return problems


# ----------------------------------------------------------------------------------------------- stage
def stage(out: Path, root: Path = ROOT) -> None:
    """Copy the book into ``out``: top-level pages and config as they are, chapters converted to notebooks."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in STAGED_TOP_LEVEL:
        shutil.copy2(root / name, out / name)
    for extra in ("_static", "_ext", "references.bib"):
        src = root / extra
        if src.is_dir():
            shutil.copytree(src, out / extra)
        elif src.exists():
            shutil.copy2(src, out / extra)
    for doc in toc_files(root):
        md = root / f"{doc}.md"
        if not md.exists():
            raise SystemExit(f"_toc.yml lists {doc}, but {md.relative_to(root)} does not exist")
        target = out / doc
        target.parent.mkdir(parents=True, exist_ok=True)
        if doc.startswith("chapters/"):
            target.with_suffix(".ipynb").write_text(notebook_text(md), encoding="utf-8")
        else:
            shutil.copy2(md, target.with_suffix(".md"))


# ----------------------------------------------------------------------------------------------- ledger
def executed_chapters(out: Path, root: Path = ROOT) -> dict[str, Path]:
    """Staged chapter notebooks by slug; each must have been executed."""
    found = {}
    for doc in chapter_docnames(root):
        path = out / f"{doc}.ipynb"
        if not path.exists():
            raise SystemExit(f"{path} is missing: run the stage and execute steps first")
        nb = json.loads(path.read_text(encoding="utf-8"))
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        if code and all(c.get("execution_count") is None for c in code):
            raise SystemExit(f"{path} has not been executed: the ledger is built from executed chapters only")
        found[Path(doc).name] = path
    return found


#: The snapshot's key for the statuses of the *paper scale* column (committed paper-scale studies, data/paper/).
PAPER_STUDIES = "paper-studies"


def ledger(out: Path, root: Path = ROOT):
    """Write ``out/_ledger.md``, ``out/_ledger_counts.md``, ``out/_claims_table.md`` and ``out/_paper_studies.md``;
    returns the ledger's text, the claim records of the
    executed chapters and those of the committed paper-scale studies (:func:`lib.studies.paper.paper_records`)."""
    sys.path.insert(0, str(root))
    from lib.claims import collect_claims, counts_markdown, ledger_markdown
    from lib.claims.ledger import claims_table_markdown
    from lib.studies.paper import paper_records

    chapters = executed_chapters(out, root)
    records = collect_claims(chapters.values())
    paper = paper_records()
    titles = {slug: f"/chapters/{slug}" for slug in chapters}
    text = ledger_markdown(records, titles, paper=paper)
    (out / LEDGER_FILE).write_text(text, encoding="utf-8")
    counts = counts_markdown(records, paper)
    (out / COUNTS_FILE).write_text(counts + "\n", encoding="utf-8")
    (out / TABLE_FILE).write_text(claims_table_markdown(records, paper, titles), encoding="utf-8")
    (out / STUDIES_FILE).write_text(paper_studies_markdown(), encoding="utf-8")
    return text, records, paper


def paper_studies_markdown(data_dir: Path | None = None) -> str:
    """One row per paper-scale study and seed set as committed under ``data/paper/``: the claims it measures, the
    units done, the CPU-hours and the CPUs that computed them, and the command that resumes it."""
    from lib.core.env import DATA_DIR
    from lib.studies._paper_scale import UnreadableStudy, published
    from lib.studies.paper import STUDIES, seed_sets

    data_dir = DATA_DIR if data_dir is None else data_dir
    lines = ["| study | claims | units done | CPU-hours | CPU | command |", "|---|---|---|---|---|---|"]
    for base in STUDIES:
        for name in [base] + [f"{base}@{k}" for k in seed_sets(base, data_dir)]:
            try:
                record = published(name, data_dir)
            except UnreadableStudy as err:
                lines.append(f"| `{name}` | unreadable: {err} | | | | |")
                continue
            if record is None:
                continue
            lines.append(
                f"| `{name}` | {', '.join(record.get('claims', [])) or '—'} | {record['done']} of {record['of']} | "
                f"{record['cpu_hours']:.1f} | {', '.join(record.get('cpu_capability', []))} | `{record['command']}` |"
            )
    return "\n".join(lines) + "\n"


def statuses(records) -> dict[str, str]:
    """``{"<chapter>/<claim id>": status}`` of one build."""
    return {f"{r.chapter}/{r.id}": r.status_text for r in records}  # a derived check with its verdict


def snapshot_changes(current: dict[str, str], snapshot: dict[str, str]) -> list[str]:
    """Every difference between a build's statuses and the snapshot's, one line each (empty: none)."""
    lines = [
        f"{k}: {snapshot[k]!r} -> {current[k]!r}"
        for k in sorted(set(current) & set(snapshot))
        if current[k] != snapshot[k]
    ]
    lines += [f"{k}: new claim ({current[k]!r}), not in the snapshot" for k in sorted(set(current) - set(snapshot))]
    lines += [
        f"{k}: in the snapshot ({snapshot[k]!r}) but not recorded by this build"
        for k in sorted(set(snapshot) - set(current))
    ]
    return lines


#: Chapters whose claims come from another source when an environment variable is set (chapter 5 on a hub suite:
#: shown, recorded as not run, and not compared with the snapshot of the committed mini-suite).
OTHER_SOURCE = {"BOOK_LM_HUB": "05_language_models"}


def skipped_chapters() -> set[str]:
    """The chapters :data:`OTHER_SOURCE` takes out of the snapshot comparison in this environment."""
    return {ch for var, ch in OTHER_SOURCE.items() if os.environ.get(var, "").strip()}


def check_snapshot(records, scale: str, path: Path = SNAPSHOT, skip: set[str] | frozenset = frozenset()) -> list[str]:
    """Differences from the committed snapshot at ``scale`` (chapters in ``skip`` left out); a scale without a
    snapshot has none to compare."""
    if not path.exists():
        return [f"{path} is missing: run `{ACCEPT_COMMAND}` to record the statuses of this build"]
    saved = json.loads(path.read_text(encoding="utf-8")).get("statuses", {})
    if scale not in saved:
        return []
    keep = lambda k: k.split("/")[0] not in skip  # noqa: E731
    return snapshot_changes(
        {k: v for k, v in statuses(records).items() if keep(k)}, {k: v for k, v in saved[scale].items() if keep(k)}
    )


#: At a seed offset other than the default (``BOOK_SEED=k``) statuses may move: the claims that do are fragile and the
#: robustness runs record them. Such a build passes when at least this share of the snapshot's claims keep their
#: status (issue 13's bar: a book whose statuses survive other seeds), and lists the ones that moved.
KEEP_AT_OTHER_OFFSETS = 0.9


def kept_share(records, scale: str, path: Path = SNAPSHOT, skip: set[str] | frozenset = frozenset()) -> tuple[int, int]:
    """``(kept, n)``: how many of the snapshot's ``n`` claims at ``scale`` (chapters in ``skip`` left out) this build
    recorded with the same status (a claim the build did not record counts as changed)."""
    saved = json.loads(path.read_text(encoding="utf-8")).get("statuses", {}).get(scale, {}) if path.exists() else {}
    saved = {k: v for k, v in saved.items() if k.split("/")[0] not in skip}
    now = statuses(records)
    return sum(now.get(k) == v for k, v in saved.items()), len(saved)


def seed_offsets(records) -> set[int]:
    """The seed offsets (``BOOK_SEED``) the records were measured at."""
    return {int(r.extra.get("seed_offset", 0)) for r in records}


def accept_snapshot(records, scale: str, path: Path = SNAPSHOT, root: Path = ROOT) -> None:
    """Write this build's statuses as the snapshot of ``scale`` (other scales kept) and its manifest entry."""
    sys.path.insert(0, str(root))
    from lib.core.cache import MANIFEST, _atomic_write, _read_manifest, _sha256

    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    data.setdefault("statuses", {})[scale] = dict(sorted(statuses(records).items()))
    data["about"] = (
        "Claim statuses of the default-seed build, per scale; `make book` and `make test` fail when one "
        f"changes. Rewritten by `{ACCEPT_COMMAND}`: commit the diff with the reason for each change."
    )
    raw = (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()
    _atomic_write(path, raw)
    manifest = _read_manifest(path.parent)
    manifest["files"][path.name] = {
        "sha256": _sha256(raw),
        "size": len(raw),
        "command": ACCEPT_COMMAND,
        "function": "tools.bookctl.accept_snapshot",
    }
    manifest["files"] = dict(sorted(manifest["files"].items()))
    _atomic_write(path.parent / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())


# ----------------------------------------------------------------------------------------------- robustness
ROBUSTNESS = ROOT / "data" / "robustness.json"


def robustness_run(out: Path, label: str, root: Path = ROOT, only: list[str] | None = None) -> dict:
    """One robustness run from a staged, executed book: the status each claim had before the robustness
    requirement (``raw_status``), the seed offset, the CPU kernel (run this under the run's own environment, as
    ``make robustness`` does, so that ``ATEN_CPU_CAPABILITY`` is the run's) and the date. A chapter that failed part-way
    keeps the claims it recorded; the ones it did not reach are missing from the run (and count as changed)."""
    sys.path.insert(0, str(root))
    import datetime

    import torch

    from lib.claims import collect_claims

    statuses, failed, offsets = {}, [], set()
    for doc in chapter_docnames(root):
        if only is not None and Path(doc).name not in only:
            continue
        path = out / f"{doc}.ipynb"
        nb = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"cells": []}
        if (
            any(
                o.get("output_type") == "error"
                for c in nb["cells"]
                if c.get("cell_type") == "code"
                for o in c.get("outputs", [])
            )
            or not path.exists()
        ):
            failed.append(Path(doc).name)
        for r in collect_claims([path]) if path.exists() else []:
            statuses[r.key] = r.raw_status
            offsets.add(r.extra.get("seed_offset", 0))
    return {
        "label": label,
        "seed_offsets": sorted(offsets),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch": torch.__version__,
        "date": datetime.date.today().isoformat(),
        "failed_chapters": failed,
        "statuses": dict(sorted(statuses.items())),
    }


def record_robustness(run: dict, path: Path = ROBUSTNESS, root: Path = ROOT, merge: bool = False) -> None:
    """Add ``run`` to ``data/robustness.json`` (replacing a run of the same label), with its manifest entry.

    ``merge``: update the run of the same label with this run's chapters only (the others keep their statuses).
    """
    sys.path.insert(0, str(root))
    from lib.core.cache import MANIFEST, _atomic_write, _read_manifest, _sha256

    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    old = next((r for r in data.get("runs", []) if r.get("label") == run["label"]), None)
    if merge and old is not None:
        redone = {k.split("/")[0] for k in run["statuses"]} | set(run["failed_chapters"])
        kept = {k: v for k, v in old["statuses"].items() if k.split("/")[0] not in redone}
        failed = sorted(set(run["failed_chapters"]) | (set(old.get("failed_chapters", [])) - redone))
        run = dict(
            run,
            statuses=dict(sorted({**kept, **run["statuses"]}.items())),
            failed_chapters=failed,
            redone={**old.get("redone", {}), **{c: run["date"] for c in sorted(redone)}},
        )
    runs = [r for r in data.get("runs", []) if r.get("label") != run["label"]] + [run]
    data = {
        "about": (
            "Robustness runs of the FAST chapters (`make robustness`): per run, each claim's status before "
            "the robustness requirement. A claim whose status differs in any run is fragile and cannot be "
            "reproduced (lib.claims.record)."
        ),
        "runs": sorted(runs, key=lambda r: r["label"]),
    }
    raw = (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()
    _atomic_write(path, raw)
    manifest = _read_manifest(path.parent)
    manifest["files"][path.name] = {
        "sha256": _sha256(raw),
        "size": len(raw),
        "command": "make robustness",
        "function": "tools.bookctl.record_robustness",
    }
    manifest["files"] = dict(sorted(manifest["files"].items()))
    _atomic_write(path.parent / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())


# ----------------------------------------------------------------------------------------------- times
def execution_times(out: Path, root: Path = ROOT) -> dict[str, float | None]:
    """Seconds each staged chapter took to execute, from its cells' execution timestamps (first cell's start to the
    last cell's end, as nbclient records them); ``None`` for a chapter not executed (or one that stopped before its
    first cell)."""
    import datetime

    def stamp(text):
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))

    times = {}
    for doc in chapter_docnames(root):
        path = out / f"{doc}.ipynb"
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"] if path.exists() else []
        marks = [c.get("metadata", {}).get("execution", {}) for c in cells if c.get("cell_type") == "code"]
        starts = [stamp(m["iopub.execute_input"]) for m in marks if "iopub.execute_input" in m]
        ends = [stamp(m["shell.execute_reply"]) for m in marks if "shell.execute_reply" in m]
        times[Path(doc).name] = (max(ends) - min(starts)).total_seconds() if starts and ends else None
    return times


# ----------------------------------------------------------------------------------------------- new
def new_chapter(slug: str, title: str, root: Path = ROOT) -> Path:
    if not re.fullmatch(r"\d\d_[a-z0-9_]+", slug):
        raise SystemExit(f"chapter slug must look like 'NN_words', got {slug!r}")
    target = root / "chapters" / f"{slug}.md"
    if target.exists():
        raise SystemExit(f"{target} exists already")
    text = (root / "templates" / "chapter.md").read_text(encoding="utf-8")
    text = text.replace("NN_slug", slug).replace("# Chapter title", f"# {title}")
    target.write_text(synced_markdown(text, repository_url(root), slug), encoding="utf-8")
    print(f"created {target.relative_to(root)}; add `- file: chapters/{slug}` to _toc.yml, then run `make sync`")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_sync = sub.add_parser("sync")
    p_sync.add_argument("--check", action="store_true", help="only report differences (exit 1 if any)")
    for name in ("stage", "ledger"):
        p = sub.add_parser(name)
        p.add_argument("out", nargs="?", default=str(ROOT / "build" / "book"))
        if name == "ledger":
            mode = p.add_mutually_exclusive_group()
            mode.add_argument("--check", metavar="SNAPSHOT", help="fail if a status differs from this snapshot")
            mode.add_argument("--accept", metavar="SNAPSHOT", help="rewrite this snapshot with the build's statuses")
    p_rob = sub.add_parser("robustness", help="record one robustness run from an executed staged book")
    p_rob.add_argument("out")
    p_rob.add_argument("--label", required=True, help="e.g. BOOK_SEED=1")
    p_rob.add_argument("--into", default=str(ROBUSTNESS), help="the robustness file (default data/robustness.json)")
    p_rob.add_argument("--only", nargs="*", default=None, help="chapter slugs to read (with --merge: to redo)")
    p_rob.add_argument("--merge", action="store_true", help="update the run of this label with these chapters only")
    p_list = sub.add_parser("chapters", help="print the chapter docnames of the TOC (first N with --first)")
    p_list.add_argument("--first", type=int, default=None)
    p_list.add_argument("--suffix", default="", help="append this to each docname (e.g. .ipynb)")
    p_list.add_argument("--prefix", default="", help="prepend this to each docname (e.g. build/book/)")
    p_times = sub.add_parser("times", help="how long each staged chapter took to execute (from its cell timestamps)")
    p_times.add_argument("out", nargs="?", default=str(ROOT / "build" / "book"))
    sub.add_parser("words", help="words of prose per page and in all (the budget is PROSE_BUDGET)")
    p_new = sub.add_parser("new")
    p_new.add_argument("slug")
    p_new.add_argument("title")
    args = parser.parse_args(argv)

    if args.cmd == "sync":
        problems = sync(check=args.check)
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    if args.cmd == "words":
        counts = prose_words()
        for doc, n in counts.items():
            print(f"{n:6d}  {doc}")
        print(f"{sum(counts.values()):6d}  in all (budget {PROSE_BUDGET})")
        return 0
    if args.cmd == "stage":
        stage(Path(args.out))
        print(f"staged {len(chapter_docnames())} chapter(s) into {args.out}")
        return 0
    if args.cmd == "robustness":
        run = robustness_run(Path(args.out), args.label, only=args.only)
        record_robustness(run, Path(args.into), merge=args.merge)
        print(
            f"robustness run {args.label}: {len(run['statuses'])} claims, failed chapters: "
            f"{', '.join(run['failed_chapters']) or 'none'} -> {args.into}"
        )
        return 0
    if args.cmd == "ledger":
        text, records, paper = ledger(Path(args.out))
        print(text.splitlines()[0])
        scales = {r.scale for r in records}
        if (args.check or args.accept) and len(scales) != 1:
            raise SystemExit(f"the chapters were executed at more than one scale ({sorted(scales)}): rebuild them")
        scale = scales.pop() if scales else "fast"
        skip = skipped_chapters()
        if args.accept and skip:
            raise SystemExit(
                f"not accepting a build whose {', '.join(sorted(skip))} read another source "
                f"({', '.join(v for v in OTHER_SOURCE if os.environ.get(v))} is set)"
            )
        offsets = seed_offsets(records)
        if args.accept and offsets - {0}:
            raise SystemExit(
                f"not accepting a build at seed offset(s) {sorted(offsets - {0})}: the snapshot holds the "
                "default seed's statuses"
            )
        if args.accept:
            accept_snapshot(records, scale, Path(args.accept))
            accept_snapshot(paper, PAPER_STUDIES, Path(args.accept))
            print(
                f"wrote the {scale}-scale statuses of {len(records)} claims and the paper-scale statuses of "
                f"{len(paper)} (committed studies) to {args.accept}"
            )
        elif args.check:
            if skip:
                print(f"not compared with the snapshot (another source): {', '.join(sorted(skip))}")
            changes = check_snapshot(records, scale, Path(args.check), skip)
            paper_changes = check_snapshot(paper, PAPER_STUDIES, Path(args.check))
            if paper_changes:  # the committed studies do not depend on the build's seed offset or scale
                print(
                    f"paper-scale statuses (committed studies) differ from {args.check}:",
                    *paper_changes,
                    sep="\n  ",
                    file=sys.stderr,
                )
                print(
                    f"if the change is meant, run `{ACCEPT_COMMAND}` and commit the diff with its reason",
                    file=sys.stderr,
                )
                return 1
            if changes and offsets - {0}:
                kept, n = kept_share(records, scale, Path(args.check), skip)
                ok = n > 0 and kept >= KEEP_AT_OTHER_OFFSETS * n
                print(
                    f"seed offset {sorted(offsets)}: {kept} of {n} statuses kept ({kept / max(n, 1):.0%}; at least "
                    f"{KEEP_AT_OTHER_OFFSETS:.0%} needed); moved (fragile claims):",
                    *changes,
                    sep="\n  ",
                    file=sys.stdout if ok else sys.stderr,
                )
                return 0 if ok else 1
            if changes:
                print(
                    f"claim statuses differ from {args.check} ({scale} scale):", *changes, sep="\n  ", file=sys.stderr
                )
                print(
                    f"if the change is meant, run `{ACCEPT_COMMAND}` and commit the diff with its reason",
                    file=sys.stderr,
                )
                return 1
            print(f"every status matches {args.check} ({scale} scale)")
        return 0
    if args.cmd == "chapters":
        docs = chapter_docnames()[: args.first] if args.first else chapter_docnames()
        print(" ".join(f"{args.prefix}{d}{args.suffix}" for d in docs))
        return 0
    if args.cmd == "times":
        times = execution_times(Path(args.out))
        for name, t in times.items():
            print(f"  {name:24s} {'not executed' if t is None else f'{t:6.0f} s'}")
        done = [t for t in times.values() if t is not None]
        print(f"  {'sum over chapters':24s} {sum(done):6.0f} s ({len(done)} of {len(times)} executed)")
        return 0
    if args.cmd == "new":
        new_chapter(args.slug, args.title)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())

"""``python -m lib.claims list [--json] [--chapter SLUG]``: print the registry of claims.
``python -m lib.claims history [--write]``: since which commit each check's criterion, control and measure stand,
and the chapter commit that first set a criterion older than the registry."""

from __future__ import annotations

import argparse
import json
import sys

from .registry import REGISTRY


def _text(claims) -> str:
    out = []
    for c in claims:
        out.append(f"{c.id}  (paper {c.source})  {c.statement}")
        out.append(f"    source: {c.source_value}")
        if c.choice:
            out.append(f"    chosen to match the paper: {c.choice}")
        for k in c.checks:
            out.append(f"  - {k.chapter} [{k.kind}] {k.measure}")
            out.append(f"      reproduced if {k.reproduced.criterion.describe()}: {k.reproduced.why}")
            for name in ("partial", "contradicted"):
                rule = getattr(k, name)
                if rule is not None:
                    out.append(f"      {name} if {rule.criterion.describe()}: {rule.why}")
            if k.no_partial:
                out.append(f"      no partial level: {k.no_partial}")
            if k.kind != "derived":
                out.append(f"      control: {k.control or 'none designed yet'}")
    return "\n".join(out)


def _history(write: bool) -> int:
    from pathlib import Path

    from ..core.env import DATA_DIR
    from .history import HISTORY_FILE, history

    root = Path(__file__).resolve().parents[2]
    found = history(root)
    for key, h in found.items():
        origin = " ".join(h["criterion_origin"] or ["none"]) + (
            f" ({h['criterion_origin_note']})" * bool(h["criterion_origin_note"])
        )
        print(
            f"{key:42s} criterion {' '.join(h['criterion'] or ['not committed'])}; control "
            f"{' '.join(h['control'] or ['none'])}; measure {' '.join(h['measure'] or ['not committed'])}; "
            f"in the chapter {origin}"
        )
    if write:
        data = {
            "about": "per check, the first commit (hash, date) from which the registry's criteria, its control and "
            "its measure are the ones registered now, unchanged since; for criteria registered at the registry's "
            "first commit, the chapter commit from which the chapter's own lib.claim criteria stood unchanged "
            "before it (criterion_origin, None with a note where it cannot be traced) (lib.claims.history)",
            "checks": found,
        }
        from ..core.cache import MANIFEST, _atomic_write, _read_manifest, _sha256

        raw = (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode()
        _atomic_write(Path(DATA_DIR) / HISTORY_FILE, raw)
        manifest = _read_manifest(Path(DATA_DIR))
        manifest["files"][HISTORY_FILE] = {
            "sha256": _sha256(raw),
            "size": len(raw),
            "command": "python -m lib.claims history --write",
            "function": "lib.claims.history.history",
        }
        manifest["files"] = dict(sorted(manifest["files"].items()))
        _atomic_write(Path(DATA_DIR) / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lib.claims", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list", help="print the registry")
    p.add_argument("--json", action="store_true", help="as JSON (one object per claim)")
    p.add_argument("--chapter", default=None, help="only the checks of this chapter slug")
    h = sub.add_parser("history", help="the commit in which each check's criterion and control first appeared")
    h.add_argument("--write", action="store_true", help="write data/claims_history.json")
    args = parser.parse_args(argv)
    if args.cmd == "history":
        return _history(args.write)
    claims = list(REGISTRY.values())
    if args.chapter:
        claims = [c for c in claims if any(k.chapter == args.chapter for k in c.checks)]
        if not claims:
            raise SystemExit(f"no claim has a check in chapter {args.chapter!r}")
    if args.json:
        json.dump([c.to_json() for c in claims], sys.stdout, indent=2, ensure_ascii=False)
        print()
    else:
        print(_text(claims))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

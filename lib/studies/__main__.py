"""``python -m lib.studies rekey --legacy-root DIR``: re-key the committed results (:mod:`lib.studies.rekey`)."""

from __future__ import annotations

import argparse

from .rekey import rekey

parser = argparse.ArgumentParser(prog="python -m lib.studies", description=__doc__)
sub = parser.add_subparsers(dest="command", required=True)
p = sub.add_parser("rekey", help="re-key data/ from cache format 1 to format 2 (idempotent)")
p.add_argument("--legacy-root", required=True, help="a checkout of the last format-1 commit (git worktree add DIR 132c8b1)")
args = parser.parse_args()
for line in rekey(args.legacy_root):
    print(line)

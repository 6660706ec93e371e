"""What every committed study shares: load the result from ``data/`` or compute it, and the ``--publish`` command.

A *committed study* is a cached function of a frozen config whose FAST result is copied under ``data/`` with
:func:`lib.cache.publish` (sha256, command and cost in ``data/manifest.json``), so a chapter reads it instead of
training. The studies written before this module (width, mixer, linear scaling) keep their own copies of these
two functions: their committed results are keyed by a fingerprint of their code, which editing them would change.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any, Callable

from ..cache import Cache, load_committed, publish

__all__ = ["load_or_compute", "publish_main"]


def load_or_compute(func: Callable, config: Any, *, compute: bool, regenerate: str, cost: str,
                    cache: Cache | None = None) -> Any:  # fmt: skip
    """The committed result of ``func(config)`` (verified against the code that made it), else computed if ``compute``.

    Committed results are read even with the results cache off. Without a committed result for this config and
    code, and without ``compute``, a ``RuntimeError`` names the command ``regenerate`` and its ``cost``.
    """
    hit, value = load_committed(func, config, cache=cache)
    if hit:
        return value
    if compute:
        return func(config, cache=cache if cache is not None else True)
    name = getattr(func, "__name__", "study")
    raise RuntimeError(f"no committed {name} for this config and code (stale after a change to the code it runs, or "
                       f"missing); regenerate with `{regenerate}` ({cost})")  # fmt: skip


def publish_main(module: str, func: str, config: Callable[[Any], Any], regenerate: str, description: str,
                 argv=None) -> None:  # fmt: skip
    """``python -m <module> [--publish]``: compute ``<module>.<func>(config(<module>))`` on one thread, and commit it.

    The function is looked up in the imported package module (not ``__main__``), so the cache key names it.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--publish", action="store_true", help="copy the result to data/ with its manifest entry")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    mod = importlib.import_module(module)
    study, cfg = getattr(mod, func), config(mod)
    study(cfg)
    if args.publish:
        print("published", publish(study.__wrapped__, cfg, regenerate))

"""Book glue: the FAST/full scale switch, chapter setup, glue, progress bars, figure style.

Every chapter starts with ``ctx = lib.setup("NN_slug")`` and ends with ``lib.finish()``.

Scale
-----
``BOOK_FAST=1`` (the default) runs each chapter at CI scale: minutes on two CPU cores, still showing the
phenomenon. ``BOOK_FAST=0`` runs at paper scale and uses CUDA when a GPU is present. ``BOOK_FAST=0 BOOK_SMOKE=f``
is the smoke run of the paper scale (:mod:`lib.core.smoke`): the paper-scale configurations with their steps, seeds and
token budgets cut by ``f``, so every paper-scale line executes in minutes; its claims are not judged. A chapter
chooses each scale-dependent value with ``ctx.pick(fast, paper)``.
"""

from __future__ import annotations

import functools
import random
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..core import console
from ..core.context import BookContext, context, set_context
from ..core.env import DATA_DIR, ROOT, env_flag
from ..core.progress import progress

__all__ = [
    "ROOT",
    "DATA_DIR",
    "FAST",
    "BookContext",
    "env_flag",
    "setup",
    "glue_all",
    "context",
    "glue",
    "progress",
    "finish",
    "FIGURE_STYLE",
    "widgets_enabled",
    "interact",
]

#: Per-chapter budget in FAST mode (DEVELOPERS.md): two chapters run side by side in CI.
FAST_PEAK_MEMORY_GIB = 4.0
FAST_TIME_BUDGET_S = 180.0


#: True at CI scale (the default), False at paper scale. Read once at import; ``setup(fast=...)`` overrides it.
FAST: bool = env_flag("BOOK_FAST", True)

FIGURE_STYLE: dict[str, Any] = {
    "figure.dpi": 110,
    "savefig.dpi": 110,
    "figure.figsize": (7.0, 3.6),
    "figure.constrained_layout.use": True,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": "medium",
    "axes.labelsize": "medium",
    "legend.fontsize": "small",
    "legend.frameon": False,
    "image.cmap": "viridis",
}


def setup(chapter: str, *, seed: int = 0, fast: bool | None = None, threads: int = 1) -> BookContext:
    """Prepare a chapter run: seeds, threads, figure style, device.

    Parameters
    ----------
    chapter : str
        The chapter slug (``NN_slug``), used to label claims.
    seed : int
        Seed for ``random``, ``numpy`` and ``torch``. Library functions take their own explicit seeds as well.
    fast : bool, optional
        Override ``BOOK_FAST``.
    threads : int
        ``torch.set_num_threads``. One thread is fastest for the book's small tensors on two cores (and lets two
        chapters run side by side).
    """
    if not isinstance(chapter, str) or not chapter:
        raise ValueError(f"chapter must be a non-empty string, got {chapter!r}")
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    fast = FAST if fast is None else bool(fast)
    from ..core.seeds import seed as _offset_seed, seed_offset

    from ..core.smoke import smoke_factor

    offset, smoke = seed_offset(), smoke_factor()
    if smoke and fast:
        raise ValueError(f"BOOK_SMOKE={smoke} cuts the paper scale: it needs BOOK_FAST=0")
    seed = _offset_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)

    import matplotlib

    matplotlib.rcParams.update(FIGURE_STYLE)

    use_cuda = (not fast) and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    ctx = set_context(
        BookContext(
            chapter=chapter,
            fast=fast,
            seed=seed,
            device=device,
            started=time.perf_counter(),
            seed_offset=offset,
            smoke=smoke,
        )
    )
    if env_flag("BOOK_CONSOLE", False):  # a build at a seed offset: progress on the console (lib.core.console)
        from ..core.console import enable

        enable(chapter, f"seed offset {offset}, {'FAST' if fast else 'paper'} scale")
    return ctx


def glue(name: str, value: Any, display: bool = False) -> Any:
    """Store ``value`` under ``name`` for ``{glue:text}`name``` roles in the chapter's prose (a matplotlib figure is
    stored as its PNG, for ``{glue}`` directives).

    Uses myst-nb's ``glue`` when it is installed (the book build); elsewhere (Colab, a plain Jupyter) it does
    nothing unless ``display`` is True, in which case the value is shown. Returns ``value``.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"glue name must be an identifier-like string, got {name!r}")
    # plain Python numbers: myst-nb's {glue:text} formats the text/plain repr, and numpy's is `np.float64(...)`
    if isinstance(value, np.generic) or (torch.is_tensor(value) and value.numel() == 1):
        value = value.item()
    shown = _png(value) if _is_figure(value) else value  # a PNG, whatever matplotlib backend the kernel runs
    try:
        from myst_nb import glue as _myst_glue
    except ImportError:  # Colab and other plain kernels
        if display:
            print(f"{name} = {value}")
        return value
    _myst_glue(name, shown, display=display)
    return value


def _is_figure(value) -> bool:
    from matplotlib.figure import Figure

    return isinstance(value, Figure)


def _png(fig):
    """A matplotlib figure as an IPython PNG image (what a notebook shows for it)."""
    import io

    from IPython.display import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return Image(data=buf.getvalue(), format="png")


def _model_lines(obj) -> list[str]:
    """The source lines of function ``obj`` without its docstring and argument checks (an ``if`` whose body only
    raises, a bare ``check_*(...)`` call); comments and blank lines inside kept."""
    import ast
    import inspect
    import textwrap

    lines = textwrap.dedent(inspect.getsource(obj)).splitlines()
    tree = ast.parse("\n".join(lines))
    fn = tree.body[0]
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise ValueError(f"show_source needs a function or method, got {obj!r}")
    drop: set[int] = set()
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        drop.update(range(body[0].lineno, body[0].end_lineno + 1))
    for node in ast.walk(fn):
        is_check = isinstance(node, ast.If) and len(node.body) == 1 and isinstance(node.body[0], ast.Raise)
        is_check = is_check and not node.orelse
        call = node.value if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) else None
        named = getattr(call.func, "id", getattr(call.func, "attr", "")) if call is not None else ""
        if is_check or named.startswith("check_"):
            drop.update(range(node.lineno, node.end_lineno + 1))
    return [line for i, line in enumerate(lines, start=1) if i not in drop]


def show_source(*objs, start: str | None = None, stop: str | None = None):
    """The code that *is* the science, read from ``lib`` and shown in the chapter: each function of ``objs`` without
    its docstring and argument checks, or, with ``start`` (and ``stop``), only the lines from the first that
    contains ``start`` to the first after it that contains ``stop``. Returns an ``IPython.display.Code``."""
    from IPython.display import Code

    if not objs:
        raise ValueError("show_source needs at least one function")
    parts = []
    for obj in objs:
        lines = _model_lines(obj)
        if start is not None:
            first = next((i for i, line in enumerate(lines) if start in line), None)
            if first is None:
                raise ValueError(f"start {start!r} is not in the source of {obj.__qualname__}")
            last = (
                len(lines) - 1
                if stop is None
                else next((i for i in range(first, len(lines)) if stop in lines[i]), None)
            )
            if last is None:
                raise ValueError(f"stop {stop!r} does not follow start {start!r} in {obj.__qualname__}")
            import textwrap

            lines = textwrap.dedent("\n".join(lines[first : last + 1])).splitlines()
        parts.append("\n".join(lines))
    return Code("\n\n".join(parts), language="python")


#: Where :func:`export_figure` writes, under the book's root: figures that pages without code (the landing page)
#: show.
GENERATED = "_generated"


def export_figure(fig, name: str, root: Path | None = None) -> Path | None:
    """Write ``fig`` as ``<book root>/_generated/<name>.png`` for a page without code to show (the landing page's
    figure comes from chapter 1), and return the path. The book root is the folder above the running notebook's
    that holds ``_toc.yml`` (the staged book in a build, the checkout elsewhere); ``None``, writing nothing, when
    there is none (Colab)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"figure name must be an identifier-like string, got {name!r}")
    if root is None:
        root = next((p for p in (Path.cwd(), Path.cwd().parent) if (p / "_toc.yml").exists()), None)
        if root is None:
            return None
    path = Path(root) / GENERATED / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=110, bbox_inches="tight")
    return path


def glue_all(values: dict, prefix: str = "") -> dict:
    """:func:`glue` every entry of ``values`` under ``prefix + str(key)`` (e.g. a result's ``summary()``, or a row
    of a table keyed by ints with ``prefix="S16_s"``). Returns ``values``.

    Every name must be identifier-like (``ValueError`` otherwise, before anything is glued).
    """
    if not isinstance(values, dict) or not values:
        raise ValueError(f"values must be a non-empty dict, got {values!r}")
    names = {f"{prefix}{k}": v for k, v in values.items()}
    bad = [n for n in names if not n.isidentifier()]
    if bad:
        raise ValueError(f"glue names must be identifier-like, got {bad}")
    for name, value in names.items():
        glue(name, value)
    return values


def peak_memory_gib() -> float:
    """Peak resident memory of this process so far, in GiB (Linux ``ru_maxrss`` is in KiB)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1024**3 if sys.platform == "darwin" else 1024**2
    return rss / scale


def finish() -> None:
    """Report the chapter's run time and peak memory on the console of the build (the kernel process's own
    standard error, never the rendered page); assert the memory budget at FAST scale.

    The time budget (3 minutes at FAST scale) is reported, not asserted: wall time depends on machine load.
    """
    ctx = context()
    elapsed = time.perf_counter() - ctx.started
    peak = peak_memory_gib()
    stream = console.stream()
    if stream is not None:
        stream.write(
            f"{ctx.chapter}: scale={ctx.scale}, device={ctx.device.type}, "
            f"ran {elapsed:.0f} s (FAST budget {FAST_TIME_BUDGET_S:.0f} s), peak memory {peak:.2f} GiB\n"
        )
        stream.flush()
    if ctx.fast:
        assert peak <= FAST_PEAK_MEMORY_GIB, (
            f"peak memory {peak:.2f} GiB exceeds the FAST budget {FAST_PEAK_MEMORY_GIB} GiB"
        )


def widgets_enabled() -> bool:
    """Whether chapters build live ipywidgets controls: yes in Jupyter and Colab, no in the book build.

    ``BOOK_WIDGETS=0`` (the Makefile sets it) turns them off: executed headless, a widget cell can leave the notebook
    client waiting for minutes (seen in CI here), and the rendered book cannot run them anyway. Every interactive
    figure has a static one beside it.
    """
    return env_flag("BOOK_WIDGETS", True)


def interact(func, controls):
    """``ipywidgets.interact(func, **controls(ipywidgets))`` where widgets are on, else a one-line note.

    ``controls`` is a callable that receives the ``ipywidgets`` module and returns the keyword controls, so no widget
    is created (and no comm opened) when widgets are off. Returns what ``interact`` returns, or ``None``.
    """
    if not callable(func) or not callable(controls):
        raise TypeError("func and controls must be callables (controls: ipywidgets module -> {name: widget})")
    if not widgets_enabled():
        print("Interactive version: open this chapter in Jupyter or Colab (widgets are off in the book build).")
        return None
    import ipywidgets

    kwargs = controls(ipywidgets)
    if not isinstance(kwargs, dict):
        raise TypeError(f"controls must return a dict of widgets, got {type(kwargs).__name__}")
    if not hasattr(func, "__name__"):  # ipywidgets names the widget after func: a functools.partial has no name
        func = functools.partial(func)  # a copy (nested partials flatten), named after the function it binds
        func.__name__ = getattr(func.func, "__name__", "interactive")
    return ipywidgets.interact(func, **kwargs)

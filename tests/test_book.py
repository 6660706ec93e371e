"""lib.book: the scale flag, setup, glue."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

import lib
from lib.book import env_flag


@pytest.mark.parametrize(
    "raw, value", [("1", True), ("0", False), ("true", True), ("Off", False), (" yes ", True), ("", True)]
)
def test_env_flag(monkeypatch, raw, value):
    monkeypatch.setenv("X_FLAG", raw)
    assert env_flag("X_FLAG", True) is value


def test_env_flag_rejects_typos(monkeypatch):
    monkeypatch.setenv("X_FLAG", "fast")
    with pytest.raises(ValueError, match="X_FLAG"):
        env_flag("X_FLAG", True)
    monkeypatch.delenv("X_FLAG")
    assert env_flag("X_FLAG", False) is False


def test_setup_seeds_threads_and_device():
    ctx = lib.setup("01_x", seed=7, fast=True)
    a = torch.rand(3)
    lib.setup("01_x", seed=7, fast=True)
    assert torch.equal(a, torch.rand(3))
    assert torch.get_num_threads() == 1
    assert ctx.device.type == "cpu" and ctx.scale == "fast"
    assert lib.book.context() is not ctx  # a new context per setup
    full = lib.setup("01_x", fast=False)
    assert full.scale == "full"
    assert full.device.type == ("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize(
    "kwargs, match",
    [(dict(chapter=""), "chapter"), (dict(chapter="x", seed=-1), "seed"), (dict(chapter="x", threads=0), "threads")],
)
def test_setup_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        lib.setup(**kwargs)


def test_glue_outside_a_kernel_returns_plain_numbers():
    assert lib.glue("x", np.float64(0.5)) == 0.5
    assert type(lib.glue("y", np.float64(0.5))) is float
    assert type(lib.glue("z", torch.tensor(3))) is int
    with pytest.raises(ValueError, match="glue name"):
        lib.glue("not a name", 1)


def test_finish_reports_budget_on_the_console_not_the_page(capfd):
    lib.setup("01_x", fast=True)
    assert lib.finish() is None  # nothing for the notebook to echo
    out = capfd.readouterr()
    assert "01_x: scale=fast" in out.err and "peak memory" in out.err  # the process's own stderr: the console
    assert "peak memory" not in out.out  # a notebook's page shows stdout


def test_glue_without_myst_nb_is_a_no_op(monkeypatch, capsys):
    """Colab has no myst-nb: glue must neither fail nor print unless asked to."""
    import sys

    monkeypatch.setitem(sys.modules, "myst_nb", None)  # makes `from myst_nb import glue` raise ImportError
    assert lib.glue("a", 1.5) == 1.5
    assert capsys.readouterr().out == ""
    lib.glue("b", 2, display=True)
    assert "b = 2" in capsys.readouterr().out


def test_claim_record_is_not_displayed_twice():
    lib.setup("01_copy_task", fast=True)
    rec = lib.claim("A-soft-order", 0.9, show=False, robustness=[])
    assert rec._ipython_display_() is None  # IPython's echo of the cell value shows nothing


def test_interact_is_a_note_without_widgets_and_builds_none(monkeypatch, capsys):
    monkeypatch.setenv("BOOK_WIDGETS", "0")
    built = []
    assert lib.interact(lambda x: x, lambda w: built.append(w) or {}) is None
    assert built == [] and "Jupyter or Colab" in capsys.readouterr().out


def test_interact_builds_the_controls_where_widgets_are_on(monkeypatch):
    monkeypatch.setenv("BOOK_WIDGETS", "1")
    seen = []
    out = lib.interact(lambda n=0: seen.append(n), lambda w: dict(n=w.IntSlider(value=3, min=0, max=5)))
    assert out is not None and seen == [3]  # interact calls the function once with the initial value


def test_interact_takes_a_partial(monkeypatch):  # chapter 1 binds its results with functools.partial (Colab)
    monkeypatch.setenv("BOOK_WIDGETS", "1")
    seen = []
    state = lambda results, n=0: seen.append((results, n))  # noqa: E731
    out = lib.interact(functools.partial(state, "scans"), lambda w: dict(n=w.IntSlider(value=2, min=0, max=5)))
    assert out is not None and seen == [("scans", 2)]


@pytest.mark.parametrize("func, controls", [(None, lambda w: {}), (print, None), (print, lambda w: [1])])
def test_interact_bad_input(monkeypatch, func, controls):
    monkeypatch.setenv("BOOK_WIDGETS", "1")
    with pytest.raises(TypeError, match="controls|func"):
        lib.interact(func, controls)


def test_a_glued_figure_is_a_png_whatever_the_backend():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    image = lib.book._png(fig)
    assert image.data[:8] == b"\x89PNG\r\n\x1a\n" and image.format == "png"
    assert lib.book._is_figure(fig) and not lib.book._is_figure(1.0)
    plt.close(fig)


def test_export_figure_writes_under_the_book_root_or_nowhere(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    fig, _ = plt.subplots()
    book = tmp_path / "book"
    (book / "chapters").mkdir(parents=True)
    (book / "_toc.yml").write_text("root: intro\n")
    monkeypatch.chdir(book / "chapters")  # where a build executes a chapter
    path = lib.export_figure(fig, "jump")
    assert path == book / "_generated" / "jump.png" and path.read_bytes()[:4] == b"\x89PNG"
    monkeypatch.chdir(tmp_path)  # no book around (Colab): nothing is written
    assert lib.export_figure(fig, "jump") is None
    with pytest.raises(ValueError, match="figure name"):
        lib.export_figure(fig, "no such/name", root=book)
    plt.close(fig)


def test_show_source_shows_the_science_without_docstring_or_checks():
    from lib.models.copy_head import attention

    text = lib.show_source(attention, lib.CopyHead.forward).data
    assert text.startswith("def attention(") and "torch.softmax(G, dim=-1)" in text and "def forward(" in text
    assert '"""' not in text and "raise" not in text and "check_kind" not in text  # docstring and checks gone
    assert "# (..., L, L)" in text  # shape comments stay
    step = lib.show_source(lib.train.sgld.langevin, start="u = energy(p)", stop="noise_scale * xi").data
    assert step.splitlines()[0] == "u = energy(p)" and step.splitlines()[-1].endswith("noise_scale * xi)")
    with pytest.raises(ValueError, match="start"):
        lib.show_source(attention, start="no such line")
    with pytest.raises(ValueError, match="at least one"):
        lib.show_source()

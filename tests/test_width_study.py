"""Chapter 6's committed width and depth study: config validation, the run plan, tiny end-to-end, the committed file."""

import numpy as np
import pytest

from lib.core.cache import Cache
from lib.studies.width_study import REGENERATE, WidthStudyConfig, load_width_study

TINY = dict(
    heads=(1, 2),
    d_heads=(2,),
    seeds=(0,),
    lm_steps=4,
    lm_tokens=64,
    ca_N=2,
    ca_width=4,
    ca_heads=(1, 4),
    ca_layers=2,
    ca_depths=(1, 2),
    ca_steps=4,
    ca_tokens=64,
    eval_every=2,
)


def test_run_plan_covers_the_grid_thin_heads_and_depth_once():
    cfg = WidthStudyConfig()
    runs = cfg.runs()
    grid = [k for k in runs if k[0] == "grid"]
    assert len(grid) == len(cfg.heads) * len(cfg.d_heads)
    for _, H, dh in grid:
        model = runs["grid", H, dh].model()
        assert model.width == H * dh and model.n_layers == 1
    for H in cfg.ca_heads:
        model = runs["thin", H, cfg.ca_layers].model()
        assert model.width == cfg.ca_width and model.n_layers == cfg.ca_layers
    # the depth equal to ca_layers is the thin-heads run at ca_heads[0]: not trained twice
    depths = sorted(k[2] for k in runs if k[0] == "depth")
    assert depths == sorted(d for d in cfg.ca_depths if d != cfg.ca_layers)
    # every run of one experiment shares its task and seeds
    assert len({r.members for k, r in runs.items() if k[0] == "grid"}) == 1
    assert len({r.members for k, r in runs.items() if k[0] != "grid"}) == 1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(ca_heads=(3,)), "ca_heads"),
        (dict(heads=()), "heads"),
        (dict(d_heads=(0,)), "d_heads"),
        (dict(s=9), "s"),
        (dict(ca_C=1), "ca_C"),
        (dict(lr=0.0), "lr"),
        (dict(seeds=(-1,)), "seeds"),
    ],
)
def test_bad_configs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        WidthStudyConfig(**kwargs)


def test_tiny_study_computes_caches_and_loads(tmp_path):
    cache = Cache(tmp_path / "cache", data_dir=tmp_path / "data", enabled=True)
    cfg = WidthStudyConfig(**TINY)
    with pytest.raises(RuntimeError, match=REGENERATE.split()[-2]):
        load_width_study(cfg, cache=cache)  # nothing committed, nothing cached, no compute
    study = load_width_study(cfg, compute=True, cache=cache)
    assert set(study.curves) == set(cfg.runs())
    c = study.grid(2, 2)
    assert c.pred_loss.shape == (len(c.steps), 1) and np.all(np.isfinite(c.pred_loss))
    assert study.depth(cfg.ca_layers) is study.thin(cfg.ca_heads[0])
    again = load_width_study(cfg, cache=cache)  # now from the cache, identical
    np.testing.assert_array_equal(again.grid(1, 2).loss, study.grid(1, 2).loss)


def test_the_committed_study_loads_for_the_current_code():
    """The chapter's FAST build reads it; a change to the GPT code makes it stale (regenerate with REGENERATE)."""
    study = load_width_study(WidthStudyConfig(), cache=Cache(enabled=False))
    cfg = study.config
    assert cfg == WidthStudyConfig()
    for key, curves in study.curves.items():
        assert curves.pred_loss.shape[1] == (len(cfg.seeds) if key[0] == "grid" else len(cfg.ca_seeds))
        assert np.all(np.isfinite(curves.pred_loss)) and np.all(curves.pred_loss >= 0)

"""Module-level functions for the sweep tests (spawned workers import them by name)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Job:
    x: int
    log: str = ""  # a file that records each computation (one line per call)
    sleep: float = 0.0
    fail: bool = False


def square(job: Job) -> dict:
    """x -> x**2, recording the call; fails on purpose when ``job.fail``."""
    if job.log:
        with open(job.log, "a", encoding="utf-8") as fh:
            fh.write(f"{job.x} {os.getpid()}\n")
    if job.sleep:
        time.sleep(job.sleep)
    if job.fail:
        raise ValueError(f"job {job.x} fails on purpose")
    return {"x": job.x, "y": job.x**2}


def calls(log: str | Path) -> list[int]:
    path = Path(log)
    if not path.exists():
        return []
    return [int(line.split()[0]) for line in path.read_text().splitlines() if line.strip()]


def tiny_training(cfg) -> list:
    """A tiny GPT run (uncached, float32 fast trainer): the held-out prediction loss of each member at the end."""
    from lib.train.fast_train import FastRunConfig, run_fast

    run = run_fast(FastRunConfig(cfg, "fp32"))
    return [float(x) for x in run.pred_loss[-1]]


def summarize_losses(values) -> dict:
    """The published summary of the tiny study: every done unit's final losses, in unit order."""
    return {"losses": [v for v in values if v is not None], "missing": sum(v is None for v in values)}


@dataclass(frozen=True)
class Risky:
    x: int
    die: bool = False  # the task's process kills itself (as the kernel's OOM killer would)
    sleep: float = 0.0


def square_or_die(job: Risky) -> dict:
    """x -> x**2, unless ``job.die``: then the process is killed before it returns."""
    import signal

    if job.sleep:
        time.sleep(job.sleep)
    if job.die:
        os.kill(os.getpid(), signal.SIGKILL)
    return {"x": job.x, "y": job.x**2}


def summarize_squares(values) -> dict:
    """The published summary of a study of squares: every done unit's ``y``, ``None`` where not done."""
    return {"y": [None if v is None else v["y"] for v in values]}

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

"""lib.core.env: what the machine can do."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib.core.env import native_bf16


def test_native_bf16_agrees_with_the_cpu_flags():
    """bfloat16 dot products in hardware: AVX-512 BF16 or AMX tiles, as /proc/cpuinfo lists them (Linux)."""
    info = Path("/proc/cpuinfo")
    if not info.exists():
        pytest.skip("no /proc/cpuinfo")
    flags = set(info.read_text().split())
    assert native_bf16() == bool({"avx512_bf16", "amx_bf16"} & flags)

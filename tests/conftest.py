from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernelscope.model import Frame, Profile, ProfileBuilder

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = REPO.parent / "shared" / "traces"


@pytest.fixture(autouse=True)
def _no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "120")


@pytest.fixture
def shared_traces() -> Path:
    if not SHARED_TRACES.is_dir():
        pytest.skip("../shared/traces is absent")
    return SHARED_TRACES


def build(paths: list[tuple[list[Frame], dict[str, float]]], metadata: dict | None = None) -> Profile:
    """A profile from literal (path, metrics) pairs."""
    b = ProfileBuilder()
    for frames, metrics in paths:
        node = b.path(frames)
        for name, value in metrics.items():
            b.add(node, name, value)
    return b.build(metadata or {})


def env_without_color() -> dict[str, str]:
    env = dict(os.environ)
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "120"
    return env


def torch_before(major: int, minor: int) -> bool:
    """Is the installed torch older than ``major.minor`` (False without torch)?"""
    try:
        import torch
    except ImportError:
        return False
    parts = torch.__version__.split("+")[0].split(".")
    return (int(parts[0]), int(parts[1])) < (major, minor)


def compile_provenance_available() -> bool:
    """Does the installed torch have what Inductor provenance needs (collect.compile.api.probe)?"""
    try:
        from kernelscope.collect.compile.api import probe
    except ImportError:
        return False
    api, _missing = probe()
    return api is not None


# torch 2.5's Python tracer fails to post-process some windows when they are stopped ("Python replay stack is
# empty", collect/torch_compat.py): their events are left out, with a warning. Complete-recording checks of
# kernelscope.profile() runs fail there, and say so.
TORCH_25_LOSES_WINDOWS = "torch 2.5 fails to stop or post-process some windows (collect/torch_compat.stop_profiler)"

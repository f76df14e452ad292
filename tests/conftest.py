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

"""``export --format chrome`` of live profiles (no timeline: laid out as calls) re-imports with the same totals:
``time_ns``, ``cpu_time_ns`` and ``count`` to the nanosecond and the call, per view row as well as in all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, build, env_without_color
from kernelscope import load
from kernelscope.analysis.views import group
from kernelscope.importers import import_file
from kernelscope.model import Frame, Profile
from kernelscope.render.exporters import find_exporter

METRICS = ["time_ns", "cpu_time_ns", "count"]


def round_trip(profile: Profile, tmp_path: Path) -> Profile:
    path = tmp_path / "p.trace.json"
    find_exporter("chrome").write(profile, path)
    return import_file(str(path))


def rows(profile: Profile, by: str) -> dict[str | None, dict[str, float]]:
    return dict(group(profile, by, METRICS).rows)


def test_calls_nest_inside_their_parents_and_keep_every_total(tmp_path: Path) -> None:
    """A line called 3 times holds an op called 4 times and one called once, a module with no time of its
    own, a [backward] frame (no event of its own) and a line with no call of its own (a live window)."""
    line = Frame.python("train.py", 3, "forward")
    mod = Frame.module_("blocks.0", "Block")
    profile = build(
        [
            ([line], {"cpu_time_ns": 7, "count": 3}),
            ([line, Frame.op("aten::mm")], {"time_ns": 401, "cpu_time_ns": 401, "count": 4}),
            ([line, Frame.op("aten::add")], {"time_ns": 5, "cpu_time_ns": 5, "count": 1}),
            ([line, mod], {"count": 3}),
            ([line, mod, Frame.op("aten::relu")], {"time_ns": 30, "cpu_time_ns": 30, "count": 3}),
            (
                [line, mod, Frame.backward(), Frame.op("aten::threshold_backward")],
                {"time_ns": 9, "cpu_time_ns": 9, "count": 3},
            ),
            ([Frame.python("train.py", 9, "main")], {"cpu_time_ns": 2}),
            (
                [Frame.python("train.py", 9, "main"), Frame.op("aten::zero_")],
                {"time_ns": 1, "cpu_time_ns": 1, "count": 1},
            ),
        ]
    )
    back = round_trip(profile, tmp_path)
    assert not (back.metadata.get("warnings") or {})
    for by in ("op", "line", "module"):
        assert rows(back, by) == rows(profile, by)
    assert {m: back.total(m) for m in METRICS} == {m: profile.total(m) for m in METRICS}


def test_device_kernels_are_launched_from_their_op(tmp_path: Path) -> None:
    line = Frame.python("train.py", 3, "forward")
    profile = build(
        [
            ([line, Frame.op("aten::mm")], {"cpu_time_ns": 40, "count": 2}),
            ([line, Frame.op("aten::mm"), Frame.kernel("gemm", "cuda:0", 7)], {"time_ns": 3_001, "count": 2}),
            ([line, Frame.op("aten::add"), Frame.kernel("add", "cuda:0", 7)], {"time_ns": 500, "count": 3}),
            ([line, Frame.op("aten::add")], {"cpu_time_ns": 6, "count": 3}),
        ]
    )
    back = round_trip(profile, tmp_path)
    for by in ("kernel", "op", "line"):
        assert rows(back, by) == rows(profile, by)


# Real live runs, recorded whole: (program, arguments), run from the repository or tests/live_matrix.
PROGRAMS = [
    (REPO / "examples" / "tiny_transformer.py", ["--steps", "2"]),
    (REPO / "tests" / "live_matrix" / "compiled_module.py", []),
    (REPO / "tests" / "live_matrix" / "checkpointing.py", []),
    (REPO / "tests" / "live_matrix" / "custom_function.py", []),
]
# Views whose rows come back as they were. A compiled program's fused kernels hold estimated parts (their
# share per original op and line), which a trace has no place for: its ops, lines and modules differ by them.
EXACT_ROWS = {"compiled_module": ("function",)}


@pytest.fixture(scope="module")
def live_profiles(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("live")
    paths = []
    for script, args in PROGRAMS:
        path = out / f"{script.stem}.ksprof"
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "kernelscope",
                "run",
                "--max-overhead",
                "0",
                "--no-view",
                "-o",
                str(path),
                str(script),
                *args,
            ],
            capture_output=True,
            text=True,
            cwd=script.parent,
            env=env_without_color(),
            timeout=600,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        paths.append(path)
    return paths


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(PROGRAMS)), ids=[p.stem for p, _ in PROGRAMS])
def test_live_profile_round_trips_exactly(live_profiles: list[Path], index: int, tmp_path: Path) -> None:
    profile = load(str(live_profiles[index]))
    assert profile.timeline is None  # (laid out as calls)
    back = round_trip(profile, tmp_path)
    assert not any("clipped" in w for w in back.metadata.get("warnings") or {})
    assert {m: back.total(m) for m in METRICS} == {m: profile.total(m) for m in METRICS}
    for by in EXACT_ROWS.get(live_profiles[index].stem, ("op", "line", "module", "function")):
        assert rows(back, by) == rows(profile, by), by

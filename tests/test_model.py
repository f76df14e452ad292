from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import build
from kernelscope.errors import BadInputError
from kernelscope.model import Frame, FrameKind, InvariantError, Profile, TimelineBuilder, load, save
from kernelscope.model.io import to_bytes
from kernelscope.model.profile import prune_empty
from kernelscope.model.timeline import LINKED, Category

PY = Frame.python("train.py", 42, "step")
MOD = Frame.module_("blocks.0.fc", "Linear")


def test_inclusive_is_self_plus_children() -> None:
    # given a line with a module, an op and its backward
    p = build(
        [
            ([PY, MOD, Frame.op("aten::addmm")], {"time_ns": 5.0, "count": 1}),
            ([PY, MOD, Frame.backward(), Frame.op("aten::mm")], {"time_ns": 7.0, "count": 2}),
            ([PY], {"time_ns": 1.0}),
        ]
    )
    # then inclusive values add up and the structure checks out
    p.check()
    assert [f.kind for f in p.path(len(p) - 1)] == [
        FrameKind.PYTHON,
        FrameKind.MODULE,
        FrameKind.BACKWARD,
        FrameKind.OP,
    ]
    assert p.inclusive("time_ns")[0] == 13.0
    assert p.inclusive("time_ns")[1] == 13.0
    assert p.total("count") == 3.0


def test_check_rejects_a_kernel_under_a_part() -> None:
    p = build([([Frame.kernel("k"), Frame.part("aten::add", "a.py", 1), Frame.op("x")], {"time_ns": 1.0})])
    with pytest.raises(InvariantError, match="cannot sit under"):
        p.check()


def test_check_rejects_non_finite_metrics() -> None:
    p = build([([PY], {"time_ns": float("nan")})])
    with pytest.raises(InvariantError, match="non-finite"):
        p.check()


def test_prune_drops_empty_subtrees_and_keeps_totals() -> None:
    p = build([([PY, Frame.op("aten::mm")], {"time_ns": 3.0}), ([Frame.python("a.py", 1, "f")], {})])
    q = prune_empty(p)
    q.check()
    assert len(q) == 3 and q.total("time_ns") == 3.0
    assert [f.label() for f in q.path(2)] == ["train.py:42 step", "aten::mm"]


def _timeline() -> TimelineBuilder:
    tb = TimelineBuilder()
    track = tb.track("stream 7", "cuda:0")
    tb.add(1, track, 1000, 50, Category.KERNEL, LINKED, 12)
    tb.add(2, track, 1100, 20, Category.COMM, 0, -1)
    return tb


def test_save_load_round_trip_with_timeline(tmp_path: Path) -> None:
    p = build(
        [([PY, Frame.op("aten::mm"), Frame.kernel("sm90_gemm", "cuda:0", 7)], {"time_ns": 1.5e9, "flops": 2**60})]
    )
    p = p.replace(timeline=_timeline().build(), metadata={"host": "h", "nested": {"x": [1, 2]}})
    p.save(str(tmp_path / "a.ksprof"))
    q = load(tmp_path / "a.ksprof")
    assert_same(p, q)


def assert_same(p: Profile, q: Profile) -> None:
    assert p.frames == q.frames
    assert np.array_equal(p.parent, q.parent) and np.array_equal(p.frame, q.frame)
    assert p.metrics.keys() == q.metrics.keys()
    for k in p.metrics:
        assert np.array_equal(p.metrics[k], q.metrics[k])
    assert p.metadata == q.metadata
    if p.timeline is None:
        assert q.timeline is None
    else:
        assert q.timeline is not None and p.timeline.tracks == q.timeline.tracks
        for name, col in p.timeline.columns().items():
            assert np.array_equal(col, q.timeline.columns()[name])


_text = st.text(min_size=0, max_size=12)
_frames = st.one_of(
    st.builds(Frame.python, _text, st.integers(0, 10**6), _text),
    st.builds(Frame.module_, _text, _text),
    st.builds(Frame.op, _text),
    st.builds(Frame.scope, _text),
    st.builds(Frame.region, _text),
    st.just(Frame.backward()),
)
_leaf = st.one_of(st.builds(Frame.kernel, _text, _text, st.integers(-1, 64)), _frames)
_values = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(_frames, max_size=5),
            _leaf,
            st.dictionaries(st.sampled_from(["time_ns", "count", "tokens"]), _values),
        ),
        max_size=20,
    )
)
def test_save_load_is_lossless(tmp_path_factory: pytest.TempPathFactory, paths: list) -> None:
    p = build([([*frames, leaf], metrics) for frames, leaf, metrics in paths], {"n": len(paths)})
    out = tmp_path_factory.mktemp("rt") / "p.ksprof"
    save(p, out)
    assert_same(p, load(out))


def test_corrupt_and_newer_files_give_one_clear_error(tmp_path: Path) -> None:
    p = build([([PY], {"time_ns": 1.0})])
    good = to_bytes(p)
    truncated = tmp_path / "truncated.ksprof"
    truncated.write_bytes(good[: len(good) // 2])
    with pytest.raises(BadInputError, match="corrupt"):
        load(truncated)
    newer = tmp_path / "newer.ksprof"
    with zipfile.ZipFile(newer, "w") as zf, zipfile.ZipFile(__import__("io").BytesIO(good)) as src:
        for name in src.namelist():
            data = src.read(name)
            if name == "header.json":
                data = data.replace(b'"schema": 1', b'"schema": 99')
            zf.writestr(name, data)
    with pytest.raises(BadInputError, match="newer"):
        load(newer)
    with pytest.raises(BadInputError, match="no such file"):
        load(tmp_path / "missing.ksprof")


def test_save_is_atomic_when_interrupted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # given an existing profile and a save that is interrupted mid-write
    target = tmp_path / "p.ksprof"
    old = build([([PY], {"time_ns": 1.0})])
    save(old, target)

    def boom(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(KeyboardInterrupt):
        save(build([([PY], {"time_ns": 2.0})]), target)
    # then the old file is intact and no temporary file is left behind
    assert load(target).total("time_ns") == 1.0
    assert sorted(os.listdir(tmp_path)) == ["p.ksprof"]

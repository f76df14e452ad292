"""XPlane importer: a literal XSpace built in the test, the real MI300X JAX trace, bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelscope.analysis.views import group
from kernelscope.cli.main import main
from kernelscope.errors import BadInputError
from kernelscope.importers import find_importer, import_file
from kernelscope.importers.xplane.namestack import parse
from kernelscope.importers.xplane.schema import HloProto, XSpace
from kernelscope.model import FrameKind, Profile

MI300 = "tracelens_mi300_jax_te_fused_attn_train.xplane.pb"
F32 = 11


def tree(p: Profile, metrics: tuple[str, ...] = ("time_ns", "count")) -> Any:
    def walk(n: int) -> Any:
        vals = {m: float(p.exclusive(m)[n]) for m in metrics if p.exclusive(m)[n]}
        return (p.frame_of(n).label(), vals, sorted(walk(k) for k in p.children[n]))

    return walk(0)


# --- name stacks ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("op_name", "region", "backward", "scopes", "primitive"),
    [
        ("jit(train_step)/jvp(mlp)/dot_general", "jit(train_step)", False, ("mlp",), "dot_general"),
        ("jit(loss_fn)/transpose(jvp(bsd,de->bse))/dot_general", "jit(loss_fn)", True, ("bsd,de->bse",), "dot_general"),
        ("jit(train_step)/transpose(jvp())/transpose", "jit(train_step)", True, (), "transpose"),
        ("jit(f)/transpose(jvp(jit(take_along_axis)))", "jit(f)", True, ("jit(take_along_axis)",), ""),
        ("jit(f)/jvp()/jit(_where)/select_n", "jit(f)", False, ("jit(_where)",), "select_n"),
        ("jit(f)/vmap(a/b)/add", "jit(f)", False, ("a/b",), "add"),
        ("add", "", False, (), "add"),
        ("", "", False, (), ""),
        # XLA joins the names of merged instructions with ";" (seen in a Haiku program's backward): the first
        ("jit(u)/transpose(jvp())/mul;jit(u)/transpose(jvp())/broadcast_in_dim", "jit(u)", True, (), "mul"),
        ("jit(u)/jvp(sequential)/linear_1/dot_general", "jit(u)", False, ("sequential", "linear_1"), "dot_general"),
        (
            "jit(s)/jvp(jit(loss))/vmap(eqx.nn.MaxPool2d)/eqx.nn.Pool/reduce_window_max",
            "jit(s)",
            False,
            ("jit(loss)", "eqx.nn.MaxPool2d", "eqx.nn.Pool"),
            "reduce_window_max",
        ),
    ],
)
def test_name_stack_parts(op_name: str, region: str, backward: bool, scopes: tuple[str, ...], primitive: str) -> None:
    ns = parse(op_name)
    assert (ns.region, ns.backward, ns.scopes, ns.primitive) == (region, backward, scopes, primitive)


# --- a literal XSpace ------------------------------------------------------------


def _hlo(program_id: int, user_file: str) -> bytes:
    """jit(step): dot.1 (forward, line 12 under line 20), a fusion of an add (line 12) and a max (line 21),
    a transposed dot (backward of line 12), and a copy XLA added without metadata."""
    h = HloProto()
    m = h.hlo_module
    m.name, m.id = "jit_step", program_id
    sfi = m.stack_frame_index
    sfi.file_names.extend([user_file, "<frozen runpy>"])
    sfi.function_names.extend(["<module>", "step", "dense", "_run_code"])
    for file_id, fn_id, line in [(2, 4, 88), (1, 1, 30), (1, 2, 20), (1, 3, 12), (1, 2, 21)]:
        loc = sfi.file_locations.add()
        loc.file_name_id, loc.function_name_id, loc.line = file_id, fn_id, line
    # frames: 1 runpy, 2 <module>:30, 3 step:20, 4 dense:12 (under 3), 5 step:21
    for loc_id, parent in [(1, 0), (2, 1), (3, 2), (4, 3), (5, 2)]:
        f = sfi.stack_frames.add()
        f.file_location_id, f.parent_frame_id = loc_id, parent

    def instr(comp: Any, name: str, opcode: str, op_name: str, frame: int, dims: list[int], iid: int) -> Any:
        i = comp.instructions.add()
        i.name, i.opcode, i.id = name, opcode, iid
        i.metadata.op_name, i.metadata.stack_frame_id = op_name, frame
        i.shape.element_type = F32
        i.shape.dimensions.extend(dims)
        return i

    fused = m.computations.add()
    fused.name, fused.id = "fused_computation", 2
    instr(fused, "p0", "parameter", "", 0, [64, 32], 10)
    instr(fused, "add.1", "add", "jit(step)/jvp()/add", 4, [64, 32], 11).operand_ids.extend([10])
    instr(fused, "max.1", "maximum", "jit(step)/jvp()/max", 5, [64, 32], 12).operand_ids.extend([11])
    entry = m.computations.add()
    entry.name, entry.id = "main", 1
    m.entry_computation_id = 1
    instr(entry, "x", "parameter", "", 0, [64, 16], 1)
    instr(entry, "w", "parameter", "", 0, [16, 32], 2)
    dot = instr(entry, "dot.1", "dot", "jit(step)/jvp()/dot_general", 4, [64, 32], 3)
    dot.operand_ids.extend([1, 2])
    dot.dot_dimension_numbers.lhs_contracting_dimensions.append(1)
    fusion = instr(entry, "fusion.1", "fusion", "jit(step)/jvp()/max", 5, [64, 32], 4)
    fusion.called_computation_ids.append(2)
    instr(entry, "dot.2", "dot", "jit(step)/transpose(jvp())/dot_general", 4, [16, 32], 5)
    instr(entry, "copy.3", "copy", "", 0, [16, 32], 6)
    return bytes(h.SerializeToString())


def _space(user_file: str, events: list[tuple[str, int, int]]) -> bytes:
    """An XLA:CPU XSpace: the metadata plane and one host thread running ``events`` (hlo_op, start_ps, dur_ps)."""
    s = XSpace()
    meta = s.planes.add()
    meta.name = "/host:metadata"
    meta.stat_metadata[1].name = "Hlo Proto"
    meta.stat_metadata[2].name = "program_id"
    em = meta.event_metadata[7]
    em.id, em.name = 7, "jit_step(7)"
    st = em.stats.add()
    st.metadata_id, st.bytes_value = 1, _hlo(7, user_file)
    st = em.stats.add()
    st.metadata_id, st.int64_value = 2, 7
    host = s.planes.add()
    host.name = "/host:CPU"
    for sid, name in [(1, "hlo_op"), (2, "hlo_module"), (3, "program_id")]:
        host.stat_metadata[sid].name = name
    line = host.lines.add()
    line.name, line.timestamp_ns = "tf_XLAEigen/1", 1_000
    ids: dict[str, int] = {}
    for op, start, dur in events:
        mid = ids.setdefault(op, len(ids) + 1)
        host.event_metadata[mid].name = op
        host.stat_metadata[100 + mid].name = op  # hlo_op values are refs to stat metadata names
        e = line.events.add()
        e.metadata_id, e.offset_ps, e.duration_ps = mid, start, dur
        ref = e.stats.add()
        ref.metadata_id, ref.ref_value = 1, 100 + mid
        mod = e.stats.add()
        mod.metadata_id, mod.str_value = 2, "jit_step"
        pid = e.stats.add()
        pid.metadata_id, pid.int64_value = 3, 7
    return bytes(s.SerializeToString())


FUSION = (
    "max",
    {},
    [
        (
            "fusion.1",
            {"count": 1.0},
            [
                ("~add @ train.py:12 (estimated)", {"time_ns": 500.0005}, []),
                ("~max @ train.py:21 (estimated)", {"time_ns": 500.0005}, []),
            ],
        )
    ],
)
DENSE = (
    "train.py:12 dense",
    {},
    [
        ("[backward]", {}, [("dot_general", {}, [("dot.2", {"count": 1.0, "time_ns": 3000.0}, [])])]),
        ("dot_general", {}, [("dot.1", {"count": 2.0, "time_ns": 6000.0}, [])]),
    ],
)
EXPECTED = (
    "<root>",
    {},
    [
        (
            "train.py:30 <module>",
            {},
            [
                (
                    "<jit(step)>",
                    {},
                    [
                        ("[no source in HLO]", {}, [("copy", {}, [("copy.3", {"count": 1.0, "time_ns": 500.0}, [])])]),
                        FUSION,
                        ("train.py:20 step", {}, [DENSE]),
                    ],
                )
            ],
        )
    ],
)


@pytest.fixture
def literal_trace(tmp_path: Path) -> str:
    user = tmp_path / "train.py"
    user.write_text("# user code\n")
    events = [("dot.1", 0, 4_000_000), ("fusion.1", 5_000_000, 1_000_001), ("dot.2", 7_000_000, 3_000_000)]
    events += [("copy.3", 11_000_000, 500_000), ("dot.1", 12_000_000, 2_000_000)]
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(_space(str(user), events))
    return str(path)


def test_literal_xspace_becomes_the_expected_tree(literal_trace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # given a CPU XPlane whose HLO puts ops on user lines, with a fusion over two lines and a transposed dot
    monkeypatch.chdir(Path(literal_trace).parent)
    # when imported
    p = import_file(literal_trace)
    # then: lines (user frames only) → region at the jitted function's frame → [backward] → op → kernel → parts
    p.check()
    assert tree(p) == EXPECTED
    # the fused kernel's parts sum exactly to its measured time
    kernels = [n for n in range(len(p)) if p.frame_of(n).kind is FrameKind.KERNEL]
    by_name = {p.frame_of(n).name: n for n in kernels}
    parts = p.children[by_name["fusion.1"]]
    assert [p.frame_of(k).kind for k in parts] == [FrameKind.PART, FrameKind.PART]
    assert sum(float(p.exclusive("time_ns")[k]) for k in parts) == 1000.001
    assert p.inclusive("time_ns")[0] == pytest.approx(4000 + 1000.001 + 3000 + 500 + 2000)
    labels = {p.frame_of(n).name: [f.label() for f in p.path(n)] for n in kernels}
    assert labels["dot.1"] == ["train.py:30 <module>", "<jit(step)>", "train.py:20 step", "train.py:12 dense",
                               "dot_general", "dot.1"]  # fmt: skip
    assert labels["dot.2"] == ["train.py:30 <module>", "<jit(step)>", "train.py:20 step", "train.py:12 dense",
                               "[backward]", "dot_general", "dot.2"]  # fmt: skip
    # the fusion's ops come from step:20 → dense:12 and step:21: it sits under their common prefix
    assert labels["fusion.1"] == ["train.py:30 <module>", "<jit(step)>", "max", "fusion.1"]
    # the copy without metadata goes to the line that called the jitted function
    assert labels["copy.3"] == ["train.py:30 <module>", "<jit(step)>", "[no source in HLO]", "copy", "copy.3"]
    # CPU run: the XLA ops are the cpu device's timeline
    assert p.timeline is not None and len(p.timeline) == 5
    assert {t.device for t in p.timeline.tracks} == {"cpu"}


# --- the real MI300X JAX trace ---------------------------------------------------------------


def _raw_device_events(path: Path) -> list[tuple[str, str, float, float]]:
    """(kernel name, hlo_op, start_ns, duration_ns) of every GPU event, read by JAX's own XPlane reader."""
    from jax.profiler import ProfileData

    out = []
    for plane in ProfileData.from_file(str(path)).planes:
        if not plane.name.startswith("/device:GPU"):
            continue
        for line in plane.lines:
            for ev in line.events:
                stats = dict(ev.stats)
                out.append((ev.name, str(stats.get("hlo_op", "")), ev.start_ns, ev.duration_ns))
    return out


def _union_ns(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for s, e in sorted(intervals):
        if e > end:
            total += e - max(s, end)
            end = e
    return total


@pytest.fixture(scope="module")
def mi300() -> tuple[Path, Profile]:
    path = Path(__file__).resolve().parents[1].parent / "shared" / "traces" / MI300
    if not path.is_file():
        pytest.skip("../shared/traces is absent")
    return path, import_file(str(path))


@pytest.mark.traces
def test_mi300_kernel_totals_and_timeline_match_the_raw_events(mi300: tuple[Path, Profile]) -> None:
    pytest.importorskip("jax")
    path, p = mi300
    p.check()
    raw = _raw_device_events(path)
    # per kernel name: time and count equal what the XPlane holds
    expected: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for name, _op, _start, dur in raw:
        expected[name][0] += dur
        expected[name][1] += 1
    got: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    time, count = p.inclusive("time_ns"), p.exclusive("count")
    for n in range(len(p)):
        f = p.frame_of(n)
        if f.kind is FrameKind.KERNEL:
            got[f.name][0] += float(time[n])
            got[f.name][1] += float(count[n])
    assert got.keys() == expected.keys()
    for name, (t, c) in expected.items():
        assert got[name][0] == pytest.approx(t, rel=1e-9), name
        assert got[name][1] == c, name
    # timeline: the span and the union of the device events
    from kernelscope.analysis.timeline import breakdown

    (dev,) = breakdown(p).devices
    starts = [s for _n, _o, s, _d in raw]
    ends = [s + d for _n, _o, s, d in raw]
    assert dev.device == "gpu:0" and dev.events == len(raw) == 150 and dev.unlinked_events == 0
    assert dev.total_ns == pytest.approx(max(ends) - min(starts), abs=2)
    assert dev.busy_ns == pytest.approx(_union_ns(list(zip(starts, ends, strict=True))), abs=len(raw))
    # the 20 hipMemsetAsync launches are memsets, the rest kernels
    memsets = [n for n, *_ in raw if "fillBuffer" in n]
    assert len(memsets) == 20
    assert dev.computation_ns == dev.busy_ns and dev.total_memcpy_ns == 0 and dev.total_comm_ns == 0
    # host time: the 150 launch calls (hipLaunchKernel, hipModuleLaunchKernel, hipMemsetAsync, ...)
    from jax.profiler import ProfileData

    host = ProfileData.from_file(str(path)).find_plane_with_name("/host:CPU")
    launches = [ev.duration_ns for line in host.lines for ev in line.events if "correlation_id" in dict(ev.stats)]
    assert len(launches) == 150
    assert p.total("cpu_time_ns") == pytest.approx(sum(launches), rel=1e-9)


@pytest.mark.traces
def test_mi300_per_xla_op_totals_match_the_raw_events(mi300: tuple[Path, Profile]) -> None:
    pytest.importorskip("jax")
    from kernelscope.importers.xplane.reader import read_space

    path, _p = mi300
    space = XSpace()
    space.ParseFromString(path.read_bytes())
    ours: dict[str, float] = defaultdict(float)
    for ev in read_space(space).ops:
        if ev.on_device:
            ours[ev.hlo_op] += ev.dur_ps / 1000
    theirs: dict[str, float] = defaultdict(float)
    for _name, op, _start, dur in _raw_device_events(path):
        theirs[op] += dur
    # memset events name no instruction: the launching hipMemsetAsync does (joined by correlation id)
    assert "" not in ours
    assert sum(ours.values()) == pytest.approx(sum(theirs.values()), rel=1e-12)
    for op, t in theirs.items():
        if op:
            assert ours[op] >= t - 1e-6, op


@pytest.mark.traces
def test_mi300_lines_regions_and_backward(mi300: tuple[Path, Profile]) -> None:
    _path, p = mi300
    total = p.total("time_ns")
    # every kernel has a user line; TE's site-packages frames are not user lines
    rows = dict(group(p, "line").rows)
    assert None not in rows  # no unattributed time
    assert sum(v["time_ns"] for v in rows.values()) == pytest.approx(total)
    files = {p.frame_of(n).file for n in range(len(p)) if p.frame_of(n).kind is FrameKind.PYTHON}
    assert files == {"/workspace/12_te_fused_attn.py"}
    # the TE backward custom call sits under [backward] at the line that called fused attention
    bwd = [n for n in range(len(p)) if p.frame_of(n).name == "te_fused_attn_backward_ffi"]
    assert bwd and all(p.frame_of(int(p.parent[n])).kind is FrameKind.BACKWARD for n in bwd)
    assert sum(float(p.inclusive("time_ns")[n]) for n in bwd) / total > 0.3


# --- bad input and no jax ------------------------------------------------------------------


def test_import_works_without_jax(literal_trace: str, tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['jax'] = None; sys.modules['jaxlib'] = None\n"
        "from kernelscope.cli.main import main\n"
        f"sys.exit(main(['import', {literal_trace!r}, '-o', {str(tmp_path / 'out.ksprof')!r}]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.ksprof").is_file()


def test_sniffs_by_name_and_content(literal_trace: str, tmp_path: Path) -> None:
    assert find_importer(literal_trace).name == "xplane"
    renamed = tmp_path / "profile.bin"
    renamed.write_bytes(Path(literal_trace).read_bytes())
    assert find_importer(str(renamed)).name == "xplane"


@pytest.mark.parametrize("case", ["truncated", "garbage", "no_ops"])
def test_bad_xplane_exits_2_with_one_line(
    case: str, literal_trace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = Path(literal_trace).read_bytes()
    bad = tmp_path / "bad.xplane.pb"
    if case == "truncated":
        bad.write_bytes(data[: len(data) // 2])
    elif case == "garbage":
        bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0f/host:CPU" + os.urandom(64))
    else:
        s = XSpace()
        s.planes.add().name = "/host:CPU"
        bad.write_bytes(s.SerializeToString())
    with pytest.raises(BadInputError):
        import_file(str(bad))
    out = tmp_path / "out.ksprof"
    assert main(["import", str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.xplane.pb" in err[0]
    assert not out.exists()


def test_gzipped_xplane_imports_the_same(literal_trace: str, tmp_path: Path) -> None:
    import gzip

    gz = tmp_path / "host.xplane.pb.gz"
    gz.write_bytes(gzip.compress(Path(literal_trace).read_bytes()))
    assert tree(import_file(str(gz))) == tree(import_file(literal_trace))


# --- fuzz: a damaged XPlane imports or fails with one line --------------------------------

_SEED = _space(
    "/nonexistent/train.py",
    [("dot.1", 0, 4_000_000), ("fusion.1", 5_000_000, 1_000_001), ("dot.2", 7_000_000, 3_000_000), ("copy.3", 1, 9)],
)


def _import_or_bad_input(data: bytes, tmp_dir: Path) -> None:
    path = tmp_dir / "fuzz.xplane.pb"
    path.write_bytes(data)
    try:
        profile = import_file(str(path))
    except BadInputError as exc:
        assert "\n" not in str(exc)
    else:
        profile.check()


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(flips=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), max_size=8), cut=st.floats(0.5, 1))
def test_fuzz_byte_flips_and_truncation(flips: list[tuple[float, int]], cut: float, tmp_path: Path) -> None:
    data = bytearray(_SEED)
    for where, value in flips:
        data[int(where * (len(data) - 1))] = value
    _import_or_bad_input(bytes(data[: max(int(cut * len(data)), 1)]), tmp_path)


# --- run-time call sites (a live run's recorded callers) ---------------------------------------------


def test_recorded_callers_split_one_executable_by_call_site(
    literal_trace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from collections import Counter

    from kernelscope.importers.xplane.callsites import sites_of_runs
    from kernelscope.importers.xplane.hlo import HloModule
    from kernelscope.importers.xplane.reader import OpEvent
    from kernelscope.model.timeline import Category

    monkeypatch.chdir(Path(literal_trace).parent)
    h = HloProto()
    h.ParseFromString(_hlo(7, "train.py"))
    modules = {7: HloModule(h.hlo_module)}

    def ev(run: int | None, start: int) -> OpEvent:
        return OpEvent("dot.1", "jit_step", 7, "dot.1", "cpu", "t", False, start, 10, 10, Category.OP, -1, True, run)

    train, evaluate = (("train.py", 40, "<module>"),), (("train.py", 50, "<module>"),)
    warnings: Counter[str] = Counter()
    # given three executions (run ids out of order in the file) and three recorded calls
    got = sites_of_runs([ev(-5, 300), ev(-7, 100), ev(-6, 200)], modules, {"step": [train, train, evaluate]}, warnings)
    # then the executions pair with the calls in time order
    assert {run: frames[-1].line for (_pid, run), frames in got.items()} == {-7: 40, -6: 40, -5: 50}
    assert not warnings
    # a count that does not match, or executions without run ids, leave the first trace's line, said once
    assert sites_of_runs([ev(-7, 100)], modules, {"step": [train, evaluate]}, warnings) == {}
    assert sites_of_runs([ev(None, 100)], modules, {"step": [train]}, warnings) == {}
    assert len(warnings) == 2

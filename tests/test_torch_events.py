"""A live window's events (torch's event tree, as literals) through collect.torch_events and the engine:
the joins a CPU-only machine cannot exercise for real (kernels by correlation), backward across windows,
record_function ranges and the session's own time."""

from __future__ import annotations

import enum
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kernelscope.attribute.engine import Attributor
from kernelscope.attribute.tables import EventTables
from kernelscope.collect.torch_events import TorchEvents
from kernelscope.model import Profile


class _Tag(enum.Enum):
    PyCall = 0
    PyCCall = 1
    TorchOp = 2
    Allocation = 3


def _site(file: str, line: int, fn: str) -> SimpleNamespace:
    return SimpleNamespace(file_name=file, line_number=line, function_name=fn)


def call(caller: SimpleNamespace, callee: SimpleNamespace, start: int, dur: int, *kids: Any) -> SimpleNamespace:
    fields = SimpleNamespace(caller=caller, callsite=callee, module=None)
    ev = SimpleNamespace(tag=_Tag.PyCall, children=list(kids), start_time_ns=start, duration_time_ns=dur)
    ev.start_tid, ev.extra_fields, ev.parent = 1, fields, None
    return ev


def op(name: str, start: int, dur: int, *kids: Any, seq: int = -1, corr: int = 0, scope: str = "FUNCTION") -> Any:
    fields = SimpleNamespace(scope=SimpleNamespace(name=scope), sequence_number=seq, inputs=[])
    ev = SimpleNamespace(tag=_Tag.TorchOp, name=name, children=list(kids), start_time_ns=start)
    ev.duration_time_ns, ev.start_tid, ev.correlation_id, ev.extra_fields = dur, 1, corr, fields
    return ev


class Kernel:
    """Kineto's flat-list entry for device activity (methods, as KinetoEvent has them)."""

    def __init__(self, name: str, start: int, dur: int, linked: int) -> None:
        self._v = (name, start, dur, linked)

    def name(self) -> str:
        return self._v[0]

    def start_ns(self) -> int:
        return self._v[1]

    def duration_ns(self) -> int:
        return self._v[2]

    def linked_correlation_id(self) -> int:
        return self._v[3]

    def device_index(self) -> int:
        return 0

    def device_resource_id(self) -> int:
        return 7


class Window:
    def __init__(self) -> None:
        self.warnings: Counter[str] = Counter()
        self.tables = EventTables(self.warnings)
        self.engine = Attributor(self.tables, self.warnings, host_timeline=False)
        self.events = TorchEvents(self.tables, lambda ptr: None)

    def fold(self, roots: list[Any], kernels: list[Kernel] = (), cuda: bool = False) -> None:  # type: ignore[assignment]
        self.events.add(roots, shapes=False, cuda=cuda)
        self.events.add_device(kernels)
        self.engine.fold()
        self.engine.flush()

    def profile(self) -> Profile:
        try:
            return self.engine.build({})
        finally:
            self.tables.close()


def paths(p: Profile, metric: str) -> dict[str, float]:
    col = p.exclusive(metric)
    return {" > ".join(f.label() for f in p.path(n)): float(col[n]) for n in range(1, len(p)) if col[n]}


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # user files show relative to the working directory


def user(tmp_path: Path) -> str:
    f = tmp_path / "train.py"
    f.write_text("# the frame classifier wants a real file\n")
    return str(f)


def test_a_kernel_joins_the_op_that_launched_it_by_correlation(tmp_path: Path) -> None:
    u = user(tmp_path)
    mm = op("aten::mm", 100, 50, corr=41)
    w = Window()
    w.fold(
        [call(_site(u, 3, "step"), _site("torch/functional.py", 1, "mm"), 90, 70, mm)],
        [Kernel("gemm", 120, 30, 41)],
        True,
    )
    p = w.profile()
    assert paths(p, "time_ns") == {"train.py:3 step > aten::mm > gemm": 30.0}  # device time on the kernel
    assert p.timeline is not None and p.timeline.tracks[-1].name == "stream 7"


def test_backward_finds_its_forward_op_a_window_later(tmp_path: Path) -> None:
    u = user(tmp_path)
    w = Window()
    forward = call(
        _site(u, 5, "step"), _site("torch/nn/functional.py", 1, "linear"), 0, 100, op("aten::addmm", 10, 80, seq=9)
    )
    w.fold([forward])
    backward = op(
        "autograd::engine::evaluate_function: AddmmBackward0", 1_000, 60, op("AddmmBackward0", 1_001, 58, seq=9), seq=9
    )
    w.fold([call(_site(u, 6, "step"), _site("torch/_tensor.py", 1, "backward"), 990, 100, backward)])
    counts = paths(w.profile(), "count")
    assert counts["train.py:5 step > [backward] > AddmmBackward0"] == 1.0  # one autograd node, one call
    assert not w.warnings


def test_a_record_function_range_holds_the_block_not_the_call_that_opened_it(tmp_path: Path) -> None:
    u = user(tmp_path)
    # `with record_function("loss"):` at line 8: torch's tree makes the range a leaf of the __enter__ call
    enter = call(_site(u, 8, "step"), _site("torch/autograd/profiler.py", 1, "__enter__"), 0, 10)
    enter.children = [op("loss", 5, 200, scope="USER_SCOPE")]
    mul = call(_site(u, 9, "step"), _site("torch/functional.py", 1, "mul"), 50, 40, op("aten::mul", 55, 30))
    w = Window()
    w.fold([enter, mul])
    counts = paths(w.profile(), "count")
    # the range starts where line 8's call ends and holds line 9 (not clipped to the __enter__ call)
    assert counts == {"train.py:8 step": 1.0, "[loss]": 1.0, "[loss] > train.py:9 step": 1.0,
                      "[loss] > train.py:9 step > aten::mul": 1.0}  # fmt: skip


def test_the_session_s_own_window_change_is_not_the_line_s_time(tmp_path: Path) -> None:
    u = user(tmp_path)
    live = str(Path(__import__("kernelscope").__file__).parent / "collect" / "torch_live.py")
    change = call(_site(live, 1, "_on_torch_call"), _site(live, 2, "_checkpoint"), 10, 5_000)
    randn = call(
        _site(u, 2, "<module>"),
        _site("torch/functional.py", 1, "randn"),
        0,
        5_300,
        change,
        op("aten::randn", 5_100, 100),
    )
    w = Window()
    w.fold([randn])
    cpu = paths(w.profile(), "cpu_time_ns")
    assert cpu == {"train.py:2 <module>": 200.0, "train.py:2 <module> > aten::randn": 100.0}


def test_a_range_begun_again_sits_inside_the_line_that_entered_it(tmp_path: Path) -> None:
    """A window opened inside an LBFGS step: the session began ``Optimizer.step#LBFGS.step`` again (a leaf of its
    own call) and ended it at the stop. Its row runs from the start-up event of the optimizer's wrapper, which
    entered it, to the window's end; the `opt.step(closure)` line's row starts with that same event and also
    runs to the end, and stays outside it; the range ran on from the last window: no call."""
    from kernelscope.collect.continued import Split

    u = user(tmp_path)
    live = str(Path(__import__("kernelscope").__file__).parent / "collect" / "torch_live.py")
    name = "Optimizer.step#LBFGS.step"
    own = call(
        _site(live, 1, "_decide_and_act"), _site(live, 2, "_change"), 40, 20, op(name, 45, 5, scope="USER_SCOPE")
    )
    mm = call(_site(u, 43, "closure"), _site("torch/functional.py", 1, "mm"), 100, 50, op("aten::mm", 110, 30))
    closure = call(_site("torch/optim/lbfgs.py", 9, "step"), _site(u, 40, "closure"), 30, 970, own, mm)
    step = call(
        _site("torch/optim/optimizer.py", 5, "wrapper"), _site("torch/optim/lbfgs.py", 1, "step"), 20, 980, closure
    )
    wrapper = call(_site(u, 47, "main"), _site("torch/optim/optimizer.py", 4, "wrapper"), 10, 990, step)
    main = call(_site(u, 53, "<module>"), _site(u, 32, "main"), 0, 1000, wrapper)
    chain = (("<module>", True), ("main", True), ("wrapper", True), ("step", True), ("closure", True))
    split = Split(stack=("main", "wrapper", "step", "closure"), ranges=((1, name, True),), suspended=(name,))
    w = Window()
    w.events.add([main], shapes=False, cuda=False, continued=chain, split=split)
    w.engine.fold()
    w.engine.flush()
    counts = paths(w.profile(), "count")
    inside = f"train.py:53 <module> > train.py:47 main > [{name}] > train.py:43 closure > aten::mm"
    assert counts.get(inside) == 1.0, counts
    assert f"train.py:53 <module> > train.py:47 main > [{name}]" not in counts  # (ran on: counted in its first window)
    assert not w.warnings

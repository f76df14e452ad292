"""The program's own threads (collect/threads.py): recorded where torch's every-thread mode is safe to stop and
start again, and said where it is not.

The gate is what ``benchmarks/every_thread_stress.py`` measured (worker threads in ops through hundreds of
window changes of the real session, each run a subprocess so that a crash counts); the slow tests run it on the
installed torch as kernelscope would (``--mode auto``): every run must end cleanly, and the workers' ops are in
the profile exactly where the mode is on.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, env_without_color
from kernelscope import load
from kernelscope.collect import threads as every
from kernelscope.model import FrameKind

torch = pytest.importorskip("torch")

STRESS = REPO / "benchmarks" / "every_thread_stress.py"
TRACER_WITH_THREADS = "torch's Python tracer fails under the program's threads where they are not recorded"
THREADS = REPO / "tests" / "live_matrix" / "threads.py"


def test_the_gate_names_why_a_torch_does_not_record_threads() -> None:
    assert every._decide((2, 5), has_mode=False) == every.EveryThread(
        False, "torch 2.5 records only the thread that started profiling"
    )
    too_old = every._decide((2, 13), has_mode=True)
    assert not too_old.enabled
    assert too_old.why_not is not None and "2.13 can crash" in too_old.why_not
    assert every._decide(every.EVERY_THREAD_SINCE, has_mode=True) == every.EveryThread(True)


def test_a_thread_the_program_starts_is_known_by_its_function() -> None:
    watch = every.ThreadWatch()
    starts: list[str] = []
    original = threading.Thread.start
    watch.install(lambda: starts.append(threading.current_thread().name))
    try:

        def load_batches() -> None:
            pass

        t = threading.Thread(target=load_batches, name="loader")
        t.start()
        t.join()
    finally:
        watch.remove()
    assert threading.Thread.start is original
    assert starts == ["MainThread"]  # before the thread existed, on the thread that started it
    assert watch.names() == ["loader"]
    assert t.native_id is not None
    where = watch.functions[t.native_id]
    assert (Path(where.file_name).name, where.function_name) == ("test_every_thread.py", "load_batches")
    assert where.line_number == load_batches.__code__.co_firstlineno


def test_every_thread_windows_once_the_program_has_a_thread() -> None:
    """Where the mode is on: windows record every thread once the program has a thread of its own, and then
    sample no allocations (torch records none in every-thread mode), unless every window was asked to record
    them. A program without a thread records as on a torch without the mode."""
    watch = every.ThreadWatch()
    mode = every.every_thread()
    assert watch.window(memory=True, memory_asked=False) == (None, True)
    assert watch.window(memory=False, memory_asked=False) == (None, False)
    watch.seen[1] = "loader"
    config, memory = watch.window(memory=True, memory_asked=False)
    assert (config is not None, memory) == ((True, False) if mode.enabled else (False, True))
    config, memory = watch.window(memory=False, memory_asked=False)
    assert (config is not None, memory) == (mode.enabled, False)
    assert watch.window(memory=True, memory_asked=True) == (None, True)
    assert watch.this_thread_windows == (3 if mode.enabled else 5)


def test_torch_records_no_allocations_in_every_thread_mode() -> None:
    """The observation behind the rule above: when a torch records allocations in every-thread mode, this
    fails, and memory windows can record every thread too."""
    from torch._C._profiler import _ExperimentalConfig
    from torch.autograd.profiler import profile

    try:
        config = _ExperimentalConfig(profile_all_threads=True)
    except TypeError:
        pytest.skip("this torch has no every-thread mode")
    tags: set[str] = set()
    for experimental in (None, config):
        prof = profile(use_kineto=True, profile_memory=True, experimental_config=experimental)
        with prof:
            torch.ones(256, 256).sum()
        stack = list(prof.kineto_results.experimental_event_tree())
        found = set()
        while stack:
            ev = stack.pop()
            found.add(ev.tag.name)
            stack.extend(ev.children)
        tags.add(("every" if experimental is not None else "this") + (":alloc" if "Allocation" in found else ""))
    assert tags == {"this:alloc", "every"}


def _stress(tmp: Path, runs: int, windows: int) -> list[dict[str, Any]]:
    r = subprocess.run(
        [sys.executable, str(STRESS), "--runs", str(runs), "--windows", str(windows), "--mode", "auto"],
        capture_output=True,
        text=True,
        cwd=tmp,
        env=env_without_color() | {"TMPDIR": str(tmp)},
        timeout=900,
    )
    lines = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert lines, r.stderr[-3000:]
    return lines


@pytest.mark.slow
def test_worker_threads_in_ops_survive_hundreds_of_window_changes(tmp_path: Path) -> None:
    """kernelscope's own choice on this torch, under stress: two worker threads in ops without pause while the
    session changes windows every 5 ms; each run a subprocess (a crash fails it)."""
    *runs, summary = _stress(tmp_path, runs=2, windows=200)
    enabled = every.every_thread().enabled
    if every.tracer_with_threads() is not None:
        # a torch whose Python tracer may crash the program under its threads: recording stops once the program
        # has one (the workers here start before the session: nothing is recorded), and the program is safe
        assert summary["clean"] == 2 and summary["crashed"] == 0, runs
        assert all(run["stopped_for_threads"] and run["worker_ops"] == 0 for run in runs), runs
        return
    if not enabled and summary["clean"] < 2:
        # recording the main thread only, torch's Python tracer (it hooks every thread's Python calls) with the
        # program's threads in Python and ops hands back corrupt event names on 2.13 (kernelscope stops recording
        # with a warning; the program goes on); none without the threads (benchmarks/README.md, "Every-thread
        # recording under stress"). A known gap where threads are not recorded, not fixed: listed
        pytest.xfail(f"{TRACER_WITH_THREADS}: {runs}")
    assert summary["clean"] == 2 and summary["window_changes"] >= 400, runs
    for run in runs:
        assert run["every_thread"] is enabled
        # the workers' ops are in the profile, under the workers' own function, exactly where threads are recorded
        assert (run["worker_ops"] > 1000) if enabled else (run["worker_ops"] == 0), run


@pytest.mark.slow
def test_ops_on_a_thread_the_program_starts_sit_under_its_function(tmp_path: Path) -> None:
    """tests/live_matrix/threads.py: 50 forward calls on a thread it starts and joins at once (no window opens
    while it runs: the Python tracer never saw it), then 10 steps on the main thread."""
    (tmp_path / "_common.py").write_text((THREADS.parent / "_common.py").read_text())
    out = tmp_path / "t.ksprof"
    cmd = [sys.executable, "-m", "kernelscope", "run", "--no-view", "--max-overhead", "0", "-o", str(out), str(THREADS)]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env_without_color(), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "threads done" in r.stdout
    profile = load(str(out))
    counts = profile.exclusive("count")
    by_caller: dict[str, int] = {}
    for n in range(1, len(profile)):
        frame = profile.frame_of(n)
        if frame.kind is FrameKind.OP and frame.name == "aten::addmm":
            callers = [f for f in profile.path(n) if f.kind is FrameKind.PYTHON]
            key = f"{Path(callers[0].file).name}:{callers[0].name}" if callers else "none"
            by_caller[key] = by_caller.get(key, 0) + int(counts[n])
    warned = [line for line in r.stderr.splitlines() if "other Python thread(s)" in line]
    if every.every_thread().enabled:
        assert by_caller == {"threads.py:worker": 50, "threads.py:<module>": 10}, by_caller
        assert not warned, r.stderr
    else:
        assert by_caller == {"threads.py:<module>": 10}, by_caller
        assert len(warned) == 1 and "Thread-1 (worker)" in warned[0], r.stderr  # said once, with why
        assert f"torch {every._v(every._torch_version())}" in warned[0]

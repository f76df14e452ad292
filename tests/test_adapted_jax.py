"""Live JAX profiles of programs adapted from public examples (tests/fixtures/adapted, provenance in each):
google/flax examples/mnist (linen CNN + optax, one jax.named_scope), jax-ml/jax
examples/mnist_classifier_fromscratch, patrick-kidger/equinox's MNIST CNN notebook and
google-deepmind/dm-haiku examples/mnist (LeNet-300-100) and the Modules section of its basics notebook. Every XLA instruction on a user line, Flax modules and named scopes
as frames, call sites kept apart, fused parts on their own lines, coverage and overhead stated."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelscope.analysis.views import group
from kernelscope.importers.xplane.place import NO_SOURCE
from kernelscope.model import Frame, FrameKind, Profile, load

pytest.importorskip("jax")

REPO = Path(__file__).resolve().parents[1]
ADAPTED = REPO / "tests" / "fixtures" / "adapted"
FLAX = ADAPTED / "flax_mnist.py"
SCRATCH = ADAPTED / "jax_mnist_fromscratch.py"
EQUINOX = ADAPTED / "equinox_mnist.py"
HAIKU = ADAPTED / "haiku_mnist.py"
HAIKU_MODULES = ADAPTED / "haiku_basics_modules.py"
PROGRAMS = {"flax": FLAX, "scratch": SCRATCH, "equinox": EQUINOX, "haiku": HAIKU, "haiku_modules": HAIKU_MODULES}


def marked(path: Path, name: str) -> int:
    return next(i for i, s in enumerate(path.read_text().splitlines(), 1) if s.rstrip().endswith(f"# <- {name}"))


@pytest.fixture(scope="module")
def profiles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Profile]:
    for needed in ("flax", "optax", "equinox", "haiku"):
        pytest.importorskip(needed)
    out = tmp_path_factory.mktemp("adapted_jax")
    code = (
        "import sys\n"
        "from kernelscope.collect.jax_live import profile_script\n"
        "target, out, xplane = sys.argv[1:]\n"
        "p, outcome = profile_script(target, [], keep_xplane=xplane)\n"
        "p.save(out)\n"
        "sys.exit(outcome.exit_code)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "JAX_PLATFORMS": "cpu"}
    result: dict[str, Profile] = {}
    for name, script in PROGRAMS.items():
        args = [str(script), str(out / f"{name}.ksprof"), str(out / f"{name}.xplane.pb")]
        done = subprocess.run(
            [sys.executable, "-c", code, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-2000:]
        result[name] = load(str(out / f"{name}.ksprof"))
        result[name + "_xplane"] = out / f"{name}.xplane.pb"  # type: ignore[assignment]
    return result


def _share_on_user_lines(p: Profile) -> float:
    rows = dict(group(p, "line").rows)
    return 1.0 - rows.get(None, {}).get("time_ns", 0.0) / p.total("time_ns")


def _paths_to(p: Profile, pred: object) -> list[tuple[Frame, ...]]:
    return [p.path(n) for n in range(len(p)) if pred(p.frame_of(n))]  # type: ignore[operator]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_at_least_95_percent_of_time_is_on_user_lines(profiles: dict[str, Profile], name: str) -> None:
    p = profiles[name]
    p.check()
    assert _share_on_user_lines(p) >= 0.95, name


@pytest.mark.slow
def test_the_imported_xplane_puts_95_percent_on_user_lines_too(profiles: dict[str, Profile]) -> None:
    from kernelscope.importers import import_file

    for name in PROGRAMS:
        assert _share_on_user_lines(import_file(str(profiles[name + "_xplane"]))) >= 0.95, name


@pytest.mark.slow
def test_instructions_without_source_sit_under_each_call_site(profiles: dict[str, Profile]) -> None:
    p = profiles["flax"]
    rel = os.path.relpath(FLAX, REPO)
    sites = set()
    for path in _paths_to(p, lambda f: f.kind is FrameKind.SCOPE and f.name == NO_SOURCE):
        regions = [f.name for f in path if f.kind is FrameKind.REGION]
        lines = [f for f in path if f.kind is FrameKind.PYTHON]
        if regions == ["jit(apply_model)"]:
            assert lines and lines[-1].file == rel
            sites.add(lines[-1].line)
    # the training calls (train_epoch) and the evaluation call (train_and_evaluate) stay apart
    assert sites == {marked(FLAX, "TRAIN_CALL"), marked(FLAX, "EVAL_CALL")}
    # the largest instruction without metadata is under the training call, not unattributed
    no_source = [n for n in range(len(p)) if p.frame_of(n) == Frame.scope(NO_SOURCE)]
    assert sum(float(p.inclusive("time_ns")[n]) for n in no_source) > 0


@pytest.mark.slow
def test_flax_modules_and_named_scopes_are_frames(profiles: dict[str, Profile]) -> None:
    p = profiles["flax"]
    modules = {(f.name, f.cls) for f in p.frames if f.kind is FrameKind.MODULE}
    assert {("CNN", "CNN"), ("CNN/Conv_0", "Conv"), ("CNN/Conv_1", "Conv"), ("CNN/Dense_0", "Dense")} <= modules
    inc = p.inclusive("time_ns")
    # Conv_0's forward and backward sit under the module, which sits under the Conv line
    conv0 = [n for n in range(len(p)) if p.frame_of(n) == Frame.module_("CNN/Conv_0", "Conv")]
    assert conv0 and sum(float(inc[n]) for n in conv0) > 0
    for n in conv0:
        above = [f for f in p.path(n) if f.kind is FrameKind.PYTHON]
        assert above[-1].line == marked(FLAX, "CONV0")
    # the named scope "xent" holds the loss's ops, on the loss line
    xent = [n for n in range(len(p)) if p.frame_of(n) == Frame.scope("xent")]
    assert xent and sum(float(inc[n]) for n in xent) > 0
    assert {[f for f in p.path(n) if f.kind is FrameKind.PYTHON][-1].line for n in xent} == {marked(FLAX, "XENT")}
    # by module: every Flax module is a row
    rows = dict(group(p, "module").rows)
    assert {"CNN/Conv_0", "CNN/Conv_1", "CNN/Dense_0"} <= set(rows)


@pytest.mark.slow
def test_a_fusion_keeps_the_lines_of_its_parts(profiles: dict[str, Profile]) -> None:
    p = profiles["scratch"]
    hidden, tanh = marked(SCRATCH, "HIDDEN_DOT"), marked(SCRATCH, "TANH")
    fused = [
        n
        for n in range(len(p))
        if p.frame_of(n).kind is FrameKind.KERNEL
        and {(p.frame_of(k).name, p.frame_of(k).line) for k in p.children[n]} >= {("add", hidden), ("tanh", tanh)}
    ]
    assert fused  # XLA fused the bias add (one line) with the tanh (the next line)
    rows = dict(group(p, "line").rows)
    rel = os.path.relpath(SCRATCH, REPO)
    assert rows[f"{rel}:{tanh}"]["time_ns"] > 0 and rows[f"{rel}:{hidden}"]["time_ns"] > 0


@pytest.mark.slow
def test_jax_runs_state_coverage_and_overhead(profiles: dict[str, Profile]) -> None:
    for name in ("flax", "scratch"):
        cov = profiles[name].metadata["coverage"]
        assert cov["recorded_seconds"] == cov["program_seconds"] > 0
        assert cov["overhead_seconds"] == pytest.approx(sum(cov["overhead_parts"].values()))
        assert cov["overhead_seconds"] > 0 and cov["run_seconds"] > cov["program_seconds"]
        assert profiles[name].metadata["wall_ns"] == int(cov["program_seconds"] * 1e9)


@pytest.mark.slow
def test_call_sites_sharing_one_executable_stay_apart(tmp_path: Path) -> None:
    """Same shapes from the training loop and from evaluation: one executable, whose HLO names only the
    first trace's caller; the live run's recorded calls put each execution under its own call line."""
    script = REPO / "tests" / "fixtures" / "jax_shared_step.py"
    text = script.read_text()  # (not imported: that would import jax into the pytest process)
    prog = SimpleNamespace(
        **{k: int(re.search(rf"^{k} = (\d+)$", text, re.M).group(1)) for k in ("TRAIN_LINE", "EVAL_LINE")}
    )  # type: ignore[union-attr]
    code = (
        "import sys\n"
        "from kernelscope.collect.jax_live import profile_script\n"
        "p, outcome = profile_script(sys.argv[1], [])\n"
        "p.save(sys.argv[2])\n"
        "sys.exit(outcome.exit_code)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "JAX_PLATFORMS": "cpu"}
    out = tmp_path / "shared.ksprof"
    done = subprocess.run([sys.executable, "-c", code, str(script), str(out)], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    p = load(str(out))
    assert not p.metadata.get("import_warnings")
    count = p.exclusive("count")
    calls: dict[int, float] = {}
    for n in range(len(p)):
        if p.frame_of(n).kind is FrameKind.KERNEL and any(f.name == "jit(step)" for f in p.path(n)):
            above = [f for f in p.path(n) if f.kind is FrameKind.PYTHON and f.name in ("train", "evaluate")]
            calls[above[-1].line] = calls.get(above[-1].line, 0.0) + float(count[n])
    kernels_per_call = calls[prog.EVAL_LINE]
    assert kernels_per_call >= 1
    assert calls == {prog.TRAIN_LINE: 6 * kernels_per_call, prog.EVAL_LINE: kernels_per_call}


def _module_lines(p: Profile) -> dict[tuple[str, str], set[int]]:
    """Each module frame (path, class) with time, and the innermost user lines above it."""
    inc = p.inclusive("time_ns")
    out: dict[tuple[str, str], set[int]] = {}
    for n in range(len(p)):
        f = p.frame_of(n)
        if f.kind is FrameKind.MODULE and float(inc[n]) > 0:
            above = [g for g in p.path(n) if g.kind is FrameKind.PYTHON]
            out.setdefault((f.name, f.cls), set()).add(above[-1].line if above else 0)
    return out


@pytest.mark.slow
def test_equinox_layers_are_module_frames_under_the_line_that_called_them(profiles: dict[str, Profile]) -> None:
    from kernelscope.importers import import_file

    for p in (profiles["equinox"], import_file(str(profiles["equinox_xplane"]))):
        modules = _module_lines(p)
        # eqx.nn layers name their scope after their class (eqx.nn.Conv, eqx.nn.Linear)
        assert {("eqx.nn.Conv", "Conv"), ("eqx.nn.Linear", "Linear")} <= set(modules)
        assert modules[("eqx.nn.Linear", "Linear")] == {marked(EQUINOX, "LAYER")}
        assert {"eqx.nn.Conv", "eqx.nn.Linear"} <= {k for k, _v in group(p, "module").rows}


@pytest.mark.slow
def test_haiku_modules_with_parameters_are_module_frames(profiles: dict[str, Profile]) -> None:
    from kernelscope.importers import import_file

    for p in (profiles["haiku"], import_file(str(profiles["haiku_xplane"]))):
        modules = _module_lines(p)
        # hk.Linear x3 own params['linear'], ['linear_1'], ['linear_2']; their class is not in the HLO
        assert {("linear", ""), ("linear_1", ""), ("linear_2", "")} <= set(modules)
        assert modules[("linear_1", "")] == {marked(HAIKU, "MLP")}
        # hk.Sequential owns no parameters and its class is Haiku's: nothing tells it from a named scope
        assert Frame.scope("sequential") in set(p.frames)


@pytest.mark.slow
def test_a_fusion_with_merged_op_names_stays_under_its_lines_in_an_import(profiles: dict[str, Profile]) -> None:
    """Haiku's Adam update fuses ops whose merged names (``a;b``) carry no stack; they do not empty the
    fusion's common line (which put it at the root of an imported profile)."""
    from kernelscope.importers import import_file

    p = import_file(str(profiles["haiku_xplane"]))
    for n in range(len(p)):
        path = p.path(n)
        if p.frame_of(n).kind is FrameKind.KERNEL and any(f.name == "jit(update)" for f in path):
            assert any(f.kind is FrameKind.PYTHON for f in path), path


@pytest.mark.slow
def test_haiku_modules_the_user_wrote_are_module_frames_with_their_class(profiles: dict[str, Profile]) -> None:
    from kernelscope.importers import import_file

    for p in (profiles["haiku_modules"], import_file(str(profiles["haiku_modules_xplane"]))):
        modules = _module_lines(p)
        # MyLinear1 twice: Haiku names them my_linear1 and my_linear1_1; the class is on the user stack
        assert {("my_linear1", "MyLinear1"), ("my_linear1_1", "MyLinear1")} <= set(modules)
        # placed right above the line of its class's method, inside the region of the jitted apply
        for n in range(len(p)):
            f = p.frame_of(n)
            if f.kind is FrameKind.MODULE and f.cls == "MyLinear1":
                assert any(f.name == "jit(apply_fn)" for f in p.path(n))
                below = {(p.frame_of(k).name, p.frame_of(k).line) for k in p.children[n]}
                assert ("MyLinear1.__call__", marked(HAIKU_MODULES, "DOT")) in below

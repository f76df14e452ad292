"""CompileCapture on a tiny compiled model, without the live collector: every cpp_fused kernel the
profiler shows gets origins with this file's lines and module attribute paths, forward and backward;
a second run with Inductor's on-disk caches warm gives the same origins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kernelscope.attribute.compiled import FusedOrigin
from kernelscope.collect.compile import CompileCapture, module_path, parse_stack, split_kernel_name
from kernelscope.collect.compile import capture as capture_module  # where CompileCapture looks up probe

torch = pytest.importorskip("torch")
nn = torch.nn

THIS = os.path.relpath(__file__) if not os.path.relpath(__file__).startswith("..") else __file__


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 32)
        self.act = nn.GELU()
        self.out = nn.Linear(32, 16)

    def forward(self, x: Any) -> Any:
        h = self.act(self.fc(x))  # line A
        h = h * 2 + 1  # line B
        return self.out(h)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])

    def forward(self, x: Any) -> Any:
        x = self.blocks[0](x)
        torch._dynamo.graph_break()
        x = self.blocks[1](x)
        return x.relu().sum()


def _line(text: str) -> int:
    for i, line in enumerate(Path(__file__).read_text().splitlines(), 1):
        if text in line:
            return i
    raise AssertionError(text)


def _profiled_kernels(prof: Any) -> list[tuple[str, bool]]:
    found: list[tuple[str, bool]] = []
    stack = [(r, False) for r in prof.profiler.kineto_results.experimental_event_tree()]
    while stack:
        ev, bwd = stack.pop()
        bwd = bwd or ev.name == "CompiledFunctionBackward"
        if ev.name.startswith("graph_") and "cpp_fused" in ev.name:
            found.append((ev.name, bwd))
        stack.extend((c, bwd) for c in ev.children)
    return found


@pytest.mark.slow
def test_every_profiled_cpp_kernel_has_user_lines_and_modules() -> None:
    # given: a compiled two-block model with a graph break, trained two steps under the capture
    torch._dynamo.reset()
    with CompileCapture() as cap:
        model = Net()
        compiled = torch.compile(model)
        x = torch.randn(8, 16)
        for _ in range(2):
            compiled(x).backward()
        # when: one more step is profiled
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            compiled(x).backward()
    kernels = _profiled_kernels(prof)
    # then: forward and backward kernels, from both graphs, all known
    assert {b for _, b in kernels} == {False, True}
    assert {split_kernel_name(n)[0] for n, _ in kernels} == {0, 1}
    seen_lines: set[int] = set()
    seen_modules: set[str] = set()
    for name, backward in kernels:
        origins = cap.origins(name, backward)
        assert origins, f"no origins for {name} (backward={backward})"
        for o in origins:
            assert o.backward == backward
            assert all(f.file == THIS for f in o.stack), o.stack
            seen_lines.update(f.line for f in o.stack)
            if o.module is not None:
                seen_modules.add(o.module.name)
    assert {_line("# line A"), _line("# line B")} <= seen_lines
    assert {"blocks.0", "blocks.1", "blocks.0.act", "blocks.1.act"} <= seen_modules
    # the fused gelu kernel of block 0 (forward) names both lines and the right modules
    fwd = cap.origins("graph_0_cpp_fused_add_gelu_mul_0", False)
    assert fwd is not None
    assert {(o.op, o.stack[-1].line, o.module.name if o.module else "") for o in fwd} == {
        ("aten::gelu", _line("# line A"), "blocks.0.act"),
        ("aten::mul", _line("# line B"), "blocks.0"),
        ("aten::add", _line("# line B"), "blocks.0"),
    }
    # extern calls are known per call, by the op the profiler shows
    addmm = cap.origins("aten::addmm", False, 1, graph_id=0)
    assert addmm is not None and addmm[0].module is not None and addmm[0].module.name == "blocks.0.out"
    assert addmm[0].flops == 2 * 8 * 32 * 16
    # graph breaks are recorded with their line; config is restored on exit
    diag = cap.diagnostics()
    assert [(b["file"], b["line"]) for b in diag["graph_breaks"]] == [(THIS, _line("torch._dynamo.graph_break()"))]
    assert torch._inductor.config.trace.provenance_tracking_level == 0
    json.dumps(diag)


def test_missing_private_api_degrades_with_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capture_module, "probe", lambda: (None, ["torch._inductor.debug.x"]))
    with CompileCapture() as cap:
        assert cap.origins("graph_0_cpp_fused_add_0", False) is None
    assert len(cap.warnings) == 1 and "torch._inductor.debug.x" in cap.warnings[0]
    assert cap.diagnostics()["provenance"] is False


def test_stack_and_module_path_parsing() -> None:
    trace = (
        '  File "/nonexistent/site-packages/torch/nn/modules/module.py", line 1, in _call_impl\n'
        f'  File "{os.path.abspath(__file__)}", line 36, in torch_dynamo_resume_in_forward_at_35\n'
        "    x = self.blocks[1](x)\n"
    )
    frames = parse_stack(trace)
    assert [(f.file, f.line, f.name) for f in frames] == [(THIS, 36, "forward")]
    assert module_path("L['self'].blocks[0]._modules['fc']") == "blocks.0.fc"
    assert module_path("getattr(L['model'].layers, '3').attn") == "layers.3.attn"
    assert module_path("L['self']") == ""


_SCRIPT = """
import json, sys
import torch
from kernelscope.collect.compile import CompileCapture

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
    def forward(self, x):
        return torch.nn.functional.gelu(self.fc(x)) * 3 + 1

with CompileCapture() as cap:
    m = torch.compile(M())
    m(torch.randn(4, 8)).sum().backward()
out = {}
for g in cap.graphs:
    for k, calls in g.kernels.items():
        out[f"{g.graph_id}:{g.backward}:{k}"] = [[[o.op, [(f.file, f.line) for f in o.stack], o.module and o.module.name] for o in c] for c in calls]
json.dump(out, sys.stdout)
"""


@pytest.mark.slow
def test_second_run_with_warm_caches_gives_the_same_origins(tmp_path: Path) -> None:
    script = tmp_path / "tiny.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor-cache"))
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert runs[0] == runs[1]
    assert runs[0] and all(calls for calls in runs[0].values())
    assert any(op == "aten::gelu" and stack for calls in runs[0].values() for call in calls for op, stack, _ in call)


def test_fused_origin_is_a_value() -> None:
    a = FusedOrigin("aten::mm", (), None, False, 1.0, 2.0)
    assert a == FusedOrigin("aten::mm", (), None, False, 1.0, 2.0)
    assert hash(a) == hash(FusedOrigin("aten::mm", (), None, False, 1.0, 2.0))

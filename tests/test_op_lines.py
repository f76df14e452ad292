"""Every op lands on the line that issued it, operators included, with its backward under it (issue 7)."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from kernelscope import load
from kernelscope.model import FrameKind, Profile

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

from test_torch_live import EXAMPLE, FIXTURES, ks  # noqa: E402

SCRIPT = FIXTURES / "op_lines.py"


def ops_by_line(profile: Profile, file_suffix: str) -> tuple[dict[int, set[str]], dict[int, set[str]]]:
    """line -> op names in its forward subtree, and line -> op names under its [backward]."""
    forward: dict[int, set[str]] = defaultdict(set)
    backward: dict[int, set[str]] = defaultdict(set)
    for node in range(1, len(profile)):
        frame = profile.frame_of(node)
        if frame.kind is not FrameKind.OP:
            continue
        in_backward = False
        for anc in profile.ancestors(int(profile.parent[node])):
            f = profile.frame_of(anc)
            if f.kind is FrameKind.BACKWARD:
                in_backward = True
            elif f.kind is FrameKind.PYTHON and f.file.endswith(file_suffix):
                (backward if in_backward else forward)[f.line].add(frame.name)
                break
    return forward, backward


@pytest.fixture(scope="module")
def op_lines_profile(tmp_path_factory: pytest.TempPathFactory) -> Profile:
    cwd = tmp_path_factory.mktemp("oplines")
    r = ks("run", "--max-overhead", "0", "-o", "ol.ksprof", "--no-view", str(SCRIPT), cwd=cwd)
    assert r.returncode == 0, r.stderr
    return load(str(cwd / "ol.ksprof"))


def test_each_op_is_on_its_own_line_with_its_backward(op_lines_profile: Profile) -> None:
    forward, backward = ops_by_line(op_lines_profile, "op_lines.py")
    tagged = {
        i: m.group(1)
        for i, text in enumerate(SCRIPT.read_text().splitlines(), start=1)
        if (m := re.search(r"  # op: (aten::\w+)$", text))
    }
    assert len(tagged) == 10
    for line, op in tagged.items():
        assert op in forward[line], f"{op} not under line {line}: {sorted(forward[line])}"
        # the same op kind issued by another tagged line would be a misattribution
        others = {o for ln, o in tagged.items() if ln != line}
        assert not (forward[line] & others - {op}), f"line {line} holds {forward[line] & others}"
    # backward work lands under the forward line that caused it (every tagged op is differentiable)
    for line in tagged:
        assert backward[line], f"no backward under line {line}"
    # nothing lands on a def line
    def_lines = {i for i, t in enumerate(SCRIPT.read_text().splitlines(), start=1) if t.lstrip().startswith("def ")}
    assert not def_lines & set(forward)


def test_bundled_example_residual_adds_are_on_their_own_lines(tmp_path: Path) -> None:
    r = ks("run", "--max-overhead", "0", "-o", "ex.ksprof", "--no-view", str(EXAMPLE), "--steps", "2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    forward, _ = ops_by_line(load(str(tmp_path / "ex.ksprof")), "tiny_transformer.py")
    lines = EXAMPLE.read_text().splitlines()
    residual = [i for i, t in enumerate(lines, start=1) if re.search(r"x = x \+ self\.", t)]
    assert len(residual) == 2
    for line in residual:
        assert "aten::add" in forward[line], (line, sorted(forward[line]))
    forward_line = next(i for i, t in enumerate(lines, start=1) if "def forward(self, x" in t)
    assert "aten::add" not in forward.get(forward_line, set())

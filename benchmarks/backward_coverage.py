"""Share of backward time placed under a forward context (issue 7's floor 3), per trace or profile.

    python benchmarks/backward_coverage.py ../shared/traces/*.json.gz

Backward time is the inclusive time of the outermost ``[backward]`` frames, gradient accumulation
(``AccumulateGrad``, which has no forward op) aside; it is "under a forward context" when that frame's parent is a line, module or op, not the root and not the
``[backward without a forward op]`` scope (gradient accumulation, DDP's reducer, sampled traces that
lost the forward op).
"""

from __future__ import annotations

import sys

from kernelscope.attribute.engine import NO_FORWARD_SCOPE
from kernelscope.inputs import open_profile
from kernelscope.model import FrameKind

ACCUMULATE = "torch::autograd::AccumulateGrad"


def coverage(path: str) -> tuple[float, float, float]:
    """(backward time, of it under a forward context, gradient accumulation that has no forward op)."""
    p = open_profile(path)
    inc = p.inclusive("time_ns")
    total = placed = accumulate = 0.0
    for node in range(1, len(p)):
        if p.frame_of(node).kind is not FrameKind.BACKWARD:
            continue
        parent = int(p.parent[node])
        if any(p.frame_of(a).kind is FrameKind.BACKWARD for a in p.ancestors(parent)):
            continue  # only the outermost backward frames
        total += float(inc[node])
        pf = p.frame_of(parent)
        if parent > 0 and not (pf.kind is FrameKind.SCOPE and pf.name == NO_FORWARD_SCOPE):
            placed += float(inc[node])
        else:
            accumulate += sum(float(inc[c]) for c in p.children[node] if p.frame_of(c).name == ACCUMULATE)
    return total, placed, accumulate


def main() -> None:
    for path in sys.argv[1:]:
        total, placed, accumulate = coverage(path)
        rest = total - accumulate
        share = f"{100.0 * placed / rest:.1f}%" if rest else "no backward"
        print(
            f"{path}: backward {total / 1e6:.1f} ms ({accumulate / 1e6:.1f} ms gradient accumulation), "
            f"under a forward context (accumulation aside) {share}"
        )


if __name__ == "__main__":
    main()

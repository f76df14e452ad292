"""What torch's own stop costs on the tiny-op LBFGS program, with no kernelscope at all: torch.profiler with
stacks, with and without shapes, around one cold run of ``tinyop_lbfgs.main(1)``; the time of
``profile.__exit__`` and the events it made. ``python benchmarks/torch_stop.py [shapes|noshapes]`` (one process
each; run it under ``/usr/bin/time -f %M`` for peak memory)."""

import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def main(shapes: bool) -> None:
    import tinyop_lbfgs
    from torch.autograd.profiler import profile

    p = profile(use_kineto=True, record_shapes=shapes, with_stack=True)
    p.__enter__()
    t0 = time.perf_counter()
    tinyop_lbfgs.main(1)
    ran = time.perf_counter() - t0
    t0 = time.perf_counter()
    p.__exit__(None, None, None)
    stop = time.perf_counter() - t0
    tags: Counter[str] = Counter()
    stack = list(p.kineto_results.experimental_event_tree())
    while stack:
        ev = stack.pop()
        tags[str(ev.tag).rsplit(".", 1)[-1]] += 1
        stack.extend(ev.children)
    print(f"shapes={shapes}: program {ran:.2f} s, torch's stop {stop:.2f} s, events {dict(tags)}")


if __name__ == "__main__":
    main(len(sys.argv) < 2 or sys.argv[1] != "noshapes")

"""Where complete recording of the tiny-op LBFGS program spends its time (issue 17).

One process: ``Session(max_overhead=0)`` around ``tinyop_lbfgs.main(1)``; torch's stop
(``profile.__exit__``: Kineto and Python-tracer post-processing) and kernelscope's fold are timed apart.
``python benchmarks/tinyop_breakdown.py [sample|off]`` (shape recording as ``run --shapes``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def main(shapes: str) -> None:
    import tinyop_lbfgs

    from kernelscope.collect.recorder import Recorder
    from kernelscope.collect.torch_live import Session

    spent = {"close": 0.0, "fold": 0.0}

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - t0

        return wrapper

    Recorder.stop = timed("close", Recorder.stop)  # type: ignore[method-assign]
    Recorder._fold = timed("fold", Recorder._fold)  # type: ignore[method-assign]
    s = Session(compile_capture=False, max_overhead=0, shapes=shapes)
    s.start()
    t0 = time.perf_counter()
    tinyop_lbfgs.main(1)
    run = time.perf_counter() - t0
    s.finalize()
    stop = spent["close"] - spent["fold"]
    print(
        f"shapes={shapes}: {s.recorder.events} events in {s.recorder.windows} windows; the program with recording on "
        f"{run - spent['close']:.1f} s, torch's stop {stop:.1f} s, kernelscope's fold {spent['fold']:.1f} s"
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sample")

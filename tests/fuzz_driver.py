"""Run kernelscope's CLI over every case of a fuzz corpus in one process; print one JSON line per call.

    python tests/fuzz_driver.py CASES.json

``CASES.json`` is a list of argv lists. Each call's exit code, seconds and, when ``main`` raised instead
of returning (a traceback for a user), the exception, are printed; the peak resident memory comes last.
The test (tests/test_fuzz.py) runs this under an address-space limit and a timeout.
"""

from __future__ import annotations

import contextlib
import io
import json
import resource
import sys
import time
import traceback


def main() -> int:
    from kernelscope.cli.main import main as ks

    with open(sys.argv[1], encoding="utf-8") as fh:
        cases = json.load(fh)
    for argv in cases:
        print(json.dumps({"start": argv}), file=sys.stderr, flush=True)  # the last one started, if it hangs
        out, err = io.StringIO(), io.StringIO()
        t0 = time.perf_counter()
        raised = None
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = ks(argv)
        except SystemExit as exc:  # argparse on bad usage
            rc = exc.code if isinstance(exc.code, int) else 2
        except BaseException as exc:
            rc = -1
            raised = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:500]
        seconds = time.perf_counter() - t0
        lines = err.getvalue().strip().splitlines()
        print(json.dumps({"argv": argv, "rc": rc, "seconds": round(seconds, 3), "raised": raised,
                          "stderr_lines": len(lines), "stderr": lines[-1][:300] if lines else "",
                          "traceback": "Traceback" in err.getvalue()}), flush=True)  # fmt: skip
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"peak_rss_mb": round(peak_kb / 1024, 1)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run a program inside ``kernelscope.profile(PATH, max_overhead=...)`` (the Python API, not the CLI).
Usage: ``python under_api.py OUT.ksprof MAX_OVERHEAD PROGRAM [ARGS...]``."""

import runpy
import sys

import kernelscope

out, max_overhead, program, *args = sys.argv[1:]
sys.argv = [program, *args]
sys.path.insert(0, program.rsplit("/", 1)[0] if "/" in program else ".")
with kernelscope.profile(out, max_overhead=float(max_overhead)):
    runpy.run_path(program, run_name="__main__")

#!/usr/bin/env bash
# On a lent GPU machine (the device tool runs this from the repository root):
#   bash tests/gpu/run.sh
# installs kernelscope with the CUDA build of torch that the machine's pip finds, runs tests/gpu and the
# overhead comparison, and writes the results under $OUT (or ./gpu-results).
set -uo pipefail
out="${OUT:-gpu-results}"
mkdir -p "$out"
python -m pip install --quiet -e '.[dev]' >"$out/install.log" 2>&1 || python -m pip install --quiet -e . pytest >>"$out/install.log" 2>&1
nvidia-smi >"$out/nvidia-smi.txt" 2>&1
python -m pytest -q tests/gpu -p no:cacheprovider 2>&1 | tee "$out/pytest.txt"
python benchmarks/bench_budget.py --repeats 3 --programs eager,compiled_module,tinyop_lbfgs 2>&1 | tee "$out/bench_budget.txt"
for mode in plain ks; do
  if [ "$mode" = plain ]; then python tests/gpu/programs.py overhead; else python -m kernelscope run --no-view -o "$out/o.ksprof" tests/gpu/programs.py overhead; fi
done 2>&1 | tee "$out/overhead.txt"

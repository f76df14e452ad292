#!/usr/bin/env bash
# On a lent GPU machine (the device tool runs this from the repository root, offline):
#   bash tests/gpu/run.sh            (prepared here first: bash tests/gpu/prepare_wheels.sh; carry .gpu-wheels)
# Uses the machine's Python and its preinstalled torch/Triton/JAX; kernelscope runs from the source tree (no
# build); whatever of kernelscope's dependencies and pytest the machine lacks is installed from .gpu-wheels/
# into .gpu-site/ (pip --no-index: nothing is fetched). Runs tests/gpu and a short overhead comparison within
# ~5 minutes and writes the results under $OUT (or ./gpu-results). The full CPU overhead benchmark
# (benchmarks/bench_budget.py, ~14 minutes) is not run here.
set -uo pipefail
out="${OUT:-gpu-results}"
mkdir -p "$out"
site="$PWD/.gpu-site"
export PYTHONPATH="$PWD/src:$site${PYTHONPATH:+:$PYTHONPATH}"
# modules -> the distribution that provides them (every wheel requirements.txt pulls in)
missing=$(python - <<'PY'
import importlib.util
need = {"numpy": "numpy", "rich": "rich", "markdown_it": "markdown-it-py", "mdurl": "mdurl", "pygments": "pygments",
        "msgspec": "msgspec", "google.protobuf": "protobuf", "pytest": "pytest", "iniconfig": "iniconfig",
        "pluggy": "pluggy", "packaging": "packaging"}
def found(module):
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False
print(" ".join(dist for module, dist in need.items() if not found(module)))
PY
)
{
  python -c "import sys, platform; print('python', sys.version.split()[0], platform.machine())"
  echo "missing before install: ${missing:-nothing}"
} >"$out/environment.txt" 2>&1
if [ -n "$missing" ]; then
  # shellcheck disable=SC2086  # one word per distribution
  python -m pip install --quiet --disable-pip-version-check --no-index --find-links .gpu-wheels --no-deps \
    --target "$site" $missing >"$out/install.log" 2>&1 \
    || echo "could not install $missing from .gpu-wheels (run bash tests/gpu/prepare_wheels.sh here first)" | tee -a "$out/install.log"
fi
python - >>"$out/environment.txt" 2>&1 <<'PY'
import importlib
for name in ("torch", "triton", "jax", "msgspec", "rich", "pytest", "kernelscope"):
    try:
        m = importlib.import_module(name)
        print(name, getattr(m, "__version__", "?"), getattr(m, "__file__", ""))
    except Exception as exc:
        print(name, "unavailable:", type(exc).__name__, exc)
import torch
print("cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
PY
cat "$out/environment.txt"
nvidia-smi >"$out/nvidia-smi.txt" 2>&1
timeout 210 python -m pytest -q tests/gpu -p no:cacheprovider -rs 2>&1 | tee "$out/pytest.txt"
rc=${PIPESTATUS[0]}
# the overhead of complete recording on the GPU program, one run each (plain, then under kernelscope)
if ! python -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "no CUDA device: overhead comparison skipped" | tee "$out/overhead.txt"
  exit "$rc"
fi
{
  for mode in plain ks; do
    start=$(date +%s%N)
    if [ "$mode" = plain ]; then
      timeout 45 python tests/gpu/programs.py overhead
    else
      timeout 45 python -m kernelscope run --no-view -o "$out/overhead.ksprof" tests/gpu/programs.py overhead
    fi
    echo "$mode: exit $? in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  done
} >"$out/overhead.txt" 2>&1
cat "$out/overhead.txt"
exit "$rc"

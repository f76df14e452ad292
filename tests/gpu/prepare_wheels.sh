#!/usr/bin/env bash
# Run HERE, with network, before a GPU machine is lent: downloads the wheels the GPU check needs beyond what the
# lent machine already has (Python 3.12 with torch 2.11, Triton 3.6 and JAX 0.11; no network there) into
# .gpu-wheels/ (ignored by git). The device tool carries it: run(..., carry=[".gpu-wheels"]).
#   bash tests/gpu/prepare_wheels.sh && ls .gpu-wheels
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=.gpu-wheels
mkdir -p "$dest"
# kernelscope's own dependencies (pyproject.toml) and pytest, each with what it needs, as Python 3.12 wheels
PIP_CONFIG_FILE=/dev/null python -m pip download --quiet --disable-pip-version-check --only-binary=:all: \
  --python-version 3.12 --implementation cp --abi cp312 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$dest" -r tests/gpu/requirements.txt
ls "$dest"

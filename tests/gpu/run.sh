#!/usr/bin/env bash
# The GPU check (`make test-gpu`) on a machine with an NVIDIA, AMD or Intel GPU
# (or a Mac): finds a python3 (PYTHON names another), bounds the whole run with
# `timeout` (TACK_GPU_BUDGET seconds, else the vendor's: 540 for NVIDIA), and
# hands over to tests/gpu/gpurun.py, which finds the GPU, installs what the
# machine lacks, builds, runs every step and writes the summary (its essay
# says what each step does).  Arguments go to gpurun.py (--dry-run, --vendor).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
command -v "$py" >/dev/null 2>&1 || {
  echo "make test-gpu: FAILED: no python3 on this machine (set PYTHON to one; Debian: apt-get install python3)" >&2
  exit 2
}
budget=${TACK_GPU_BUDGET:-}
if [ -z "$budget" ]; then
  # the vendor's budget, read before the run (seconds); the run itself keeps to it too
  budget=$(timeout 60 "$py" -c "import sys; sys.path.insert(0, '$root/tests/gpu'); import gpurun; \
g, _ = gpurun.detect(); print(gpurun.BUDGET[g[0].vendor] if g else 60)" 2>/dev/null) || budget=540
fi
export TACK_GPU_BUDGET=$budget
timeout -k 10 "$budget" "$py" "$root/tests/gpu/gpurun.py" "$@"
rc=$?
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
  echo "make test-gpu: FAILED: stopped after ${budget} s (the whole check must fit in its budget)" >&2
fi
exit "$rc"

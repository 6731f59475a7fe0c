#!/usr/bin/env bash
# The GPU check (`make test-gpu`) on a machine with an NVIDIA, AMD or Intel GPU
# (or a Mac): finds a python3 (PYTHON names another), bounds the whole run with
# `timeout` (TACK_GPU_BUDGET seconds; gpurun.py keeps to the vendor's budget, 540
# s for NVIDIA, itself), and hands over to tests/gpu/gpurun.py, which finds the GPU, installs what the
# machine lacks, builds, runs every step and writes the summary (its essay
# says what each step does).  Arguments go to gpurun.py (--dry-run, --vendor).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
command -v "$py" >/dev/null 2>&1 || {
  echo "make test-gpu: FAILED: no python3 on this machine (set PYTHON to one; Debian: apt-get install python3)" >&2
  exit 2
}
# the run keeps to its vendor's budget itself (gpurun.py: 540 s on NVIDIA); TACK_GPU_BUDGET
# sets one, which `timeout` enforces from here too; else 900 s is the backstop
budget=${TACK_GPU_BUDGET:-900}
timeout -k 10 "$budget" "$py" "$root/tests/gpu/gpurun.py" "$@"
rc=$?
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
  echo "make test-gpu: FAILED: stopped after ${TACK_GPU_BUDGET:-its budget of} s (the whole check must fit in its budget)" >&2
fi
exit "$rc"

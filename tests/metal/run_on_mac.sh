#!/usr/bin/env bash
# What only a Mac can show about the Metal backend, in one command:
#
#   bash tests/metal/run_on_mac.sh
#
# on a Mac with a Metal GPU (Apple silicon, or an Intel Mac with a Metal
# GPU), Xcode's command-line tools (clang, for the C core and the CPU
# backend) and either uv or a python3 with NumPy.  Nothing here has been run
# on Apple hardware by the project yet; docs/backends.md ("Metal (runtime)")
# lists what this checks:
#
#   1. the C core builds on macOS with the Metal backend, which reaches the
#      Objective-C runtime and Metal.framework by dlopen (no Objective-C
#      compiler), and the C tests build;
#   2. test_metal_device: Metal compiles a hand-written kernel that follows
#      the backend's argument convention, the kernel computes with the
#      buffers and words it was given, a check the GPU fails is reported at
#      the next synchronization, and a source Metal rejects is a compile
#      error with Metal's message;
#   3. the interop rules of the spec through Python (tests/metal/interop_on_mac.py):
#      kDLCPU export shared with NumPy, from_dlpack copy=True and the refused
#      copy=False, array_from_ptr of a PyObjC MTLBuffer;
#   4. the validator, `docs/examples/validate.py --arch metal`, which needs
#      the msl dialect (kernels written in Python, compiled to MSL).
#
# Each step's log goes to build/metal/logs; a table of the steps ends the
# run, and the exit status is non-zero when any step failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build="$root/build/metal"
logs="$build/logs"
mkdir -p "$logs"
cd "$root" || exit 1

if [ "$(uname -s)" != Darwin ]; then
  echo "run_on_mac.sh: this is $(uname -s), not macOS: the Metal checks need a Mac" >&2
  exit 2
fi

results=()
step() { # step NAME COMMAND...
  local name=$1
  shift
  echo "== $name"
  if "$@" >"$logs/$name.log" 2>&1; then
    results+=("ok      $name")
  else
    results+=("FAILED  $name (see $logs/$name.log)")
    tail -20 "$logs/$name.log"
  fi
}

step build cmake -S . -B "$build/c" -DTACK_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Debug
step compile cmake --build "$build/c" -j4
step test_metal_device "$build/c/test_metal_device"
step test_runtime "$build/c/test_runtime"

if command -v uv >/dev/null; then
  py=(uv run python)
  step python_env uv sync
else
  py=(python3)
  step python_env python3 -m pip install -e .
fi
step interop "${py[@]}" tests/metal/interop_on_mac.py
step validate "${py[@]}" docs/examples/validate.py --arch metal

echo
echo "Metal checks on $(sw_vers -productName 2>/dev/null) $(sw_vers -productVersion 2>/dev/null), $(uname -m):"
status=0
for r in "${results[@]}"; do
  echo "  $r"
  case $r in FAILED*) status=1 ;; esac
done
exit $status

#!/usr/bin/env bash
# What only a Mac can show about the Metal backend, in one command:
#
#   bash tests/metal/run_on_mac.sh            (or: make test-gpu, on the Mac)
#
# on a Mac with a Metal GPU (Apple silicon, or an Intel Mac with a Metal GPU)
# and Xcode's command-line tools (clang, for the C core and the CPU backend).
# Nothing here has been run on Apple hardware by the project yet;
# docs/backends.md ("Metal (runtime)") lists what this checks.
#
# The command-line tools ship Python 3.9 and no cmake, and Tack needs Python
# >= 3.10: this script finds a Python >= 3.10 (PYTHON names one; else
# python3.13 ... python3.10, Homebrew's, python.org's, uv's), or says
# exactly what to install and stops.  Then tests/gpu/gpurun.py --vendor apple
# does the rest, as on every other vendor's GPU: a venv (build/gpu/venv) with
# what it lacks from PyPI (cmake, NumPy, pytest ...), the C core and the C
# tests built (test_metal_device: Metal compiles and runs a hand-written
# kernel, a failed check is reported at the next synchronization, a source
# Metal rejects is a compile error), the language suite on device="metal"
# against the CPU, the interop rules through Python
# (tests/metal/interop_on_mac.py), the validator with the msl dialect, a
# memory fault in a child process and the benchmarks; a table of the steps
# at the end, logs and summary.json in build/gpu/logs, and a non-zero exit
# status when any step failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)

if [ "$(uname -s)" != Darwin ] && [ "${TACK_GPU_UNAME:-}" != Darwin ]; then
  echo "run_on_mac.sh: this is $(uname -s), not macOS: the Metal checks need a Mac" >&2
  exit 2
fi

new_enough() { # a python that is 3.10 or later
  "$1" -c 'import sys; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1
}
py=
for c in ${PYTHON:-} python3.13 python3.12 python3.11 python3.10 /opt/homebrew/bin/python3 /usr/local/bin/python3 \
         /Library/Frameworks/Python.framework/Versions/Current/bin/python3 python3; do
  if command -v "$c" >/dev/null 2>&1 && new_enough "$c"; then
    py=$(command -v "$c")
    break
  fi
done
if [ -z "$py" ] && command -v uv >/dev/null 2>&1; then
  # uv brings its own Python builds: one it already has, else it installs 3.12
  py=$(uv python find '>=3.10' 2>/dev/null) || { uv python install 3.12 >/dev/null 2>&1 && py=$(uv python find 3.12); }
fi
if [ -z "$py" ] || ! new_enough "$py"; then
  have=$(python3 --version 2>/dev/null || echo "no python3")
  cat >&2 <<MSG
run_on_mac.sh: Tack needs Python 3.10 or later, and this Mac has $have.
Install one of these, then run this script again:
  brew install python@3.12                      (Homebrew)
  https://www.python.org/downloads/macos/       (python.org's installer)
  curl -LsSf https://astral.sh/uv/install.sh | sh && uv python install 3.12
or point PYTHON at a Python >= 3.10 you already have: PYTHON=/path/to/python3 bash $0
MSG
  exit 2
fi
echo "== Python: $py ($("$py" --version 2>&1))"
exec "$py" "$root/tests/gpu/gpurun.py" --vendor apple "$@"

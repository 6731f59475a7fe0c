#!/usr/bin/env bash
# The GPU check, in one script that fits in 10 minutes (`make test-gpu`):
# build libtack, the C tests and the extension; run the C tests (the CUDA
# codegen test compiles PTX), the CUDA Python tests on the GPU, the PyTorch /
# CuPy exchange tests when those are installed, and the bandwidth and
# launch-overhead micro-benchmarks.  Works offline: it uses a Python that
# already has NumPy and pytest ($PYTHON, the project's .venv, a devbuild
# venv, or python3).  Logs and bench.json go to $OUT (else build/gpu).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/build/gpu}
mkdir -p "$out"
build=$root/build/gpu
status=0

py=${PYTHON:-}
if [ -z "$py" ]; then
  for c in "$root/.venv/bin/python" "$root"/build-*/venv/bin/python python3; do
    if [ -x "$(command -v "$c" 2>/dev/null)" ] && "$c" -c "import numpy, pytest" 2>/dev/null; then py=$c; break; fi
  done
fi
[ -n "$py" ] || { echo "no Python with numpy and pytest; set PYTHON" >&2; exit 2; }
echo "== python: $py"
command -v nvidia-smi >/dev/null && nvidia-smi -L

echo "== build"
cmake -S . -B "$build" -DTACK_BUILD_PYTHON=ON -DTACK_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Release \
  -DPython_EXECUTABLE="$(command -v "$py")" >"$out/cmake.log" 2>&1 || { cat "$out/cmake.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" >>"$out/cmake.log" 2>&1 || { tail -50 "$out/cmake.log"; exit 1; }
rm -rf "$build/pkg" && mkdir -p "$build/pkg"
cp -rs "$root/python/tack" "$build/pkg/tack"
cp "$build"/_core*.so "$build/pkg/tack/"
export PYTHONPATH="$build/pkg${PYTHONPATH:+:$PYTHONPATH}"
export TACK_CACHE_DIR="$build/kernel-cache"

echo "== devices"
"$py" -c "import tack; print(tack.devices())" | tee "$out/devices.txt"
grep -q cuda "$out/devices.txt" || { echo "no CUDA device visible to Tack" >&2; status=1; }

echo "== C tests"
timeout 180 ctest --test-dir "$build" --output-on-failure 2>&1 | tee "$out/ctest.log" | tail -15 || status=1
grep -q "100% tests passed" "$out/ctest.log" || status=1

echo "== Python: CUDA"
timeout 240 "$py" -m pytest -q -p no:cacheprovider -rs tests/python/test_cuda.py -k "not language_suite" \
  2>&1 | tee "$out/pytest-cuda.log" | tail -25
[ "${PIPESTATUS[0]}" = 0 ] || status=1
for t in tests/python/test_interop_torch.py; do
  [ -f "$t" ] || continue
  echo "== Python: $t"
  timeout 120 "$py" -m pytest -q -p no:cacheprovider "$t" 2>&1 | tail -5
done

echo "== benchmarks"
timeout 120 "$py" tests/gpu/bench.py --json "$out/bench.json" 2>&1 | tee "$out/bench.log" || status=1

echo "== done: status $status (logs in $out)"
exit $status

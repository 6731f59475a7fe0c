#!/usr/bin/env bash
# The GPU check (`make test-gpu`), unattended, on a bare machine with an
# NVIDIA GPU and driver: Debian/Ubuntu-like, python3 present, maybe no CUDA
# toolkit and no network.  It uses only what travels with the repository and
# what the machine already has, and in order:
#
#   1. finds a GPU through the driver (libcuda.so.1: cuInit, a device) and
#      stops at once, with the reason, when there is none;
#   2. makes its own Python environment in build/gpu/venv (not the repo's
#      .venv): a venv over the packages the chosen python3 already sees
#      (NumPy and pytest needed; PyTorch and CuPy used when there);
#   3. builds libtack, the C tests and the extension with CMake into
#      build/gpu, and installs the package into that venv as links;
#   4. finds NVRTC (the toolkit's, or the pip wheel's nvidia/*/lib) for
#      TACK_NVRTC_PATH when the soname alone does not find it;
#   5. runs the C tests, the CUDA Python tests on the GPU (test_cuda.py, with
#      the DLPack exchange with PyTorch and CuPy when they import), the
#      PyTorch interop tests, and the benchmarks (tests/gpu/bench.py):
#      bandwidth per kernel as a fraction of the device's peak (memory clock
#      x bus width, from cuDeviceGetAttribute) and of its copy bandwidth,
#      launch overhead, and the same kernels in PyTorch and CuPy.
#
# The whole run is bounded by `timeout` (TACK_GPU_BUDGET seconds, 540 = 9
# minutes) and each step by its own; the exit status is non-zero when any
# step failed, with a table of the steps at the end.  Logs and bench.json go
# to $OUT when set (else build/gpu/logs).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
budget=${TACK_GPU_BUDGET:-540}

if [ -z "${TACK_GPU_TIMED:-}" ]; then
  export TACK_GPU_TIMED=1
  timeout -k 10 "$budget" bash "$0" "$@"
  rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "make test-gpu: FAILED: stopped after ${budget} s (the whole check must fit in its budget)" >&2
  fi
  exit "$rc"
fi

cd "$root"
build=$root/build/gpu
out=${OUT:-$build/logs}
mkdir -p "$out"
status=0
steps=()
step() { # name, status
  steps+=("$(printf '%-28s %s' "$1" "$2")")
  [ "$2" = ok ] || [ "$2" = skipped ] || status=1
}
die() {
  echo "make test-gpu: FAILED: $*" >&2
  exit 2
}

# 1. a GPU, through the driver alone (seconds, before any build)
host_py=${PYTHON:-python3}
command -v "$host_py" >/dev/null 2>&1 || die "no python3 on this machine (set PYTHON to one)"
gpu=$("$host_py" - <<'EOF' 2>&1
import ctypes
try:
    cu = ctypes.CDLL("libcuda.so.1")
except OSError as e:
    raise SystemExit(f"no NVIDIA driver: libcuda.so.1 could not be loaded ({e})")
r = cu.cuInit(0)
if r != 0:
    raise SystemExit(f"the NVIDIA driver is there but cuInit failed (CUresult {r}): no usable GPU")
n = ctypes.c_int(0)
if cu.cuDeviceGetCount(ctypes.byref(n)) != 0 or n.value == 0:
    raise SystemExit("the NVIDIA driver reports no GPU")
name = ctypes.create_string_buffer(256)
cu.cuDeviceGetName(name, 256, 0)
print(f"{n.value} GPU(s); device 0: {name.value.decode()}")
EOF
) || die "no NVIDIA GPU here -- $gpu. Run make test-gpu on a machine with an NVIDIA GPU and its driver."
echo "== GPU: $gpu"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

# 2. our own environment: a venv over what the host's python already has
echo "== environment: $build/venv"
venv=$build/venv
if [ ! -x "$venv/bin/python" ]; then
  "$host_py" -m venv --without-pip "$venv" >"$out/venv.log" 2>&1 || {
    cat "$out/venv.log"; die "could not make a venv with $host_py (Debian: apt-get install python3-venv)"; }
  # the host python's own site-packages (it may itself be a venv, as on
  # machines whose python3 carries PyTorch) are visible through a .pth file
  "$host_py" -c "import site, sys; print('\n'.join(p for p in site.getsitepackages() + [site.getusersitepackages()]))" \
    >"$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/host-packages.pth"
fi
py=$venv/bin/python
missing=$("$py" -c "
import importlib.util as u
print(' '.join(m for m in ('numpy', 'pytest') if u.find_spec(m) is None))")
[ -z "$missing" ] || die "the Python at $host_py lacks $missing (offline, nothing can be installed: use a python3 that has them, PYTHON=...)"
for m in torch cupy; do
  "$py" -c "import $m" >/dev/null 2>&1 && echo "   $m: $("$py" -c "import $m; print($m.__version__)")" || echo "   $m: not installed (its comparisons are skipped)"
done

# 3. build
echo "== build (build/gpu)"
for tool in cmake cc; do
  command -v "$tool" >/dev/null 2>&1 || die "no $tool on this machine (Debian: apt-get install cmake build-essential)"
done
if cmake -S . -B "$build" -DTACK_BUILD_PYTHON=ON -DTACK_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Release \
     -DPython_EXECUTABLE="$py" >"$out/cmake.log" 2>&1 &&
   timeout 240 cmake --build "$build" -j"$(nproc)" >>"$out/cmake.log" 2>&1; then
  step build ok
else
  tail -40 "$out/cmake.log"
  step build FAILED
  die "the build failed (log: $out/cmake.log; the extension needs Python's headers: Debian python3-dev)"
fi
site=$("$py" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
rm -rf "$site/tack"
mkdir -p "$site/tack"
cp -rs "$root/python/tack/." "$site/tack/"
rm -f "$site/tack"/_core*.so  # links to a build in the checkout, if any: never copied over
cp "$build"/_core*.so "$site/tack/"
mkdir -p "$site/tack/lib" && cp -P "$build"/libtack.so* "$site/tack/lib/"  # what _core links, as in the wheel
export TACK_CACHE_DIR="$build/kernel-cache"

# 4. NVRTC: the soname, else a pip wheel's copy (nvidia-cuda-nvrtc) on the path
if [ -z "${TACK_NVRTC_PATH:-}" ] && [ "$("$py" -c "from tack import _core; print(_core._nvrtc_version())" 2>/dev/null)" = 0 ]; then
  lib=$("$py" -c "
import glob, os, sys
for p in sys.path:
    for g in sorted(glob.glob(os.path.join(p, 'nvidia', '**', 'libnvrtc.so*'), recursive=True), reverse=True):
        if 'builtins' not in g: print(g); raise SystemExit
")
  [ -n "$lib" ] && export TACK_NVRTC_PATH=$lib
fi
echo "== NVRTC: $("$py" -c "from tack import _core; print(_core._nvrtc_version())") ${TACK_NVRTC_PATH:-}"

echo "== devices"
if "$py" -c "import tack; d = tack.devices(); print(d); assert any(x.startswith('cuda') for x in d)" 2>&1 | tee "$out/devices.txt"; then
  step "Tack sees the GPU" ok
else
  step "Tack sees the GPU" FAILED
  "$py" -c "import tack; tack.zeros(1, device='cuda')" 2>&1 | tail -3
fi

# 5. tests and figures
echo "== C tests"
if timeout 150 ctest --test-dir "$build" --output-on-failure -j4 >"$out/ctest.log" 2>&1; then step "C tests" ok; else step "C tests" FAILED; fi
tail -4 "$out/ctest.log"

echo "== Python: CUDA on the GPU (test_cuda.py; DLPack with PyTorch / CuPy)"
timeout 200 "$py" -m pytest -q -p no:cacheprovider -rs tests/python/test_cuda.py -k "not language_suite" \
  >"$out/pytest-cuda.log" 2>&1
rc=$?
tail -25 "$out/pytest-cuda.log"
[ "$rc" = 0 ] && step "CUDA tests" ok || step "CUDA tests" FAILED

echo "== Python: PyTorch interop"
if "$py" -c "import torch" >/dev/null 2>&1; then
  timeout 120 "$py" -m pytest -q -p no:cacheprovider tests/python/test_interop_torch.py >"$out/pytest-torch.log" 2>&1
  rc=$?
  tail -5 "$out/pytest-torch.log"
  [ "$rc" = 0 ] && step "PyTorch interop" ok || step "PyTorch interop" FAILED
else
  step "PyTorch interop" skipped
fi

echo "== benchmarks"
timeout 150 "$py" tests/gpu/bench.py --json "$out/bench.json" 2>&1 | tee "$out/bench.log"
[ "${PIPESTATUS[0]}" = 0 ] && step "benchmarks" ok || step "benchmarks" FAILED

echo "== summary (logs in $out)"
printf '  %s\n' "${steps[@]}"
[ "$status" = 0 ] && echo "make test-gpu: passed" || echo "make test-gpu: FAILED" >&2
exit $status

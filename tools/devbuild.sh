#!/usr/bin/env bash
# Build the extension into a private directory and run Python with it, without
# touching the shared editable environment -- for several people (or agents)
# working in one checkout at once.
#
#   tools/devbuild.sh NAME [EXTRAS...]      build into build-NAME/, make build-NAME/venv
#   build-NAME/run python -m pytest tests/python/test_x.py
#
# build-NAME/pkg/tack mirrors python/tack with symlinks plus the built _core.
set -euo pipefail
name=${1:?usage: tools/devbuild.sh NAME [EXTRAS...]}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build-$name
export UV_PYTHON_DOWNLOADS=never
if [ ! -x "$out/venv/bin/python" ]; then
  uv venv -q --python python3 "$out/venv"
fi
pkgs=(numpy pytest hypothesis)
for extra in "$@"; do
  case $extra in
    interop) pkgs+=("vtk>=9.7.1") ;;
    *) pkgs+=("$extra") ;;
  esac
done
VIRTUAL_ENV=$out/venv uv pip install -q "${pkgs[@]}"
cmake -S "$root" -B "$out/cmake" -DTACK_BUILD_PYTHON=ON -DTACK_BUILD_TESTS=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython_EXECUTABLE="$out/venv/bin/python" >/dev/null
cmake --build "$out/cmake" -j"$(nproc)" 2>&1 | grep -E "error|warning|Error" || true
test -f "$out"/cmake/_core*.so || { echo "build failed" >&2; exit 1; }
rm -rf "$out/pkg" && mkdir -p "$out/pkg"
cp -rs "$root/python/tack" "$out/pkg/tack"
cp "$out"/cmake/_core*.so "$out/pkg/tack/"
mkdir -p "$out/pkg/tack/lib" && cp -P "$out"/cmake/libtack.so* "$out/pkg/tack/lib/"  # what _core links
cat > "$out/run" <<RUN
#!/usr/bin/env bash
# Run a command with this private build of tack first on the path.
PYTHONPATH="$out/pkg\${PYTHONPATH:+:\$PYTHONPATH}" PATH="$out/venv/bin:\$PATH" exec "\$@"
RUN
chmod +x "$out/run"
echo "built $out; run: $out/run python ..."

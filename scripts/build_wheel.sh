#!/usr/bin/env bash
# Builds the Python package's wheel offline: distribution onnxstream-rewrite (the name
# onnxstream on the public index belongs to another project), import name onnxstream.
#
#   scripts/build_wheel.sh [--build-dir DIR] [--out DIR]
#
# DIR (default build-wheel/) is a CMake build folder: configured here (Release, no tests)
# when it has no CMakeCache.txt, else used as it is (ctest's python_package passes build/);
# only the C API's library (libonnxstream-c.so) is built in it. The wheel goes to OUT
# (default dist/) and its path is the last line printed. Then:
#   /usr/bin/python3 -m pip install dist/onnxstream_rewrite-*.whl
# Needs Debian's python3-pip, python3-setuptools and python3-wheel (scripts/install_deps.sh);
# nothing is downloaded.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build_dir="$repo/build-wheel"
out="$repo/dist"
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
case "$build_dir" in /*) ;; *) build_dir="$PWD/$build_dir" ;; esac
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac

if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S "$repo" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DONNXSTREAM_BUILD_TESTS=OFF \
    -DONNXSTREAM_BUILD_FUZZ=OFF -DONNXSTREAM_BUILD_BENCH=OFF >/dev/null
fi
if grep -q '^ONNXSTREAM_SANITIZE:BOOL=ON' "$build_dir/CMakeCache.txt"; then
  echo "build_wheel: $build_dir is a sanitizer build; its library cannot load into an ordinary Python" >&2
  exit 2
fi
cmake --build "$build_dir" -j"$(nproc 2>/dev/null || echo 2)" --target onnxstream_c

version=$(sed -n 's/^project(onnxstream VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
# A copy of python/ with the library inside the package: the source tree stays clean.
stage="$build_dir/python-wheel"
rm -rf "$stage"
mkdir -p "$stage" "$out"
cp -r "$repo/python/." "$stage/"
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
cp -L "$build_dir/libonnxstream-c.so.0" "$stage/onnxstream/libonnxstream-c.so.0"
strip --strip-unneeded "$stage/onnxstream/libonnxstream-c.so.0"
# The functions are made at import; the stub shows them to editors and type checkers.
ONNXSTREAM_C_LIBRARY="$stage/onnxstream/libonnxstream-c.so.0" PYTHONPATH="$stage" PYTHONDONTWRITEBYTECODE=1 \
  /usr/bin/python3 "$repo/scripts/make_python_stub.py" "$stage/onnxstream/__init__.pyi"
rm -f "$out"/onnxstream_rewrite-"$version"-*.whl
ONNXSTREAM_WHEEL_VERSION="$version" /usr/bin/python3 -m pip wheel --no-deps --no-build-isolation --no-index \
  --disable-pip-version-check --quiet -w "$out" "$stage"
ls "$out"/onnxstream_rewrite-"$version"-*.whl

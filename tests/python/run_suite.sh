#!/usr/bin/env bash
# ctest's python_package: the Python package as a user gets it.
#   tests/python/run_suite.sh BUILD_DIR [PYTEST_ARGS...]
# 1. scripts/build_wheel.sh builds the wheel from BUILD_DIR's libonnxstream-c.so;
# 2. a venv WITHOUT the system's site-packages gets the wheel: `import onnxstream` works
#    with the standard library alone and loads neither onnx nor numpy;
# 3. a venv WITH them (python-onnx, numpy and pytest, the references) gets the wheel too,
#    and runs tests/python/test_*.py against the installed package.
# Needs ONNXSTREAM_BIN and ONNXSTREAM_FIXTURES as the e2e suites do (ctest sets them).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
build_dir="$(cd "$1" && pwd)"
shift
python=/usr/bin/python3
venvs="$build_dir/python-venvs"
rm -rf "$venvs"

started=$(date +%s)
wheel=$("$repo/scripts/build_wheel.sh" --build-dir "$build_dir" --out "$build_dir/python-dist" | tail -n 1)
echo "wheel: $wheel ($(stat -c %s "$wheel") bytes, built in $(( $(date +%s) - started )) s)"

install() {
  "$python" -m venv --without-pip "$@"
  "$python" -m pip --python "${@: -1}/bin/python" install --no-index --no-deps --quiet \
    --disable-pip-version-check "$wheel"
}

install "$venvs/bare"
(cd / && "$venvs/bare/bin/python" -c '
import sys
import onnxstream
assert onnxstream.__file__.startswith(sys.prefix), onnxstream.__file__
for name in ("onnx", "numpy"):
    assert name not in sys.modules, name + " was imported"
print("bare venv: onnxstream", onnxstream.__version__, "from", onnxstream.__file__)
')

install --system-site-packages "$venvs/suite"
cd "$repo/tests/python"
exec "$venvs/suite/bin/python" -m pytest -q -p no:cacheprovider "$@" .

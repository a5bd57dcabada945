#!/usr/bin/env bash
# The Windows build, tested here under wine: cross-compiles build-windows/onnxstream.exe
# (cmake/mingw-w64-x86_64.cmake), runs its unit tests under wine, runs a chosen set of
# end-to-end suites against it (ONNXSTREAM_WRAPPER=wine), and checks that its outputs are
# byte-identical to the Linux build's (build/onnxstream, made by test.sh first).
# Skips with one line when mingw-w64 or wine is missing (scripts/install_deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

echo "== Windows build under wine"
if ! command -v x86_64-w64-mingw32-g++-posix >/dev/null 2>&1 || ! command -v wine >/dev/null 2>&1; then
  echo "   SKIPPED: x86_64-w64-mingw32-g++-posix or wine is not installed (apt-get install g++-mingw-w64-x86-64-posix wine wine64)"
  exit 0
fi
start=$SECONDS
export WINEDEBUG=-all
# A prefix of our own, made once (the first start takes a few seconds).
export WINEPREFIX="$PWD/build-windows/wine-prefix"
cmake -S . -B build-windows -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake -DCMAKE_BUILD_TYPE=Release \
  -DONNXSTREAM_WERROR=ON -DONNXSTREAM_E2E=OFF -DONNXSTREAM_BUILD_FUZZ=OFF >/dev/null
cmake --build build-windows -j"$jobs"
built=$SECONDS

echo "   unit tests under wine"
wine build-windows/tests/onnxstream_unit_tests.exe

echo "   end-to-end suites against onnxstream.exe under wine"
# Suites that check Linux-only behaviour (signals, strace, /proc, modes, symbolic links)
# mark those tests skipped for the Windows binary (refcheck.windows_binary()).
(cd tests/e2e && ONNXSTREAM_BIN="$PWD/../../build-windows/onnxstream.exe" ONNXSTREAM_WRAPPER=wine \
  ONNXSTREAM_FIXTURES="${ONNXSTREAM_FIXTURES:-$PWD/../../build/fixtures}" ONNXSTREAM_LINUX_BIN="$PWD/../../build/onnxstream" \
  PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  test_windows_identical.py test_merge.py test_split.py test_repack.py test_verify.py test_bad_inputs.py)
echo "   Windows stage: $((built - start)) s building, $((SECONDS - built)) s testing"

#!/usr/bin/env bash
# Checks that scripts/configure_build.sh (what demo.sh and test.sh configure build/ with)
# registers every test whatever configured the folder before: a scratch folder is configured
# as an older demo.sh did (Release, ONNXSTREAM_E2E=OFF, and a sanitizer build on top), then
# by configure_build.sh, and ctest must list one e2e test per tests/e2e/test_*.py.
# Configure only: nothing is compiled. Run by ctest as `build_options`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

cmake -S "$repo" -B "$scratch" -DCMAKE_BUILD_TYPE=Release -DONNXSTREAM_E2E=OFF -DONNXSTREAM_SANITIZE=ON >/dev/null
before=$(ctest --test-dir "$scratch" -N | sed -n 's/^Total Tests: //p')
"$repo/scripts/configure_build.sh" "$scratch" >/dev/null
listed=$(ctest --test-dir "$scratch" -N)
after=$(sed -n 's/^Total Tests: //p' <<<"$listed")
e2e=$(grep -c ' e2e\.test_' <<<"$listed" || true)
e2e_files=$(find "$repo/tests/e2e" -maxdepth 1 -name 'test_*.py' | wc -l)
sanitize=$(sed -n 's/^ONNXSTREAM_SANITIZE:BOOL=//p' "$scratch/CMakeCache.txt")
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$scratch/CMakeCache.txt")
echo "tests registered: $before after the old demo's configure, $after after configure_build.sh" \
     "($e2e e2e tests for $e2e_files files; sanitize=$sanitize, build type $build_type)"
if [ "$e2e" -ne "$e2e_files" ] || [ "$after" -le "$before" ] || [ "$sanitize" != OFF ] ||
   [ "$build_type" != RelWithDebInfo ]; then
  echo "FAIL: configure_build.sh left an option of the earlier configure in force" >&2
  exit 1
fi

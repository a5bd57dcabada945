#!/usr/bin/env bash
# Configures a build folder the way scripts/demo.sh and scripts/test.sh both use build/:
#   configure_build.sh DIR [CMAKE_ARGS...]
# Every option either script relies on is given here on every run: CMake keeps a cached
# option until it is given again, so a script that left one out silently inherited the
# other's (the demo's ONNXSTREAM_E2E=OFF once made test.sh register 6 tests instead of 49 and
# report success). scripts/check_build_options.sh holds this to account.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build_dir="$1"
shift
case "$build_dir" in /*) ;; *) build_dir="$PWD/$build_dir" ;; esac
exec cmake -S "$repo" -B "$build_dir" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DONNXSTREAM_WERROR=ON \
  -DCMAKE_UNITY_BUILD=OFF \
  -DONNXSTREAM_SANITIZE=OFF \
  -DONNXSTREAM_BUILD_TESTS=ON \
  -DONNXSTREAM_BUILD_FUZZ=ON \
  -DONNXSTREAM_BUILD_BENCH=OFF \
  -DONNXSTREAM_IO_URING=ON \
  -DONNXSTREAM_OPENCV=ON \
  -DONNXSTREAM_E2E=ON \
  "-DONNXSTREAM_FIXTURES=$build_dir/fixtures" \
  "$@"

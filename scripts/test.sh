#!/usr/bin/env bash
# Sets everything up on a fresh Debian machine and runs every test:
#   1. Debian packages and the npm package for ONNX Runtime (scripts/install_deps.sh, setup_e2e.sh)
#   2. every C++ source's layout (clang-format), a build with warnings as errors, the
#      fixtures (made by python3-onnx and torch), and ctest: unit tests, fuzz-corpus
#      replays, end-to-end tests against the references
#   3. the unit tests, fuzz replays and the hostile-input end-to-end suites (corrupt
#      catalogue, faults, bad inputs) again under AddressSanitizer + UndefinedBehaviorSanitizer,
#      built with clang (the rest with GCC)
#   4. the Windows build (mingw-w64, scripts/test_windows.sh): its unit tests and a chosen
#      set of end-to-end suites under wine, and its outputs compared with Linux's
#
# Options: --no-sanitizers (skip stage 3), --no-windows (skip stage 4), --windows-full (stage
# 4 runs the whole merge/split/repack/verify/bad-input suites under wine, not a subset),
# --large (also the multi-GB tests: slow, needs ~10 GB of disk). Build folders: build/,
# build-asan/, build-windows/.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitizers=1
windows=1
windows_args=()
for arg in "$@"; do
  case "$arg" in
    --no-sanitizers) sanitizers=0 ;;
    --no-windows) windows=0 ;;
    --windows-full) windows_args=(--full) ;;
    --large) export ONNXSTREAM_LARGE=1 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "unknown option: $arg" >&2; exit 2 ;;
  esac
done
jobs=$(nproc 2>/dev/null || echo 2)

echo "== dependencies"
scripts/install_deps.sh
scripts/setup_e2e.sh
scripts/setup_models.sh
scripts/setup_gui_tests.sh

echo "== layout (scripts/format.sh --check --all)"
scripts/format.sh --check --all

echo "== build (warnings are errors)"
scripts/configure_build.sh build
cmake --build build -j"$jobs"

echo "== fixtures"
/usr/bin/python3 scripts/make_fixtures.py build/fixtures
# Made here, not by the tests: two ctest jobs (the io_uring and portable runs of
# test_passes) would otherwise both write them at once.
/usr/bin/python3 scripts/make_pass_fixtures.py build/fixtures/passes
/usr/bin/python3 scripts/make_caffe_fixtures.py build/fixtures/caffe

echo "== tests"
ctest --test-dir build --output-on-failure -j"$jobs"

if [ "$sanitizers" = 1 ]; then
  echo "== unit tests, the C API, fuzz replays and the hostile-input end-to-end suites under ASan + UBSan"
  # The corrupt-input catalogue and the fault tests drive the sanitized binary: a memory
  # error on any hostile input aborts it, and the test sees a signal instead of an exit.
  # test_security (the red team's suites) too, less two cases only the sanitizers' runtime
  # breaks (refcheck.sanitized; docs/ci.md says why).
  # allocator_may_return_null: the out-of-memory tests expect a clean error, not an abort.
  # A unity build: the library's sources compile in batches, each header parsed once a batch
  # (the build/ folder above stays one file a unit, so a missing include still fails there).
  # Built with clang, the build above with GCC: each compiler's warnings fail CI (-Werror),
  # and clang's UBSan checks float-to-int overflow, which GCC's leaves out. The fuzz targets
  # link the replay main (libFuzzer would compile the library a second time). A build-asan/
  # configured with another compiler is made again.
  if [ -f build-asan/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:FILEPATH=.*clang++' build-asan/CMakeCache.txt; then
    rm -rf build-asan
  fi
  CC=clang CXX=clang++ cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DONNXSTREAM_WERROR=ON -DONNXSTREAM_SANITIZE=ON \
    -DONNXSTREAM_E2E=ON -DONNXSTREAM_FIXTURES="$PWD/build/fixtures" -DCMAKE_UNITY_BUILD=ON -DONNXSTREAM_FUZZ_REPLAY_ONLY=ON
  # Only what the stage runs: the shared library is a large -O0 instrumented link that
  # nothing below loads.
  cmake --build build-asan -j"$jobs" --target onnxstream_cli onnxstream_unit_tests \
    onnxstream_capi_test onnxstream_capi_internal_test fuzz_tokenizer fuzz_rewrite fuzz_external_data fuzz_model_ops \
    fuzz_graph
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" \
      -R '^(unit|capi(_internal)?|fuzz\..*|e2e\.test_corrupt(\.[0-9]+of[0-9]+)?|e2e\.test_faults|e2e\.test_bad_inputs|e2e\.test_security)$'
fi

if [ "$windows" = 1 ]; then
  scripts/test_windows.sh "${windows_args[@]}"
fi

#!/usr/bin/env bash
# Runs a real libFuzzer session on one fuzz target.
#
#   scripts/fuzz.sh TARGET [SECONDS] [libFuzzer flags...]
#   TARGET: tokenizer | rewrite | external_data | model_ops | graph      SECONDS: default 300
#
# Builds the targets with clang, libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer
# in build-fuzz-clang/ (ONNXSTREAM_FUZZ_BUILD to change it), then fuzzes for SECONDS.
# The session's growing corpus lives in the build folder; it starts from the committed
# seeds (fuzz/corpus/TARGET/) and, for the targets that read models, the corrupt-input
# catalogue (tests/data/corrupt/). Crashes, timeouts and out-of-memory inputs are written
# into fuzz/corpus/TARGET/ (crash-*, timeout-*, oom-*), where the ctest replay picks them
# up: fix the bug, keep the file (rename it to say what it found).
#
# Environment: ONNXSTREAM_FUZZ_JOBS=N runs N fuzzing processes in parallel (default 1);
# ONNXSTREAM_FUZZ_CMAKE_ARGS adds configure arguments; ONNXSTREAM_FUZZ_MINIMIZE=1 merges
# the inputs that add coverage back into fuzz/corpus/TARGET/ afterwards.
set -euo pipefail

usage() {
    echo "usage: $0 TARGET [SECONDS] [libFuzzer flags...]  (TARGET: tokenizer rewrite external_data model_ops graph)" >&2
    exit 2
}
[[ $# -ge 1 ]] || usage
target=$1
shift
case "$target" in tokenizer | rewrite | external_data | model_ops | graph) ;; *) usage ;; esac
seconds=300
if [[ $# -ge 1 && $1 =~ ^[0-9]+$ ]]; then
    seconds=$1
    shift
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${ONNXSTREAM_FUZZ_BUILD:-$repo/build-fuzz-clang}
jobs=${ONNXSTREAM_FUZZ_JOBS:-1}
committed=$repo/fuzz/corpus/$target
catalogue=$repo/tests/data/corrupt
work=$build/corpus/$target

command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ is not installed (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }

# shellcheck disable=SC2086
cmake -S "$repo" -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DONNXSTREAM_BUILD_FUZZ=ON -DONNXSTREAM_SANITIZE=ON -DONNXSTREAM_WERROR=ON \
    -DONNXSTREAM_BUILD_TESTS=OFF ${ONNXSTREAM_FUZZ_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" --target "fuzz_$target" -j "${ONNXSTREAM_BUILD_JOBS:-2}"
if ! grep -q '^ONNXSTREAM_HAVE_LIBFUZZER:INTERNAL=1' "$build/CMakeCache.txt"; then
    echo "fuzz.sh: libFuzzer does not work with this clang (install libclang-rt-14-dev)" >&2
    exit 1
fi

mkdir -p "$work" "$committed"
corpora=("$work" "$committed")
case "$target" in tokenizer | rewrite | model_ops | graph) [[ -d $catalogue ]] && corpora+=("$catalogue") ;; esac
flags=(-max_total_time="$seconds" -artifact_prefix="$committed/" -timeout=30 -rss_limit_mb=3072
       -print_final_stats=1 -max_len=8192)
[[ -f $repo/fuzz/$target.dict ]] && flags+=(-dict="$repo/fuzz/$target.dict")
if [[ $jobs -gt 1 ]]; then
    flags+=(-fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
echo "fuzz.sh: fuzzing $target for $seconds s (corpus $work; crashes go to $committed/)" >&2
status=0
# The first folder receives the new inputs: the session corpus, never the committed one.
"$build/fuzz/fuzz_$target" "${flags[@]}" "${corpora[@]}" "$@" || status=$?

if [[ ${ONNXSTREAM_FUZZ_MINIMIZE:-0} == 1 ]]; then
    "$build/fuzz/fuzz_$target" -merge=1 -max_len=8192 "$committed" "$work"
fi
found=$(find "$committed" -maxdepth 1 \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
echo "fuzz.sh: $target: exit status $status; $found unfixed finding(s) in $committed" >&2
exit "$status"

#!/usr/bin/env bash
# Benchmarks every command against its peer or limit measured in the same run (cp + sync
# of the same bytes, python onnx, an older build, the memory budget) on generated models,
# and writes a table, DIR/results.json, DIR/dashboard.html (self-contained: open it
# anywhere) and appends the run to DIR/history.jsonl (the dashboard shows each row's history).
#
#   scripts/bench.sh [--large|--tiny] [--before REV] [--out DIR] [--history HDIR] [--work WORK] [--runs N] [--keep] [--no-llm]
#   scripts/bench.sh --memory [--quick] [--out DIR] [--history HDIR] [--work WORK] [--only TEXT] [--keep]
#
#   (default)       moderate models (a few minutes on 2 cores): merge/split/optimize of
#                   16-128 MiB, the small-tensor curve (10k/100k/1M external tensors of 16
#                   bytes), a compact 1M-node graph, inspect/verify of a 27 GB 7B-class model
#                   whose data file is a hole (no disk), export to caffe, and the LLM fixture's
#                   repack/convert/export/quantize/extract/edit/infer-shapes (35 MB, torch)
#   --large         the multi-GB cases: a 1 GiB external-data model, a 1.9 GB embedded one,
#                   a 200k-node graph, the 2.9 GB LLM export (about 12 GB free in WORK)
#   --quick         the default size (the name older invocations used)
#   --tiny          every case on tiny inputs, one run, no LLM fixture: the test suite's smoke run
#   --before REV    also build REV (git archive into build-bench-before/) and run it beside
#                   the current build where this week's changes are measured (the
#                   small-tensor curve); or name a binary in ONNXSTREAM_BEFORE_BIN
#   --out DIR       where results go (default: bench-results/)
#   --history HDIR  also keep this run in HDIR and chart the trend of every run kept there
#   --work WORK     where the models are generated (default /tmp/onnxstream-bench; the
#                   --large run needs about 12 GB free there); removed afterwards unless --keep
#   --runs N        timed runs per tool (default 3, --large 5, --tiny 1; python onnx fewer)
#   --no-llm        leave out the LLM repack case (it needs python3-torch)
#   --memory        instead, the memory benchmark (scripts/bench/memory.py): max RSS, RssAnon
#                   and RssFile peaks of every command on weight-heavy and metadata-heavy
#                   models, cold and warm page cache; writes DIR/memory.json and
#                   DIR/memory.html (with --history, the trend too). Needs about
#                   7 GB free in WORK and takes several minutes (--quick: 1/16 of the sizes)
#   --only TEXT     with --memory: only the cases whose name contains TEXT
#
# ONNXSTREAM_SIMD=off is run beside the convert cases ("no-simd": the portable conversion).
# Builds build-bench/ (Release, with the Google Benchmark micro benchmarks) unless
# ONNXSTREAM_BIN names an onnxstream binary (then ONNXSTREAM_BENCH_BIN may name the micro
# benchmark binary). Models are made with Debian's python3-onnx and numpy through
# /usr/bin/python3. Figures depend on the machine and its load: compare runs on one machine.
set -euo pipefail
cd "$(dirname "$0")/.."

out=bench-results
history=""
work=/tmp/onnxstream-bench
extra=()
memory=""
before=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) extra+=(--quick) ;;
    --large) extra+=(--large) ;;
    --tiny) extra+=(--tiny) ;;
    --before) before="$2"; shift ;;
    --out) out="$2"; shift ;;
    --history) history="$2"; shift ;;
    --work) work="$2"; shift ;;
    --runs) extra+=(--runs "$2"); shift ;;
    --keep) extra+=(--keep) ;;
    --no-llm) extra+=(--no-llm) ;;
    --memory) memory=1 ;;
    --only) extra+=(--only "$2"); shift ;;
    -h|--help) sed -n '2,42s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ -z "${ONNXSTREAM_BIN:-}" ]; then
  echo "== build (build-bench, Release)"
  { cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DONNXSTREAM_BUILD_BENCH=ON \
          -DONNXSTREAM_BUILD_TESTS=OFF -DONNXSTREAM_BUILD_FUZZ=OFF &&
    cmake --build build-bench -j"$(nproc 2>/dev/null || echo 2)" --target onnxstream_cli onnxstream_bench; } > "$log" 2>&1 \
    || { tail -50 "$log" >&2; exit 1; }
  ONNXSTREAM_BIN=build-bench/onnxstream
  ONNXSTREAM_BENCH_BIN=build-bench/bench/onnxstream_bench
fi

if [ -n "$before" ] && [ -z "${ONNXSTREAM_BEFORE_BIN:-}" ]; then
  rev=$(git rev-parse --short=10 "$before^{commit}") || { echo "bench.sh: no commit $before" >&2; exit 2; }
  echo "== build $rev (build-bench-before, Release)"
  if [ "$(cat build-bench-before/rev 2>/dev/null)" != "$rev" ]; then  # same REV: an incremental build
    rm -rf build-bench-before && mkdir -p build-bench-before/src
    git archive "$rev" | tar -x -C build-bench-before/src
    echo "$rev" > build-bench-before/rev
  fi
  { cmake -S build-bench-before/src -B build-bench-before/build -DCMAKE_BUILD_TYPE=Release \
          -DONNXSTREAM_BUILD_TESTS=OFF -DONNXSTREAM_BUILD_FUZZ=OFF &&
    cmake --build build-bench-before/build -j"$(nproc 2>/dev/null || echo 2)" --target onnxstream_cli; } > "$log" 2>&1 \
    || { tail -50 "$log" >&2; exit 1; }
  ONNXSTREAM_BEFORE_BIN=build-bench-before/build/onnxstream
  ONNXSTREAM_BEFORE_LABEL=$rev
fi

if [ -n "$memory" ]; then
  /usr/bin/python3 scripts/bench/memory.py --binary "$ONNXSTREAM_BIN" --work "$work" --out "$out" \
    ${history:+--history "$history"} "${extra[@]+"${extra[@]}"}"
  exit
fi

args=(--binary "$ONNXSTREAM_BIN" --work "$work" --out "$out")
[ -n "${ONNXSTREAM_BENCH_BIN:-}" ] && args+=(--micro "$ONNXSTREAM_BENCH_BIN")
[ -n "$history" ] && args+=(--history "$history")
[ -n "${ONNXSTREAM_BEFORE_BIN:-}" ] && args+=(--before "$ONNXSTREAM_BEFORE_BIN" --before-label "${ONNXSTREAM_BEFORE_LABEL:-$ONNXSTREAM_BEFORE_BIN}")
/usr/bin/python3 scripts/bench/run.py "${args[@]}" "${extra[@]+"${extra[@]}"}"

#!/usr/bin/env bash
# Benchmarks onnxstream against cp and python onnx on generated models, and writes a
# table, DIR/results.json and DIR/dashboard.html (self-contained: open it anywhere).
#
#   scripts/bench.sh [--quick] [--out DIR] [--history HDIR] [--work WORK] [--runs N] [--keep] [--no-llm]
#   scripts/bench.sh --memory [--quick] [--out DIR] [--history HDIR] [--work WORK] [--only TEXT] [--keep]
#
#   --quick         small models (a few minutes); the full run uses a 1 GiB external-data
#                   model, a 1.9 GB embedded one, a 200k-node graph and, when
#                   scripts/make_llm_fixture.py is present, its --large export (2.9 GB)
#   --out DIR       where results go (default: bench-results/)
#   --history HDIR  also keep this run in HDIR and chart the trend of every run kept there
#   --work WORK     where the models are generated (default /tmp/onnxstream-bench; the
#                   full run needs about 12 GB free there); removed afterwards unless --keep
#   --runs N        timed runs per tool (default 5, --quick 3; python onnx runs at most 3)
#   --no-llm        leave out the LLM repack case (it needs python3-torch)
#   --memory        instead, the memory benchmark (scripts/bench/memory.py): max RSS, RssAnon
#                   and RssFile peaks of every command on weight-heavy and metadata-heavy
#                   models, cold and warm page cache; writes DIR/memory.json and
#                   DIR/memory.html (with --history, the trend too). Needs about
#                   7 GB free in WORK and takes several minutes (--quick: 1/16 of the sizes)
#   --only TEXT     with --memory: only the cases whose name contains TEXT
#
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
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) extra+=(--quick) ;;
    --out) out="$2"; shift ;;
    --history) history="$2"; shift ;;
    --work) work="$2"; shift ;;
    --runs) extra+=(--runs "$2"); shift ;;
    --keep) extra+=(--keep) ;;
    --no-llm) extra+=(--no-llm) ;;
    --memory) memory=1 ;;
    --only) extra+=(--only "$2"); shift ;;
    -h|--help) sed -n '2,27s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done

if [ -z "${ONNXSTREAM_BIN:-}" ]; then
  echo "== build (build-bench, Release)"
  log=$(mktemp)
  trap 'rm -f "$log"' EXIT
  { cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DONNXSTREAM_BUILD_BENCH=ON \
          -DONNXSTREAM_BUILD_TESTS=OFF -DONNXSTREAM_BUILD_FUZZ=OFF &&
    cmake --build build-bench -j"$(nproc 2>/dev/null || echo 2)" --target onnxstream_cli onnxstream_bench; } > "$log" 2>&1 \
    || { tail -50 "$log" >&2; exit 1; }
  ONNXSTREAM_BIN=build-bench/onnxstream
  ONNXSTREAM_BENCH_BIN=build-bench/bench/onnxstream_bench
fi

if [ -n "$memory" ]; then
  /usr/bin/python3 scripts/bench/memory.py --binary "$ONNXSTREAM_BIN" --work "$work" --out "$out" \
    ${history:+--history "$history"} "${extra[@]+"${extra[@]}"}"
  exit
fi

args=(--binary "$ONNXSTREAM_BIN" --work "$work" --out "$out")
[ -n "${ONNXSTREAM_BENCH_BIN:-}" ] && args+=(--micro "$ONNXSTREAM_BENCH_BIN")
[ -n "$history" ] && args+=(--history "$history")
/usr/bin/python3 scripts/bench/run.py "${args[@]}" "${extra[@]+"${extra[@]}"}"

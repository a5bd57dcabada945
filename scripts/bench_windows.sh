#!/usr/bin/env bash
# One benchmark row for the Windows build: `merge` of a 1 GiB external-data model by
# build-windows/onnxstream.exe under wine, with the overlapped writer and the portable one.
# These are wine-on-Linux figures (wine maps overlapped file I/O onto its own threads):
# they compare the two writers here and say little about a real Windows.
#
#   scripts/bench_windows.sh [--size BYTES] [--runs N] [--work DIR]
#
# Needs build-windows/ (scripts/test_windows.sh builds it) and wine.
set -euo pipefail
cd "$(dirname "$0")/.."

size=$((1 << 30))
runs=3
work=/tmp/onnxstream-bench-windows
while [ $# -gt 0 ]; do
  case "$1" in
    --size) size="$2"; shift ;;
    --runs) runs="$2"; shift ;;
    --work) work="$2"; shift ;;
    -h|--help) sed -n '2,9s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "bench_windows.sh: unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done
exe=build-windows/onnxstream.exe
[ -f "$exe" ] || { echo "bench_windows.sh: $exe is missing: run scripts/test_windows.sh first" >&2; exit 1; }
export WINEDEBUG=-all WINEPREFIX="$PWD/build-windows/wine-prefix"

mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 scripts/bench/models.py external "$work/model" "$size"
wine "$exe" --version >/dev/null  # the prefix and wineserver are up before timing

echo "merge of $((size >> 20)) MiB under wine (wine on Linux, not Windows); median of $runs runs"
printf '%-12s %10s %10s\n' writer seconds MiB/s
for writer in overlapped portable; do
  times=()
  for _ in $(seq "$runs"); do
    rm -f "$work/merged.onnx"
    start=$(date +%s.%N)
    wine "$exe" merge "$work/model/model.onnx" -o "$work/merged.onnx" --writer "$writer" --quiet
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc -l)")
  done
  median=$(printf '%s\n' "${times[@]}" | sort -g | sed -n "$(( (runs + 1) / 2 ))p")
  printf '%-12s %10.2f %10.0f\n' "$writer" "$median" "$(echo "$size / 1048576 / $median" | bc -l)"
done

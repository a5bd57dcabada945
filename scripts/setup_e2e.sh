#!/usr/bin/env bash
# Installs ONNX Runtime for Node.js (the npm package onnxruntime-node, pinned in
# tests/e2e/package-lock.json) for the end-to-end tests. --ignore-scripts: the package's
# install script tries to download extra binaries, which is neither possible nor needed
# here (the CPU runtime ships inside the package).
set -euo pipefail
cd "$(dirname "$0")/../tests/e2e"
if [ -f node_modules/onnxruntime-node/package.json ] &&
   node -e "process.exit(require('./node_modules/onnxruntime-node/package.json').version === require('./package.json').dependencies['onnxruntime-node'] ? 0 : 1)"; then
  exit 0
fi
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
node -e "require('onnxruntime-node'); console.log('onnxruntime-node', require('onnxruntime-node/package.json').version, 'ready')"

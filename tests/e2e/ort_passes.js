#!/usr/bin/env node
// ONNX Runtime (npm onnxruntime-node, CPU) for the graph-pass tests, with control over
// ONNX Runtime's own graph optimizer:
//
//   node ort_passes.js run MODEL INPUT_DIR OUTPUT_DIR LEVEL
//       runs MODEL with graphOptimizationLevel LEVEL (disabled, basic, extended, all);
//       tensors in and out as ort_run.js does (a manifest.json of {name, dtype, dims, file}).
//   node ort_passes.js optimize MODEL OUT LEVEL
//       writes ONNX Runtime's offline-optimized model (optimizedModelFilePath) to OUT.
//
// Exit status: 0 ok, 2 usage, 3 the session failed to load, 4 the run failed.
'use strict';

const fs = require('fs');
const path = require('path');

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, float16: Uint16Array, int8: Int8Array, uint8: Uint8Array,
  int16: Int16Array, uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array,
  uint64: BigUint64Array, bool: Uint8Array,
};

function fail(code, message) {
  process.stderr.write(`ort_passes: ${message}\n`);
  process.exit(code);
}

async function session(ort, model, level, optimizedPath) {
  const options = { executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1, logSeverityLevel: 3,
                    graphOptimizationLevel: level };
  if (optimizedPath) options.optimizedModelFilePath = optimizedPath;
  try {
    return await ort.InferenceSession.create(model, options);
  } catch (e) {
    fail(3, `cannot load ${model}: ${e.message}`);
  }
  return null;
}

async function run(ort, model, inputDir, outputDir, level) {
  const entries = JSON.parse(fs.readFileSync(path.join(inputDir, 'manifest.json'), 'utf8'));
  const feeds = {};
  for (const e of entries) {
    const bytes = fs.readFileSync(path.join(inputDir, e.file));
    const buffer = new ArrayBuffer(bytes.length);
    new Uint8Array(buffer).set(bytes);
    feeds[e.name] = new ort.Tensor(e.dtype, new ARRAYS[e.dtype](buffer), e.dims);
  }
  const s = await session(ort, model, level, null);
  let results;
  try {
    results = await s.run(feeds);
  } catch (e) {
    fail(4, `cannot run ${model}: ${e.message}`);
  }
  fs.mkdirSync(outputDir, { recursive: true });
  const manifest = s.outputNames.map((name, i) => {
    const t = results[name];
    const file = `t${i}.bin`;
    fs.writeFileSync(path.join(outputDir, file), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    return { name, dtype: t.type, dims: Array.from(t.dims), file };
  });
  fs.writeFileSync(path.join(outputDir, 'manifest.json'), JSON.stringify(manifest, null, 1));
}

async function main() {
  const [mode, ...args] = process.argv.slice(2);
  const ort = require('onnxruntime-node');
  if (mode === 'run' && args.length === 4) return run(ort, args[0], args[1], args[2], args[3]);
  if (mode === 'optimize' && args.length === 3) {
    await session(ort, args[0], args[2], args[1]);
    return undefined;
  }
  return fail(2, 'usage: node ort_passes.js run MODEL INPUT_DIR OUTPUT_DIR LEVEL | optimize MODEL OUT LEVEL');
}

main().catch((e) => fail(4, e.stack || String(e)));

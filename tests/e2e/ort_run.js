#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (npm onnxruntime-node, CPU) for the end-to-end tests.
//
//   node ort_run.js MODEL INPUT_DIR OUTPUT_DIR
//
// INPUT_DIR/manifest.json is a list of {name, dtype, dims, file}; each file holds the
// tensor's raw little-endian bytes (dtype: numpy names, e.g. float32, float16, int64, bool).
// Every model output is written to OUTPUT_DIR the same way, with its own manifest.json.
// The model is opened by path, so ONNX Runtime resolves external data itself.
//
// Exit status: 0 ok, 2 usage, 3 the session failed to load, 4 the run failed (the ONNX
// Runtime message goes to stderr).
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const ARRAYS = {
  float32: Float32Array,
  float64: Float64Array,
  float16: Uint16Array, // bit patterns; Node 20 has no Float16Array
  int8: Int8Array,
  uint8: Uint8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
  bool: Uint8Array,
};

function fail(code, message) {
  process.stderr.write(`ort_run: ${message}\n`);
  process.exit(code);
}

function readTensor(ort, dir, entry) {
  const ArrayType = ARRAYS[entry.dtype];
  if (!ArrayType) throw new Error(`input ${entry.name}: unsupported dtype ${entry.dtype}`);
  const bytes = fs.readFileSync(path.join(dir, entry.file));
  if (bytes.length % ArrayType.BYTES_PER_ELEMENT !== 0) {
    throw new Error(`input ${entry.name}: ${bytes.length} bytes is not a whole number of ${entry.dtype}`);
  }
  // Copy into a fresh, aligned ArrayBuffer (a Buffer may sit at any offset of a pool).
  const buffer = new ArrayBuffer(bytes.length);
  new Uint8Array(buffer).set(bytes);
  return new ort.Tensor(entry.dtype, new ArrayType(buffer), entry.dims);
}

function writeTensor(dir, index, name, tensor) {
  if (!ARRAYS[tensor.type]) throw new Error(`output ${name}: unsupported type ${tensor.type}`);
  const data = tensor.data;
  const file = `t${index}.bin`;
  fs.writeFileSync(path.join(dir, file), Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  return { name, dtype: tensor.type, dims: Array.from(tensor.dims), file };
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length !== 3) fail(2, 'usage: node ort_run.js MODEL INPUT_DIR OUTPUT_DIR');
  if (os.endianness() !== 'LE') fail(2, 'raw tensor files are little-endian; this host is not');
  const [model, inputDir, outputDir] = args;
  const ort = require('onnxruntime-node');

  let entries;
  let feeds;
  try {
    entries = JSON.parse(fs.readFileSync(path.join(inputDir, 'manifest.json'), 'utf8'));
    feeds = {};
    for (const entry of entries) feeds[entry.name] = readTensor(ort, inputDir, entry);
  } catch (e) {
    fail(2, `bad inputs: ${e.message}`);
  }

  let session;
  try {
    session = await ort.InferenceSession.create(model, {
      executionProviders: ['cpu'],
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      logSeverityLevel: 3,
    });
  } catch (e) {
    fail(3, `cannot load ${model}: ${e.message}`);
  }

  let results;
  try {
    results = await session.run(feeds);
  } catch (e) {
    fail(4, `cannot run ${model}: ${e.message}`);
  }

  fs.mkdirSync(outputDir, { recursive: true });
  const manifest = session.outputNames.map((name, i) => writeTensor(outputDir, i, name, results[name]));
  fs.writeFileSync(path.join(outputDir, 'manifest.json'), JSON.stringify(manifest, null, 1));
}

main().catch((e) => fail(4, e.stack || String(e)));

"""quantize --weights int8|int4|uint4, judged by independent software.

- A numpy reference of the rule (scales in float32 rounded to the weight's type, round
  half to even, clamp; int4/uint4 packed two per byte, low nibble first) reproduces the
  written values, scales and zero points byte for byte, and every element dequantizes
  within half a step of its weight.
- The same for --format matmulnbits: ONNX Runtime's MatMulNBits layout (B [N, blocks,
  block / 2] unsigned 4-bit, scales and zero points column by column).
- ONNX Runtime (onnxruntime-node) loads and runs the quantized models (a small MLP, a
  torchvision ResNet-18, the small GPT fixture with external data); its outputs stay close
  to the float model's (cosine similarity printed; int8 > 0.999).
- Bad input: a clear error, a non-zero exit, no output, the input unchanged.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import llm_support
import refcheck
from refcheck import describe, run_cli

INT8, UINT4, INT4 = 3, 21, 22
RANGES = {"int8": (-128, 127), "int4": (-8, 7), "uint4": (0, 15)}


def quantize(model: Path, out: Path, *extra: str) -> dict:
    proc = run_cli(["quantize", model, "-o", out, "--json", *extra])
    assert proc.returncode == 0, describe(proc)
    return json.loads(proc.stdout)


# ---------------------------------------------------------------- the numpy reference

def reference(w: np.ndarray, axis: int, block: int, weights: str, symmetric: bool):
    """(q, scale, zero point) of the rule, with numpy alone; q and zero point as int arrays."""
    low, high = RANGES[weights]
    store = w.dtype
    x = w.astype(np.float32)
    if axis == 1:
        x = x.T
    k, n = x.shape
    blocks = -(-k // block)
    q = np.zeros(x.shape, np.int64)
    scales = np.zeros((blocks, n), np.float32)
    zeros = np.zeros((blocks, n), np.int64)
    for b in range(blocks):
        part = x[b * block:(b + 1) * block]
        if symmetric:
            levels = np.float32(127 if weights == "int8" else 7)
            scale = (np.abs(part).max(axis=0) / levels).astype(np.float32)
            zero = np.full(n, 8 if weights == "uint4" else 0, np.int64)
        else:
            lo = np.minimum(part.min(axis=0), np.float32(0))
            hi = np.maximum(part.max(axis=0), np.float32(0))
            scale = ((hi - lo) / np.float32(high - low)).astype(np.float32)
        scale = scale.astype(store).astype(np.float32)
        scale[~(scale > 0) | ~np.isfinite(scale)] = 1
        if not symmetric:
            zero = np.clip(np.rint(np.float32(low) - lo / scale), low, high).astype(np.int64)
        q[b * block:(b + 1) * block] = np.clip(np.rint(part / scale) + zero.astype(np.float32), low, high)
        scales[b] = scale
        zeros[b] = zero
    if axis == 1:
        return q.T, scales.T.astype(store), zeros.T
    return q, scales.astype(store), zeros


def pack(q: np.ndarray, weights: str) -> bytes:
    flat = q.ravel().astype(np.int64)
    if weights == "int8":
        return flat.astype(np.int8).tobytes()
    if flat.size % 2:
        flat = np.append(flat, 0)
    return ((flat[0::2] & 0xF) | ((flat[1::2] & 0xF) << 4)).astype(np.uint8).tobytes()


def unpack(raw: bytes, count: int, weights: str) -> np.ndarray:
    if weights == "int8":
        return np.frombuffer(raw, np.int8).astype(np.int64)[:count]
    b = np.frombuffer(raw, np.uint8).astype(np.int64)
    flat = np.empty(b.size * 2, np.int64)
    flat[0::2], flat[1::2] = b & 0xF, b >> 4
    flat = flat[:count]
    return np.where(flat > 7, flat - 16, flat) if weights == "int4" else flat


def initializers(path: Path) -> dict[str, TensorProto]:
    model = onnx.load(str(path))  # external data read in by python-onnx
    return {t.name: t for t in model.graph.initializer}


def raw_of(t: TensorProto) -> bytes:
    if t.raw_data:
        return t.raw_data
    return numpy_helper.to_array(t).tobytes()


# ---------------------------------------------------------------- models

def mlp(dtype=np.float32, seed: int = 0) -> onnx.ModelProto:
    """MatMul [100, 48] (K = 100: the last block of 32 is short), Gemm transB=1 [36, 48]
    (blocks along axis 1), a MatMul [36, 20] under --min-size by default; one weight has
    an all-zero block and an outlier."""
    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((100, 48)).astype(dtype)
    w1[:32, 5] = 0  # an all-zero block
    w1[40, 7] = 25  # an outlier
    w2 = (rng.standard_normal((36, 48)) * 0.2).astype(dtype)
    b2 = rng.standard_normal(36).astype(dtype)
    w3 = rng.standard_normal((36, 20)).astype(dtype)
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.FLOAT16
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h1"]), helper.make_node("Relu", ["h1"], ["r1"]),
             helper.make_node("Gemm", ["r1", "w2", "b2"], ["h2"], transB=1),
             helper.make_node("MatMul", ["h2", "w3"], ["y"])]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", elem, [3, 100])],
                              [helper.make_tensor_value_info("y", elem, [3, 20])],
                              [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (w2, "w2"), (b2, "b2"), (w3, "w3"))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    x, y = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def compare_in_ort(original: Path, quantized: Path, inputs: dict) -> float:
    expected = refcheck.run_ort(original, inputs)
    got = refcheck.run_ort(quantized, inputs)
    assert set(expected) == set(got)
    return min(cosine(expected[k], got[k]) for k in expected)


def sha1(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------- (a) the written bytes

@pytest.mark.parametrize("weights", ["int8", "int4", "uint4"])
@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "asymmetric"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["fp32", "fp16"])
def test_bytes_match_numpy_reference(onnxstream, tmp_path, weights, symmetric, dtype):
    src = save(mlp(dtype), tmp_path / "mlp.onnx")
    out = tmp_path / "q.onnx"
    block = 32
    report = quantize(src, out, "--weights", weights, "--min-size", "1K", "--block-size", str(block),
                      "--symmetric" if symmetric else "--asymmetric")
    assert report["opset_before"] == 17 and report["opset_after"] == 21 and report["ir_version_after"] == 10
    assert {q["name"] for q in report["quantized"]} == {"w1", "w2", "w3"}
    model = onnx.load(str(out))
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [21]
    tensors = initializers(out)
    original = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(src)).graph.initializer}
    assert not {"w1", "w2", "w3"} & set(tensors)  # the float weights are gone
    dq = {n.output[0]: n for n in model.graph.node if n.op_type == "DequantizeLinear"}
    for name, axis in (("w1", 0), ("w2", 1), ("w3", 0)):
        node = dq[name]
        attrs = {a.name: a.i for a in node.attribute}
        assert attrs == {"axis": axis, "block_size": block}
        w = original[name]
        q, scale, zero = reference(w, axis, block, weights, symmetric)
        values = tensors[node.input[0]]
        assert values.data_type == {"int8": INT8, "int4": INT4, "uint4": UINT4}[weights]
        assert list(values.dims) == list(w.shape)
        assert raw_of(values) == pack(q, weights), name
        scales = tensors[node.input[1]]
        assert scales.data_type == (TensorProto.FLOAT if dtype == np.float32 else TensorProto.FLOAT16)
        assert list(scales.dims) == list(scale.shape)
        assert raw_of(scales) == scale.tobytes(), name
        has_zero = not symmetric or weights == "uint4"
        assert (len(node.input) == 3) == has_zero
        if has_zero:
            zp = tensors[node.input[2]]
            assert zp.data_type == values.data_type and list(zp.dims) == list(scale.shape)
            assert raw_of(zp) == pack(zero, weights), name
        # Round to nearest: within half a step of every weight (plus what rounding the
        # scale to the weight's type moved the largest level).
        got_q = unpack(raw_of(values), w.size, weights).reshape(w.shape)
        s = scale.astype(np.float64)
        s_full = np.repeat(s, block, axis=axis)[: w.shape[0], : w.shape[1]] if axis == 0 else \
            np.repeat(s, block, axis=1)[:, : w.shape[1]]
        z_full = np.repeat(zero, block, axis=axis)[: w.shape[0], : w.shape[1]]
        back = (got_q - z_full) * s_full
        levels = RANGES[weights][1] - RANGES[weights][0]
        slack = levels * s_full * (2.0 ** -10 if dtype == np.float16 else 2.0 ** -23)
        assert np.all(np.abs(w.astype(np.float64) - back) <= s_full / 2 + slack + 1e-12), name
        assert np.all(back[w == 0] == 0)  # zeros (and the all-zero block) stay exact


def test_report_sizes_and_error(onnxstream, tmp_path):
    src = save(mlp(), tmp_path / "mlp.onnx")
    report = quantize(src, tmp_path / "q.onnx", "--weights", "int4")
    # w3 (36 x 20 x 4 = 2880 bytes) is under the default 4 KiB.
    assert [q["name"] for q in report["quantized"]] == ["w1", "w2"]
    assert report["bytes_before"] == (100 * 48 + 36 * 48) * 4
    # int4: half a byte a value, plus one float32 scale per 32 values (blocks rounded up).
    assert report["bytes_after"] == (100 * 48 + 36 * 48) // 2 + (4 * 48 + 36 * 2) * 4
    assert 0 < report["max_relative_error"] < 1 / 14 + 1e-6  # half a step of max/7
    assert report["max_relative_error"] == max(q["max_relative_error"] for q in report["quantized"])


def test_text_report(onnxstream, tmp_path):
    src = save(mlp(), tmp_path / "mlp.onnx")
    proc = run_cli(["quantize", src, "--weights", "int8", "--exclude", "w2"])
    assert proc.returncode == 0, describe(proc)
    assert "quantized 1 weight(s) to int8" in proc.stdout
    assert "opset 17 -> 21" in proc.stdout
    assert "skipped w2: excluded" in proc.stdout
    assert (tmp_path / "mlp.int8.onnx").is_file()  # the default output


def test_graph_input_weight_is_skipped(onnxstream, tmp_path):
    model = mlp()
    model.graph.input.append(helper.make_tensor_value_info("w1", TensorProto.FLOAT, [100, 48]))
    src = save(model, tmp_path / "m.onnx")
    report = quantize(src, tmp_path / "q.onnx", "--weights", "int8")
    assert {s["name"]: s["reason"] for s in report["skipped"]}["w1"] == "also a graph input, so not constant"
    assert [q["name"] for q in report["quantized"]] == ["w2"]


def nbits_reference(w: np.ndarray, block: int, symmetric: bool):
    """MatMulNBits' B [N, blocks, block / 2], scales [N * blocks] and zero points
    [N * ceil(blocks / 2)] for W [K, N]: unsigned 4-bit, each column's blocks in a row,
    the last block padded with its zero point."""
    q, scale, zero = reference(w, 0, block, "uint4", symmetric)
    k, n = w.shape
    blocks = scale.shape[0]
    padded = np.repeat(zero, block, axis=0).copy()  # the padding: each block's zero point
    padded[:k] = q
    by_column = padded.T.reshape(n, blocks, block)
    packed = (by_column[:, :, 0::2] & 0xF) | ((by_column[:, :, 1::2] & 0xF) << 4)
    zeros = b"".join(pack(zero[:, c], "uint4") for c in range(n))
    return packed.astype(np.uint8).tobytes(), scale.T.copy().tobytes(), zeros


@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "asymmetric"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["fp32", "fp16"])
def test_matmulnbits_layout_matches_numpy_reference(onnxstream, tmp_path, symmetric, dtype):
    src = save(mlp(dtype), tmp_path / "mlp.onnx")
    out = tmp_path / "q.onnx"
    report = quantize(src, out, "--weights", "int4", "--format", "matmulnbits", "--min-size", "1K",
                      "--symmetric" if symmetric else "--asymmetric")
    assert report["format"] == "matmulnbits" and report["opset_after"] == report["opset_before"] == 17
    assert {q["name"] for q in report["quantized"]} == {"w1", "w3"}
    assert {s["name"]: s["reason"] for s in report["skipped"]} == {"w2": "--format matmulnbits replaces MatMul nodes only"}
    model = onnx.load(str(out))
    assert ("com.microsoft", 1) in [(o.domain, o.version) for o in model.opset_import]
    tensors = initializers(out)
    original = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(src)).graph.initializer}
    nodes = [n for n in model.graph.node if n.op_type == "MatMulNBits"]
    assert len(nodes) == 2 and not [n for n in model.graph.node if n.op_type == "MatMul"]
    for node in nodes:
        assert node.domain == "com.microsoft"
        name = "w1" if node.output[0] == "h1" else "w3"
        w = original[name]
        attrs = {a.name: a.i for a in node.attribute}
        assert attrs == {"K": w.shape[0], "N": w.shape[1], "bits": 4, "block_size": 32}
        values, scales, zeros = nbits_reference(w, 32, symmetric)
        assert raw_of(tensors[node.input[1]]) == values, name
        assert raw_of(tensors[node.input[2]]) == scales, name
        assert (len(node.input) == 4) == (not symmetric)
        if not symmetric:
            assert raw_of(tensors[node.input[3]]) == zeros, name


@pytest.mark.parametrize("extra", [[], ["--asymmetric"]], ids=["symmetric", "asymmetric"])
def test_matmulnbits_runs_in_ort(onnxstream, ort, tmp_path, extra):
    llm = llm_support.LlmFixture(llm_support.llm_dir())
    src = llm.copy_to(tmp_path / "llm")
    out = tmp_path / "out" / "q.onnx"
    out.parent.mkdir()
    report = quantize(src, out, "--weights", "int4", "--format", "matmulnbits", *extra)
    assert len(report["quantized"]) >= 12
    cos = compare_in_ort(src, out, llm.inputs())
    print(f"llm matmulnbits int4 {' '.join(extra)}: cosine {cos:.6f}")
    assert cos > 0.99


# ---------------------------------------------------------------- (b) ONNX Runtime runs them

@pytest.mark.parametrize("weights,extra,floor", [("int8", [], 0.9999), ("int4", [], 0.98), ("uint4", ["--asymmetric"], 0.98),
                                                 ("int4", ["--block-size", "128"], 0.97)])
def test_mlp_runs_in_ort(onnxstream, ort, tmp_path, weights, extra, floor):
    src = save(mlp(), tmp_path / "mlp.onnx")
    out = tmp_path / "q.onnx"
    quantize(src, out, "--weights", weights, "--min-size", "1K", *extra)
    cos = compare_in_ort(src, out, refcheck.make_inputs(src, seed=3))
    print(f"mlp {weights} {' '.join(extra)}: cosine {cos:.6f}")
    assert cos > floor


def test_fp16_mlp_runs_in_ort(onnxstream, ort, tmp_path):
    src = save(mlp(np.float16), tmp_path / "mlp16.onnx")
    out = tmp_path / "q.onnx"
    quantize(src, out, "--weights", "int8", "--min-size", "1K")
    inputs = {"x": np.random.default_rng(4).standard_normal((3, 100)).astype(np.float16)}
    cos = compare_in_ort(src, out, inputs)
    print(f"mlp fp16 int8: cosine {cos:.6f}")
    assert cos > 0.999


@pytest.mark.parametrize("weights,floor", [("int8", 0.999), ("int4", 0.99)])
def test_resnet18_runs_in_ort(onnxstream, ort, tmp_path, weights, floor):
    from test_convert import calibrated_export
    src = tmp_path / "resnet18.onnx"
    calibrated_export("resnet18", src)  # opset 13: raised to 21
    out = tmp_path / "q.onnx"
    report = quantize(src, out, "--weights", weights)
    assert [q["name"] for q in report["quantized"]] == ["fc.weight"]  # Gemm transB=1
    assert report["quantized"][0]["axis"] == 1
    cos = compare_in_ort(src, out, refcheck.make_inputs(src, seed=1))
    print(f"resnet18 {weights}: cosine {cos:.6f}")
    assert cos > floor


@pytest.mark.parametrize("weights,floor", [("int8", 0.999), ("int4", 0.99)])
def test_llm_external_data_runs_in_ort(onnxstream, ort, tmp_path, weights, floor):
    llm = llm_support.LlmFixture(llm_support.llm_dir())
    src = llm.copy_to(tmp_path / "llm")
    before = {p.name: sha1(p) for p in src.parent.iterdir()}
    out = tmp_path / "out" / "q.onnx"
    out.parent.mkdir()
    report = quantize(src, out, "--weights", weights)
    assert len(report["quantized"]) >= 12
    assert report["nodes_upgraded"] > 0  # opset 14: ReduceMean axes became an input
    assert [Path(f["path"]).name for f in report["data_files"]] == ["q.onnx.data"]
    assert report["bytes_after"] < report["bytes_before"] / (3.5 if weights == "int8" else 6)
    assert {p.name: sha1(p) for p in src.parent.iterdir()} == before  # inputs unchanged
    cos = compare_in_ort(src, out, llm.inputs())
    print(f"llm {weights}: cosine {cos:.6f}")
    assert cos > floor


def ort_rtn_int4(w: np.ndarray, block: int) -> np.ndarray:
    """The weights as ONNX Runtime's own RTN 4-bit quantizer leaves them (MatMul4BitsQuantizer's
    default, MLAS's blockwise rule, read from its source and written again here in numpy):
    per block along K, the value m of largest magnitude maps to level -8, scale = -m / 8,
    q = clamp(round half away from zero(w / scale) + 8, 0, 15); returned dequantized."""
    k, n = w.shape
    out = np.empty((k, n), np.float32)
    for b in range(0, k, block):
        part = w[b:b + block].astype(np.float32)
        m = part[np.abs(part).argmax(axis=0), np.arange(n)]
        scale = (-m / np.float32(8)).astype(np.float32)
        safe = np.where(scale == 0, np.float32(1), scale)
        x = part / safe
        q = np.clip(np.sign(x) * np.floor(np.abs(x) + np.float32(0.5)) + 8, 0, 15)
        out[b:b + block] = np.where(scale == 0, np.float32(0), (q - 8) * scale)
    return out


def test_int4_is_as_close_as_ort_rtn_on_the_same_weights(onnxstream, ort, tmp_path):
    """int4, block 32, on the GPT fixture: the same weights quantized by ONNX Runtime's RTN
    rule give outputs no closer to the float model's than onnxstream's (within a tenth of
    the distance 1 - cosine). Measured 2026-12-05: onnxstream 0.999238, ORT's rule 0.999260."""
    llm = llm_support.LlmFixture(llm_support.llm_dir())
    src = llm.copy_to(tmp_path / "llm")
    out = tmp_path / "q.onnx"
    report = quantize(src, out, "--weights", "int4", "--block-size", "32")
    quantized = {q["name"]: q["axis"] for q in report["quantized"]}
    model = onnx.load(str(src))
    for t in model.graph.initializer:
        if t.name in quantized:
            w = numpy_helper.to_array(t)
            along_k = w if quantized[t.name] == 0 else w.T
            d = ort_rtn_int4(along_k, 32)
            t.CopyFrom(numpy_helper.from_array((d if quantized[t.name] == 0 else d.T).astype(w.dtype), t.name))
    ort_rule = tmp_path / "ort_rtn.onnx"
    onnx.save(model, str(ort_rule), save_as_external_data=True, location="ort_rtn.onnx.data")
    inputs = llm.inputs()
    ours = compare_in_ort(src, out, inputs)
    theirs = compare_in_ort(src, ort_rule, inputs)
    print(f"llm int4/32: onnxstream cosine {ours:.6f}, ONNX Runtime's RTN rule {theirs:.6f}")
    assert 1 - ours <= 1.1 * (1 - theirs)


def test_llm_embeddings_with_gather(onnxstream, ort, tmp_path):
    llm = llm_support.LlmFixture(llm_support.llm_dir())
    src = llm.copy_to(tmp_path / "llm")
    out = tmp_path / "out" / "q.onnx"
    out.parent.mkdir()
    plain = quantize(src, tmp_path / "out" / "plain.onnx", "--weights", "int8")
    report = quantize(src, out, "--weights", "int8", "--ops", "MatMul,Gemm,Gather")
    embeddings = {q["name"] for q in report["quantized"]} - {q["name"] for q in plain["quantized"]}
    assert "transformer.wte.weight" in embeddings
    assert all(q["axis"] == 1 for q in report["quantized"] if q["name"] in embeddings)  # along each row
    model = onnx.load(str(out), load_external_data=False)
    gathers = [n for n in model.graph.node if n.op_type == "Gather"]
    dq_outputs = {n.output[0] for n in model.graph.node if n.op_type == "DequantizeLinear"}
    assert any(g.input[0] in dq_outputs for g in gathers)
    cos = compare_in_ort(src, out, llm.inputs())
    print(f"llm int8 with embeddings: cosine {cos:.6f}")
    assert cos > 0.999


def test_llm_shards_and_data_name(onnxstream, ort, tmp_path):
    llm = llm_support.LlmFixture(llm_support.llm_dir())
    src = llm.copy_to(tmp_path / "llm")
    out = tmp_path / "out" / "q.onnx"
    out.parent.mkdir()
    report = quantize(src, out, "--weights", "int4", "--shard-size", "4M", "--data-name", "w.bin")
    names = [Path(f["path"]).name for f in report["data_files"]]
    assert len(names) >= 2 and all(n.startswith("w.bin-0000") for n in names)
    assert sorted(p.name for p in out.parent.iterdir()) == sorted(names + ["q.onnx"])
    assert compare_in_ort(src, out, llm.inputs()) > 0.99


# The SIMD paths of quantize's loops (ops/quantize_kernels.hpp) must write the portable
# path's bytes: ONNXSTREAM_SIMD=off runs the portable loops, avx2 caps them there. The GPT
# fixture has blocks along axis 0 (MatMul, matmulnbits) and along axis 1 (Gather); ResNet-18's
# fc (Gemm transB=1) along axis 1. tests/unit/test_quantize_kernels.cpp holds the loops to
# the last bit of the error; here the whole command, the report included.
@pytest.mark.parametrize("model,weights,extra", [
    ("llm", "int8", ["--ops", "MatMul,Gemm,Gather"]),
    ("llm", "int4", ["--asymmetric", "--block-size", "64"]),
    ("llm", "uint4", ["--format", "matmulnbits", "--asymmetric", "--block-size", "128"]),
    ("llm", "int4", ["--format", "matmulnbits", "--block-size", "256"]),
    ("resnet18", "int8", ["--asymmetric"]),
    ("resnet18", "int4", ["--block-size", "32"]),
])
def test_simd_and_portable_paths_write_the_same_bytes(onnxstream, tmp_path, monkeypatch, model, weights, extra):
    if model == "llm":
        src = llm_support.LlmFixture(llm_support.llm_dir()).model
    else:
        from cases import fixtures_dir
        src = fixtures_dir() / "resnet18" / "model.onnx"
    outputs = {}
    for simd in ["off", "avx2", "on"]:
        monkeypatch.setenv("ONNXSTREAM_SIMD", simd)
        folder = tmp_path / simd
        folder.mkdir()
        report = quantize(src, folder / "q.onnx", "--weights", weights, *extra)
        report.pop("output")
        report.pop("data_files")
        outputs[simd] = ({p.name: p.read_bytes() for p in sorted(folder.iterdir())}, report)
    assert len(outputs["on"][1]["quantized"]) >= 1
    assert outputs["on"] == outputs["off"]
    assert outputs["avx2"] == outputs["off"]


def external_mlp_with_checksum(folder: Path, right: bool) -> Path:
    """The MLP with its weights in w.data, w1's entry holding a SHA-1 `checksum` key."""
    folder.mkdir()
    model = mlp()
    path = folder / "m.onnx"
    onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="w.data",
              size_threshold=0)
    model = onnx.load(str(path), load_external_data=False)
    w1 = next(t for t in model.graph.initializer if t.name == "w1")
    entries = {e.key: e.value for e in w1.external_data}
    with open(folder / "w.data", "rb") as f:
        f.seek(int(entries.get("offset", 0)))
        digest = hashlib.sha1(f.read(int(entries["length"]))).hexdigest()
    w1.external_data.add(key="checksum", value=digest if right else "0" * 40)
    onnx.save(model, str(path))
    return path


def test_checksum_checked_while_reading(onnxstream, tmp_path):
    good = external_mlp_with_checksum(tmp_path / "good", True)
    proc = run_cli(["quantize", good, "--weights", "int8", "-o", tmp_path / "good.onnx"])
    assert proc.returncode == 0 and "checksum" not in proc.stderr, describe(proc)
    bad = external_mlp_with_checksum(tmp_path / "bad", False)
    proc = run_cli(["quantize", bad, "--weights", "int8", "-o", tmp_path / "warned.onnx"])
    assert proc.returncode == 0 and "w1" in proc.stderr and "SHA-1" in proc.stderr, describe(proc)
    refused([bad, "--weights", "int8", "-o", tmp_path / "strict.onnx", "--strict"], 1, "w1")
    assert not (tmp_path / "strict.onnx").exists()
    assert not (tmp_path / "strict.onnx.data").exists()


# ---------------------------------------------------------------- (c) bad input

def refused(args, status=None, message=""):
    proc = run_cli(["quantize", *args])
    assert proc.returncode != 0, describe(proc)
    if status is not None:
        assert proc.returncode == status, describe(proc)
    assert "onnxstream: error:" in proc.stderr and message in proc.stderr, describe(proc)
    assert "Traceback" not in proc.stderr
    return proc


@pytest.mark.parametrize("args,status,message", [
    (["--weights", "int3"], 2, "int3"),
    (["--weights", "int8", "--block-size", "48"], None, "block size 48"),
    (["--weights", "int8", "--exclude", "w1,nope"], None, "'nope'"),
    (["--weights", "int8", "--ops", "Conv"], None, "Conv"),
    (["--weights", "int8", "--symmetric", "--asymmetric"], None, "exclude each other"),
    (["--weights", "int8", "--min-size", "1G"], None, "nothing to quantize"),
    (["--weights", "int8", "--format", "matmulnbits"], None, "4-bit"),
    (["--weights", "int4", "--format", "gguf"], 2, "gguf"),
])
def test_bad_arguments(onnxstream, tmp_path, args, status, message):
    src = save(mlp(), tmp_path / "mlp.onnx")
    digest = sha1(src)
    out = tmp_path / "q.onnx"
    refused([src, "-o", out, *args], status, message)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlp.onnx"]  # no scratch or partial file
    assert sha1(src) == digest


def test_nothing_to_quantize(onnxstream, tmp_path):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    src = save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "relu.onnx")
    refused([src, "--weights", "int8"], 1, "nothing to quantize")
    assert not (tmp_path / "relu.int8.onnx").exists()


def test_existing_output_needs_force(onnxstream, tmp_path):
    src = save(mlp(), tmp_path / "mlp.onnx")
    out = tmp_path / "q.onnx"
    out.write_bytes(b"keep me")
    refused([src, "-o", out, "--weights", "int8"], 1)
    assert out.read_bytes() == b"keep me"
    quantize(src, out, "--weights", "int8", "--force")
    assert out.read_bytes() != b"keep me"


def test_old_opset_refused(onnxstream, tmp_path):
    model = mlp()
    model.opset_import[0].version = 11
    src = save(model, tmp_path / "old.onnx")
    refused([src, "--weights", "int8"], 1, "opset 11")
    assert not (tmp_path / "old.int8.onnx").exists()


def test_changed_operator_refused(onnxstream, tmp_path):
    model = mlp()
    model.graph.node.append(helper.make_node("GridSample", ["y4", "grid"], ["z"]))
    src = save(model, tmp_path / "grid.onnx")
    refused([src, "--weights", "int8"], 1, "GridSample")


# ---------------------------------------------------------------- the multi-GB export (opt-in)

LARGE = os.environ.get("ONNXSTREAM_LARGE") == "1"


@pytest.fixture(scope="module")
def large_llm(tmp_path_factory):
    """scripts/make_llm_fixture.py --large: about 2.9 GB in one file per tensor (a few minutes of torch)."""
    folder = tmp_path_factory.mktemp("large") / "llm"
    subprocess.run([sys.executable, str(llm_support.MAKE_LLM_FIXTURE), str(folder), "--large"], check=True,
                   stdout=subprocess.DEVNULL)
    yield llm_support.LlmFixture(folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(not LARGE, reason="multi-GB: scripts/test.sh --large (ONNXSTREAM_LARGE=1)")
@pytest.mark.parametrize("weights,floor", [("int8", 0.999), ("int4", 0.99)])
def test_large_llm_in_bounded_memory_and_runs_in_ort(onnxstream, ort, tmp_path, large_llm, weights, floor):
    """Issue 33: the 2.9 GB per-tensor export quantized with peak RSS far below its weights
    (the metadata budget: 2 x the .onnx + 32 MiB, plus the blocks of rows held at once), in
    a time beside the durable copy of its bytes, and the result runs in ONNX Runtime."""
    src = large_llm.model
    weight_bytes = sum(p.stat().st_size for p in src.parent.iterdir() if p.is_file())
    assert weight_bytes > 2 << 30
    out = tmp_path / "q.onnx"
    started = time.monotonic()
    code, rss, stderr = refcheck.peak_rss(["quantize", src, "--weights", weights, "-o", out, "--quiet"], timeout=1800)
    seconds = time.monotonic() - started
    assert code == 0, stderr
    # One block of rows of the widest weight (vocab 32000 x 2048 float32, blocks of 32) is
    # 8 MiB; the budget leaves room for a few, never for a weight.
    budget = 2 * src.stat().st_size + (64 << 20)
    copy = tmp_path / "copy"
    copy_started = time.monotonic()
    subprocess.run(["sh", "-c", 'cp -r "$0" "$1" && sync -f "$1"', str(src.parent), str(copy)], check=True)
    copy_seconds = time.monotonic() - copy_started
    shutil.rmtree(copy)
    print(f"large llm {weights}: {seconds:.1f} s (cp+sync {copy_seconds:.1f} s), peak RSS {rss >> 20} MiB "
          f"(budget {budget >> 20} MiB) for {weight_bytes >> 20} MiB of weights")
    assert rss < budget, f"peak RSS {rss >> 20} MiB over {budget >> 20} MiB"
    cos = compare_in_ort(src, out, large_llm.inputs())
    print(f"large llm {weights}: cosine {cos:.6f}")
    assert cos > floor

"""export --to safetensors, judged by readers nobody here wrote.

- The header is checked against the format's rules: an 8-byte little-endian length, JSON
  (Python's json), data starting on an 8-byte boundary, offsets contiguous, in order and
  ending at the end of the file, dtype and shape matching the tensor.
- Each tensor is read with torch.frombuffer through the header's offsets and compared
  (numpy.array_equal, bytes) with python-onnx's numpy_helper of the original.
- The linked .onnx gives bit-identical ONNX Runtime outputs; verify finds it clean.
- The sharded layout and its index agree with the files.
"""
from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

import cases
import llm_support
import refcheck
from refcheck import describe, run_cli

TORCH_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
                "I8": torch.int8, "I16": torch.int16, "I32": torch.int32, "I64": torch.int64, "U8": torch.uint8,
                "BOOL": torch.bool}


def read_safetensors(path: Path) -> tuple[dict, dict[str, np.ndarray], int]:
    """(header, {name: array}, data start) after checking the format's rules."""
    blob = path.read_bytes()
    assert len(blob) >= 8
    (n,) = struct.unpack("<Q", blob[:8])
    assert 8 + n <= len(blob)
    assert (8 + n) % 8 == 0, "data must start on an 8-byte boundary"
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    assert all(isinstance(v, str) for v in meta.values())
    spans = sorted((v["data_offsets"][0], v["data_offsets"][1], k) for k, v in header.items())
    position = 0
    for begin, end, key in spans:
        assert begin == position, f"{key}: offsets must be contiguous"
        position = end
    assert 8 + n + position == len(blob), "the last tensor must end at the end of the file"
    data = bytearray(blob[8 + n:])
    tensors = {}
    for key, v in header.items():
        begin, end = v["data_offsets"]
        dtype = TORCH_DTYPES[v["dtype"]]
        count = int(np.prod(v["shape"])) if v["shape"] else 1
        t = torch.frombuffer(data, dtype=dtype, count=count, offset=begin) if count else torch.empty(0, dtype=dtype)
        assert t.element_size() * count == end - begin, key
        t = t.reshape(v["shape"])
        tensors[key] = (t.view(torch.int16).numpy().view(np.uint16) if dtype == torch.bfloat16 else t.numpy()).copy()
    header["__metadata__"] = meta
    return header, tensors, 8 + n


def initializers(model_path: Path) -> dict[str, np.ndarray]:
    model = onnx.load(str(model_path), load_external_data=False)
    return {t.name: numpy_helper.to_array(t, str(model_path.parent)) for t in model.graph.initializer}


def export(model: Path, *extra) -> dict:
    proc = run_cli(["export", model, "--to", "safetensors", "--json", *extra])
    assert proc.returncode == 0, describe(proc)
    return json.loads(proc.stdout)


def assert_equal_tensors(expected: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> None:
    assert set(expected) == set(got)
    for k, x in expected.items():
        assert np.array_equal(x, got[k]) and x.dtype == got[k].dtype, k
        assert x.tobytes() == got[k].tobytes(), k


def test_llm_export_and_link(onnxstream, ort, tmp_path):
    src = llm_support.llm_dir() / "model.onnx"
    out = tmp_path / "gpt.safetensors"
    report = export(src, "-o", out, "--link")
    header, tensors, _ = read_safetensors(out)
    assert header["__metadata__"]["source"] == "model.onnx"
    assert_equal_tensors(initializers(src), tensors)
    linked = tmp_path / "model.linked.onnx"
    assert report["linked"] == str(linked)
    onnx.checker.check_model(str(linked))
    # The linked model's external data points into the safetensors file.
    for t in onnx.load(str(linked), load_external_data=False).graph.initializer:
        if t.data_location == TensorProto.EXTERNAL:
            assert {e.key: e.value for e in t.external_data}["location"] == "gpt.safetensors"
    inputs = refcheck.make_inputs(src, seed=2)
    refcheck.assert_same_outputs(refcheck.run_ort(src, inputs), refcheck.run_ort(linked, inputs))
    proc = run_cli(["verify", linked])
    assert proc.returncode == 0, describe(proc)
    merged = tmp_path / "merged.onnx"
    proc = run_cli(["merge", linked, "-o", merged, "-q"])
    assert proc.returncode == 0, describe(proc)
    refcheck.assert_same_tensors(src, merged)


def test_embedded_model_and_shards(onnxstream, ort, tmp_path):
    src = cases.fixtures_dir() / "resnet18_embedded" / "model.onnx"
    out = tmp_path / "r.safetensors"
    report = export(src, "-o", out, "--shard-size", "8M", "--link")
    files = [Path(f["path"]) for f in report["files"]]
    assert len(files) >= 3
    assert [f.name for f in files] == [f"r-{i:05d}-of-{len(files):05d}.safetensors" for i in range(1, len(files) + 1)]
    index = json.loads((tmp_path / "r.safetensors.index.json").read_text())
    merged = {}
    for f in files:
        assert f.stat().st_size <= 8 * 1024 * 1024 + 64 * 1024 or len(read_safetensors(f)[1]) == 1
        _, tensors, _ = read_safetensors(f)
        for k in tensors:
            assert index["weight_map"][k] == f.name
        merged.update(tensors)
    assert set(index["weight_map"]) == set(merged)
    assert index["metadata"]["total_size"] == sum(x.nbytes for x in merged.values())
    assert_equal_tensors(initializers(src), merged)
    linked = tmp_path / "model.linked.onnx"
    inputs = refcheck.make_inputs(src, seed=1)
    refcheck.assert_same_outputs(refcheck.run_ort(src, inputs), refcheck.run_ort(linked, inputs))


def test_default_output_and_dtypes(onnxstream, tmp_path):
    arrays = {"f16": np.arange(6, dtype=np.float16).reshape(2, 3), "i64": np.arange(5, dtype=np.int64),
              "u8": np.arange(7, dtype=np.uint8), "b": np.array([True, False]), "d": np.ones((1, 2), np.float64),
              "scalar": np.array(3.5, np.float32), "empty": np.zeros((0, 4), np.float32)}
    inits = [numpy_helper.from_array(v, k) for k, v in arrays.items()]
    inits[2].ClearField("raw_data")  # typed int32_data for uint8
    inits[2].int32_data.extend(arrays["u8"].tolist())
    graph = helper.make_graph([helper.make_node("Identity", ["f16"], ["Y"])], "g", [],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT16, [2, 3])], inits)
    src = tmp_path / "many.onnx"
    onnx.save(helper.make_model(graph), str(src))
    export(src)
    header, tensors, _ = read_safetensors(tmp_path / "many.safetensors")
    assert header["scalar"]["shape"] == [] and header["empty"]["data_offsets"][0] == header["empty"]["data_offsets"][1]
    assert_equal_tensors(arrays, tensors)


def bad_model(tmp_path: Path, names=("w",), string=False) -> Path:
    inits = [numpy_helper.from_array(np.ones(3, np.float32), n) for n in names]
    if string:
        inits.append(helper.make_tensor("s", TensorProto.STRING, [1], [b"x"]))
    graph = helper.make_graph([helper.make_node("Identity", [names[0]], ["Y"])], "g", [],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3])], inits)
    src = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(graph), str(src))
    return src


@pytest.mark.parametrize("kind,words", [("control", "cannot hold"), ("metadata", "cannot hold"),
                                        ("duplicate", "two initializers"), ("string", "no dtype")])
def test_refused_inputs(onnxstream, tmp_path, kind, words):
    if kind == "control":
        src = bad_model(tmp_path, names=("a\x01\x1b[31mb",))
    elif kind == "metadata":
        src = bad_model(tmp_path, names=("__metadata__",))
    elif kind == "duplicate":
        src = bad_model(tmp_path, names=("w", "w"))
    else:
        src = bad_model(tmp_path, string=True)
    proc = run_cli(["export", src, "--to", "safetensors"])
    assert proc.returncode == 1, describe(proc)
    assert "onnxstream: error:" in proc.stderr and words in proc.stderr
    assert "\x1b" not in proc.stderr  # names are escaped
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.onnx"]


def test_usage_and_existing_output(onnxstream, tmp_path):
    src = bad_model(tmp_path)
    for args, status in ((["export", src], 2), (["export", src, "--to", "gguf"], 2), (["export", "--help"], 0)):
        proc = run_cli(args)
        assert proc.returncode == status, describe(proc)
    assert "safetensors" in run_cli(["export", "--help"]).stdout
    (tmp_path / "bad.safetensors").write_bytes(b"keep")
    proc = run_cli(["export", src, "--to=safetensors"])
    assert proc.returncode == 1 and "--force" in proc.stderr, describe(proc)
    assert (tmp_path / "bad.safetensors").read_bytes() == b"keep"
    proc = run_cli(["export", src, "--to=safetensors", "--force", "-q"])
    assert proc.returncode == 0, describe(proc)
    assert read_safetensors(tmp_path / "bad.safetensors")[1]["w"].tolist() == [1.0, 1.0, 1.0]


def test_names_in_json_are_utf8_or_refused(onnxstream, tmp_path):
    """Issue 29.10: a model or output name that is not UTF-8 once went raw into the header
    and index.json (exit 0, rejected by every loader). Such a name is refused before
    anything is written; UTF-8 names of files and tensors come back exactly, bidi marks
    included, through strict parsers (bytes decoded as UTF-8, then json.loads)."""
    folder = tmp_path / "latin1"
    folder.mkdir()
    src = folder / os.fsdecode(b"caf\xe9.onnx")
    utf8_named = bad_model(tmp_path)
    shutil.copyfile(utf8_named, src)
    for model, extra, status in ((src, [], 1), (src, ["--shard-size", "8"], 1),
                                 (utf8_named, ["-o", tmp_path / os.fsdecode(b"out\xff.safetensors"), "--shard-size", "8"], 2)):
        before = sorted(os.listdir(folder)), sorted(os.listdir(tmp_path))
        proc = run_cli(["export", model, "--to", "safetensors", *extra])
        assert proc.returncode == status, describe(proc)
        cases.assert_error_with_hint(proc)
        assert "UTF-8" in proc.stderr, describe(proc)
        assert (sorted(os.listdir(folder)), sorted(os.listdir(tmp_path))) == before, describe(proc)

    names = ("w\u202e\u00e9", "\u00fc\U0001f600")
    utf8 = tmp_path / "utf8"
    utf8.mkdir()
    src = utf8 / "mod\u00e8le.onnx"
    shutil.copyfile(bad_model(utf8, names=names), src)
    export(src, "--shard-size", "8", "--link")
    index = json.loads((utf8 / "mod\u00e8le.safetensors.index.json").read_bytes().decode("utf-8"))
    assert set(index["weight_map"]) == set(names)
    for name in names:
        header, tensors, _ = read_safetensors(utf8 / index["weight_map"][name])
        assert header["__metadata__"]["source"] == "mod\u00e8le.onnx"
        assert list(tensors) == [name]


def test_link_keeps_load_time_tensors_embedded(onnxstream, ort, tmp_path):
    """Issue 30.1: --link pointed every initializer at the safetensors file, the shape a
    Reshape reads and the axes of a Squeeze inside an If too, and ONNX Runtime refused the
    linked model. They stay embedded, as split keeps them (the safetensors file still holds
    every initializer)."""
    w = numpy_helper.from_array(np.arange(24, dtype=np.float32).reshape(2, 12), "w")
    shape = numpy_helper.from_array(np.array([4, 6], np.int64), "shape")
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
    squeeze = helper.make_graph([helper.make_node("Squeeze", ["u", "axes"], ["s"])], "then", [],
                                [helper.make_tensor_value_info("s", TensorProto.FLOAT, [4, 6])])
    identity = helper.make_graph([helper.make_node("Squeeze", ["u", "axes"], ["e"])], "else", [],
                                 [helper.make_tensor_value_info("e", TensorProto.FLOAT, [4, 6])])
    nodes = [helper.make_node("Add", ["x", "w"], ["a"]), helper.make_node("Reshape", ["a", "shape"], ["r"]),
             helper.make_node("Unsqueeze", ["r", "axes"], ["u"]),
             helper.make_node("If", ["c"], ["y"], then_branch=squeeze, else_branch=identity)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 12]),
                                           helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])], [w, shape, axes])
    src = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(src))
    report = export(src, "--link")
    assert report["kept_embedded"] == 2, report
    linked = tmp_path / "m.linked.onnx"
    stored = {t.name: t.data_location for t in onnx.load(str(linked), load_external_data=False).graph.initializer}
    assert stored == {"w": TensorProto.EXTERNAL, "shape": TensorProto.DEFAULT, "axes": TensorProto.DEFAULT}
    _, tensors, _ = read_safetensors(tmp_path / "m.safetensors")
    assert set(tensors) == {"w", "shape", "axes"}
    inputs = {"x": np.ones((2, 12), np.float32), "c": np.array(True)}
    refcheck.assert_same_outputs(refcheck.run_ort(src, inputs), refcheck.run_ort(linked, inputs))


def test_constant_node_weights_are_exported(onnxstream, ort, tmp_path):
    """Issue 30.9: a model whose weights are Constant nodes (all three PP-OCR models,
    Silero v5) was refused ("no initializers to export"). Each Constant's value is a weight,
    named by its output; --link keeps it in its node and the model still runs."""
    rng = np.random.default_rng(21)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float16)
    nodes = [helper.make_node("Constant", [], ["weight"], name="c0", value=numpy_helper.from_array(w, "anything")),
             helper.make_node("Constant", [], ["bias16"], name="c1", value=numpy_helper.from_array(b, "")),
             helper.make_node("Constant", [], ["label"], name="c2",
                              value=helper.make_tensor("s", TensorProto.STRING, [1], [b"text"])),
             helper.make_node("Cast", ["bias16"], ["bias"], to=TensorProto.FLOAT),
             helper.make_node("Gemm", ["X", "weight", "bias"], ["Y"], transB=1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 4])])
    src = tmp_path / "constants.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(src))
    proc = run_cli(["export", src, "--to", "safetensors", "--link", "--json"])
    assert proc.returncode == 0, describe(proc)
    header, tensors, _ = read_safetensors(tmp_path / "constants.safetensors")
    assert sorted(k for k in header if k != "__metadata__") == ["bias16", "weight"]
    assert_equal_tensors({"weight": w, "bias16": b}, tensors)
    linked = tmp_path / "constants.linked.onnx"
    onnx.checker.check_model(str(linked), full_check=True)
    x = {"X": rng.standard_normal((2, 3)).astype(np.float32)}
    assert refcheck.same_array(refcheck.run_ort(src, x)["Y"], refcheck.run_ort(linked, x)["Y"])


def test_paddle_model_exports(onnxstream, tmp_path):
    """ppocr mobile cls (Paddle2ONNX, every weight a Constant node): its float weights are
    in the file with the Constants' values, byte for byte."""
    path = refcheck.REPO_ROOT / "tests" / "models" / "node_modules" / "@gutenye" / "ocr-models" / "assets" / \
        "ch_ppocr_mobile_v2.0_cls_infer.onnx"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run scripts/setup_models.sh")
    out = tmp_path / "cls.safetensors"
    proc = run_cli(["export", path, "--to", "safetensors", "-o", out])
    assert proc.returncode == 0, describe(proc)
    _, tensors, _ = read_safetensors(out)
    model = onnx.load(str(path))
    expected = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in model.graph.node
                if n.op_type == "Constant" and n.attribute[0].name == "value"}
    assert len(tensors) == len(expected) > 100
    assert_equal_tensors(expected, tensors)

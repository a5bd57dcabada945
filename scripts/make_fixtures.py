#!/usr/bin/python3
"""Writes onnxstream's end-to-end fixtures, made by the reference libraries.

    /usr/bin/python3 scripts/make_fixtures.py OUTDIR

Needs Debian's python3-onnx (1.12), python3-numpy, python3-torch and python3-torchvision
(the first python3 on PATH may lack them). Everything is seeded: two runs write the same
bytes. Each case gets its own folder OUTDIR/<case>/ (replaced on every run), and
OUTDIR/manifest.json describes them all:

  {"format": 1, "generator_sha1": ..., "cases": [case, ...]}

Every path in a case (model, data, data_dirs, data_files, reference) is relative to OUTDIR,
and starts with the case's own folder, except reference, which may point elsewhere in
OUTDIR: copying OUTDIR/<case> to ROOT/<case> keeps all the paths valid under ROOT.

  name         the case, also its folder
  kind         "good" (every command must work) or "bad" (the command must fail)
  model        the .onnx file to pass as MODEL
  data         files to pass with --data FILE (in this order)
  data_dirs    folders to pass with --data-dir DIR
  description  what the case is about

good cases only:
  external     the model has external data (merge must embed it)
  data_files   the external data files it uses (their real paths)
  needs_args   without data/data_dirs the data cannot be found (merge exits 1)
  merge_args   extra flags merge must accept on this case (e.g. --strict)
  ort          ONNX Runtime can run it
  ort_direct   ONNX Runtime finds its data by itself (false: run the reference instead)
  split        the case is an input for split tests (embedded weights)
  bool_inputs  the model has bool inputs (tests run both values)
  reference    every tensor's values: an .npz keyed like refcheck.iter_tensors, or an
               embedded .onnx holding the same tensors (the torchvision models: their
               weights are large and already written once embedded)

bad cases only:
  commands     the commands that must fail on it (merge, and inspect/split for models
               that do not parse)
  args         extra flags for those commands
  exit_code    1
  error        a substring stderr must contain (case-insensitive), or null
  error_any    stderr must contain at least one of these (case-insensitive), if non-empty
  error_all    stderr must contain all of these (case-insensitive)
  lenient      optional {"args", "exit_code", "warning_any"}: the same model with these
               args instead must exit 0 and warn (checksum without --strict, size
               mismatch with --allow-size-mismatch)
  sparse_files files that are sparse (copy them with cp --sparse=always)
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import io
import json
import os
import shutil
import sys
import time
import warnings
import zlib
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests" / "e2e"))
import refcheck  # noqa: E402  (reads the tensors for the references)

OPSET = 13
FORMAT = 1
SEED = 20240601
OVER_2GB_BYTES = 2_200_000_000   # > 2**31 - 1 = 2,147,483,647
OVER_2GB_ELEMENTS = OVER_2GB_BYTES // 4
REFERENCES = "references"


def generator_sha1() -> str:
    """Changes whenever this script or the tensor walker changes (stale fixtures)."""
    h = hashlib.sha1()
    for p in (Path(__file__).resolve(), Path(refcheck.__file__).resolve()):
        h.update(p.read_bytes())
    return h.hexdigest()


# ---------------------------------------------------------------------------------------
# Building models with onnx.helper

def rand(rng: np.random.Generator, name: str, shape, dtype=np.float32) -> TensorProto:
    """A raw_data initializer of random values."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        value = rng.random(shape) < 0.5
    elif dtype.kind == "f":
        value = (rng.standard_normal(shape) * 0.1).astype(dtype)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        value = rng.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True).astype(dtype)
    else:
        raise ValueError(dtype)
    return numpy_helper.from_array(np.asarray(value), name)


def vinfo(name: str, elem_type: int, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, shape)


def model_of(graph: onnx.GraphProto, check: bool = True) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="onnxstream-fixtures", producer_version="1")
    if check:
        onnx.checker.check_model(model)
    return model


def conv_mlp(rng: np.random.Generator, name: str = "conv_mlp") -> onnx.ModelProto:
    """Conv(3→8, 3x3) + Relu + Flatten + two MatMul/Add layers: 1x3x16x16 → 1x10, ~270 KB."""
    inits = [
        rand(rng, "conv.weight", (8, 3, 3, 3)),
        rand(rng, "conv.bias", (8,)),
        rand(rng, "fc1.weight", (8 * 16 * 16, 32)),
        rand(rng, "fc1.bias", (32,)),
        rand(rng, "fc2.weight", (32, 10)),
        rand(rng, "fc2.bias", (10,)),
    ]
    nodes = [
        helper.make_node("Conv", ["X", "conv.weight", "conv.bias"], ["conv"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv"], ["relu1"]),
        helper.make_node("Flatten", ["relu1"], ["flat"]),
        helper.make_node("MatMul", ["flat", "fc1.weight"], ["mm1"]),
        helper.make_node("Add", ["mm1", "fc1.bias"], ["fc1"]),
        helper.make_node("Relu", ["fc1"], ["relu2"]),
        helper.make_node("MatMul", ["relu2", "fc2.weight"], ["mm2"]),
        helper.make_node("Add", ["mm2", "fc2.bias"], ["Y"]),
    ]
    graph = helper.make_graph(nodes, name, [vinfo("X", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [vinfo("Y", TensorProto.FLOAT, [1, 10])], inits)
    return model_of(graph)


def if_subgraph_model(rng: np.random.Generator) -> onnx.ModelProto:
    """If(cond) whose branches hold their own initializers and a Constant; the else branch
    holds a second If (subgraph depth 2)."""
    f = TensorProto.FLOAT
    then_graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["X", "then.weight"], ["then_mm"]),
            helper.make_node("Constant", [], ["then_scale"], value=rand(rng, "then.scale", (32,))),
            helper.make_node("Mul", ["then_mm", "then_scale"], ["then_mul"]),
            helper.make_node("Add", ["then_mul", "then.bias"], ["then_out"]),
        ],
        "then_branch", [], [vinfo("then_out", f, [2, 32])],
        [rand(rng, "then.weight", (32, 32)), rand(rng, "then.bias", (32,))])
    inner_then = helper.make_graph(
        [helper.make_node("Add", ["else_mm", "inner.add"], ["inner_then_out"])],
        "inner_then", [], [vinfo("inner_then_out", f, [2, 32])], [rand(rng, "inner.add", (32,))])
    inner_else = helper.make_graph(
        [helper.make_node("Sub", ["else_mm", "inner.sub"], ["inner_else_out"])],
        "inner_else", [], [vinfo("inner_else_out", f, [2, 32])], [rand(rng, "inner.sub", (32,))])
    else_graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["X", "else.weight"], ["else_mm"]),
            helper.make_node("If", ["cond"], ["else_out"], then_branch=inner_then, else_branch=inner_else),
        ],
        "else_branch", [], [vinfo("else_out", f, [2, 32])], [rand(rng, "else.weight", (32, 32))])
    graph = helper.make_graph(
        [
            helper.make_node("If", ["cond"], ["if_out"], then_branch=then_graph, else_branch=else_graph),
            helper.make_node("Add", ["if_out", "outer.bias"], ["Y"]),
        ],
        "if_subgraph",
        [vinfo("X", f, [2, 32]), vinfo("cond", TensorProto.BOOL, [])],
        [vinfo("Y", f, [2, 32])],
        [rand(rng, "outer.bias", (32,))])
    return model_of(graph)


def constant_nodes_model(rng: np.random.Generator) -> onnx.ModelProto:
    """Weights held by Constant nodes (attribute `value`), plus one initializer."""
    graph = helper.make_graph(
        [
            helper.make_node("Constant", [], ["c_weight"], value=rand(rng, "const.weight", (64, 64))),
            helper.make_node("MatMul", ["X", "c_weight"], ["mm"]),
            helper.make_node("Constant", [], ["c_bias"], value=rand(rng, "const.bias", (64,))),
            helper.make_node("Add", ["mm", "c_bias"], ["add"]),
            # In int64_data, so it stays embedded: ONNX Runtime's shape inference cannot read
            # an external Reshape shape ("Cannot parse data from external tensors").
            helper.make_node("Constant", [], ["c_shape"],
                             value=helper.make_tensor("const.shape", TensorProto.INT64, [2], [8, 32])),
            helper.make_node("Reshape", ["add", "c_shape"], ["reshaped"]),
            helper.make_node("Mul", ["reshaped", "init.scale"], ["Y"]),
        ],
        "constant_nodes",
        [vinfo("X", TensorProto.FLOAT, [4, 64])],
        [vinfo("Y", TensorProto.FLOAT, [8, 32])],
        [rand(rng, "init.scale", (32,))])
    return model_of(graph)


def cast_sum_model(name: str, tensors: list[TensorProto], length: int,
                   extra_small: TensorProto | None = None) -> onnx.ModelProto:
    """Y = X + Cast<float>(t) for every tensor t of shape [length]; with extra_small (shape
    [n]), also Y_small = X_small + extra_small."""
    nodes, inputs, outputs = [], [vinfo("X", TensorProto.FLOAT, [1, length])], []
    acc = "X"
    for i, t in enumerate(tensors):
        nodes.append(helper.make_node("Cast", [t.name], [f"cast{i}"], to=TensorProto.FLOAT))
        out = "Y" if i == len(tensors) - 1 else f"sum{i}"
        nodes.append(helper.make_node("Add", [acc, f"cast{i}"], [out]))
        acc = out
    outputs.append(vinfo("Y", TensorProto.FLOAT, [1, length]))
    inits = list(tensors)
    if extra_small is not None:
        n = extra_small.dims[0]
        inputs.append(vinfo("X_small", TensorProto.FLOAT, [n]))
        nodes.append(helper.make_node("Add", ["X_small", extra_small.name], ["Y_small"]))
        outputs.append(vinfo("Y_small", TensorProto.FLOAT, [n]))
        inits.append(extra_small)
    return model_of(helper.make_graph(nodes, name, inputs, outputs, inits))


def fp16_uint8_model(rng: np.random.Generator) -> onnx.ModelProto:
    n = 512
    tensors = [rand(rng, f"w.{np.dtype(t).name}", (n,), t) for t in
               (np.float16, np.uint8, np.int8, np.bool_, np.float64, np.int32, np.int64, np.uint16)]
    return cast_sum_model("fp16_uint8", tensors, n)


def typed_fields_model(rng: np.random.Generator) -> onnx.ModelProto:
    """Tensors in float_data, int32_data (fp16 bits, int8, uint8, int16, bool), int64_data,
    double_data, uint64_data; each >= 1024 bytes except t.small."""
    n = 1024
    P = TensorProto

    def typed(name, data_type, values):
        t = helper.make_tensor(name, data_type, [len(values)], values, raw=False)
        assert not t.HasField("raw_data")
        return t

    tensors = [
        typed("t.float", P.FLOAT, rng.standard_normal(n).astype(np.float32)),                 # float_data, 4096 B
        typed("t.fp16", P.FLOAT16, rng.standard_normal(n).astype(np.float16)),                # int32_data, 2048 B
        typed("t.int64", P.INT64, rng.integers(-10**12, 10**12, n)),                         # int64_data, 8192 B
        typed("t.double", P.DOUBLE, rng.standard_normal(n)),                                  # double_data, 8192 B
        typed("t.int8", P.INT8, rng.integers(-128, 128, n)),                                  # int32_data, 1024 B
        typed("t.uint8", P.UINT8, rng.integers(0, 256, n)),                                   # int32_data, 1024 B
        typed("t.int16", P.INT16, rng.integers(-32768, 32768, n)),                           # int32_data, 2048 B
        typed("t.bool", P.BOOL, (rng.random(n) < 0.5).tolist()),                             # int32_data, 1024 B
        typed("t.uint64", P.UINT64, rng.integers(0, 2**63, n, dtype=np.uint64)),              # uint64_data, 8192 B
    ]
    small = typed("t.small", P.FLOAT, rng.standard_normal(8).astype(np.float32))             # 32 B
    return cast_sum_model("typed_fields", tensors, n, extra_small=small)


def embedded_model(rng: np.random.Generator) -> onnx.ModelProto:
    """An MLP with embedded raw_data: tensors of 1 MiB and more (alignment), odd sizes,
    tensors under 1024 bytes, a Reshape whose shape is an int64 initializer, and
    Constant nodes (one small, one over the threshold)."""
    inits = [
        rand(rng, "fc1.weight", (256, 1024)),    # 1 MiB exactly
        rand(rng, "fc1.bias", (1024,)),          # 4096 B
        rand(rng, "fc2.weight", (1024, 300)),    # 1,228,800 B
        rand(rng, "fc2.bias", (300,)),           # 1200 B
        rand(rng, "fc3.weight", (300, 10)),      # 12,000 B
        rand(rng, "fc3.scale", (10,)),           # 40 B
        numpy_helper.from_array(np.array([2, 5], dtype=np.int64), "reshape.shape"),  # 16 B
        rand(rng, "odd.weight", (5, 253)),       # 5060 B, leaves the next offset unaligned
    ]
    nodes = [
        helper.make_node("MatMul", ["X", "fc1.weight"], ["mm1"]),
        helper.make_node("Add", ["mm1", "fc1.bias"], ["a1"]),
        helper.make_node("Relu", ["a1"], ["r1"]),
        helper.make_node("MatMul", ["r1", "fc2.weight"], ["mm2"]),
        helper.make_node("Add", ["mm2", "fc2.bias"], ["a2"]),
        helper.make_node("Relu", ["a2"], ["r2"]),
        helper.make_node("MatMul", ["r2", "fc3.weight"], ["mm3"]),
        helper.make_node("Mul", ["mm3", "fc3.scale"], ["s3"]),
        helper.make_node("Reshape", ["s3", "reshape.shape"], ["reshaped"]),
        helper.make_node("Constant", [], ["c_small"], value=rand(rng, "const.small", (2, 5))),  # 40 B
        helper.make_node("Add", ["reshaped", "c_small"], ["Y"]),
        helper.make_node("Constant", [], ["c_big"], value=rand(rng, "const.big", (5, 200))),   # 4000 B
        helper.make_node("MatMul", ["Y", "c_big"], ["mm_big"]),
        helper.make_node("MatMul", ["Y", "odd.weight"], ["Y2"]),
        helper.make_node("Concat", ["mm_big", "Y2"], ["Y3"], axis=1),
    ]
    graph = helper.make_graph(nodes, "embedded", [vinfo("X", TensorProto.FLOAT, [1, 256])],
                              [vinfo("Y", TensorProto.FLOAT, [2, 5]), vinfo("Y3", TensorProto.FLOAT, [2, 453])],
                              inits)
    return model_of(graph)


def everywhere_model(rng: np.random.Generator) -> onnx.ModelProto:
    """Tensors in the places onnx's own external-data helpers do not visit: a sparse
    initializer, a Constant inside a model-local FunctionProto, and the initializers of a
    TrainingInfoProto's initialization and algorithm graphs. All 1 KiB or more."""
    n, nnz = 256, 256
    f = TensorProto.FLOAT
    function = helper.make_function(
        "fixtures", "AddWeight", ["x"], ["y"],
        [helper.make_node("Constant", [], ["w"], value=rand(rng, "function.weight", (n,))),
         helper.make_node("Add", ["x", "w"], ["y"])],
        [helper.make_opsetid("", OPSET)])
    values = rand(rng, "sparse.weight", (nnz,))
    # Indices in int64_data, so they stay embedded: onnx's shape inference cannot read
    # external sparse indices.
    indices = helper.make_tensor("", TensorProto.INT64, [nnz], np.sort(rng.choice(2 * n, nnz, replace=False)))
    sparse = helper.make_sparse_tensor(values, indices, [2 * n])
    graph = helper.make_graph(
        [
            helper.make_node("AddWeight", ["X"], ["added"], domain="fixtures"),
            helper.make_node("Concat", ["added", "added"], ["doubled"], axis=0),
            helper.make_node("Add", ["doubled", "sparse.weight"], ["Y"]),
        ],
        "everywhere", [vinfo("X", f, [n])], [vinfo("Y", f, [2 * n])])
    graph.sparse_initializer.append(sparse)
    init_graph = helper.make_graph(
        [helper.make_node("Identity", ["train.init_value"], ["train.state"])],
        "training_initialization", [], [vinfo("train.state", f, [n])], [rand(rng, "train.init_value", (n,))])
    algo_graph = helper.make_graph(
        [helper.make_node("Add", ["train.state_in", "train.step"], ["train.state_out"])],
        "training_algorithm", [vinfo("train.state_in", f, [n])], [vinfo("train.state_out", f, [n])],
        [rand(rng, "train.step", (n,))])
    model = helper.make_model(graph, functions=[function],
                              opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("fixtures", 1)],
                              producer_name="onnxstream-fixtures", producer_version="1")
    info = model.training_info.add()
    info.initialization.CopyFrom(init_graph)
    info.algorithm.CopyFrom(algo_graph)
    onnx.checker.check_model(model)
    return model


def with_unknown_fields(model: onnx.ModelProto) -> onnx.ModelProto:
    """Adds fields no ONNX version defines (numbers 9001..) to the model, its graph and every
    initializer: a tool that rewrites the model must keep them."""
    def extra(message, text: bytes):
        wire = message.SerializeToString()
        # field 9001, wire type 2 (bytes), then field 9002, wire type 0 (varint 300)
        wire += bytes([0xCA, 0xB2, 0x04, len(text)]) + text + bytes([0xD0, 0xB2, 0x04, 0xAC, 0x02])
        message.ParseFromString(wire)

    for t in model.graph.initializer:
        extra(t, b"tensor:" + t.name.encode())
    extra(model.graph, b"graph")
    extra(model, b"model")
    return model


def torchvision_model(arch: str) -> onnx.ModelProto:
    import torch
    import torchvision
    torch.manual_seed(0)
    net = getattr(torchvision.models, arch)(weights=None).eval()
    buf = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(net, torch.randn(1, 3, 64, 64), buf, opset_version=OPSET,
                          input_names=["input"], output_names=["logits"])
    model = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model)
    return model


# ---------------------------------------------------------------------------------------
# Writing models

def save_embedded(model: onnx.ModelProto, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model.SerializeToString())


def save_external(model: onnx.ModelProto, path: Path, location: str | None, one_file: bool = True,
                  size_threshold: int = 0, convert_attribute: bool = True) -> None:
    """onnx.save_model with external data (the model is copied, not modified)."""
    model = copy.deepcopy(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    if location:
        (path.parent / location).parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=one_file,
                    location=location, size_threshold=size_threshold, convert_attribute=convert_attribute)


def edit_model_file(path: Path, edit) -> None:
    """Loads the .onnx (not its data), applies edit(model), writes the .onnx back."""
    model = onnx.load(str(path), load_external_data=False)
    edit(model)
    path.write_bytes(model.SerializeToString())


def set_external(tensor: TensorProto, **entries) -> None:
    """Makes the tensor external with exactly these external_data entries, in this order."""
    tensor.ClearField("raw_data")
    del tensor.external_data[:]
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in entries.items():
        entry = tensor.external_data.add()
        entry.key, entry.value = key, str(value)


def find_tensor(model: onnx.ModelProto, name: str) -> TensorProto:
    for key, tensor in refcheck.iter_tensors(model):
        if tensor.name == name:
            return tensor
    raise KeyError(name)


def externalize_by_hand(model: onnx.ModelProto, folder: Path, location: str) -> None:
    """Moves every raw_data tensor (wherever iter_tensors finds it) to folder/location, with
    offset and length, as onnx.save_model would if it visited them all."""
    with open(folder / location, "wb") as f:
        for _, t in refcheck.iter_tensors(model):
            if t.HasField("raw_data"):
                offset = f.tell()
                f.write(t.raw_data)
                set_external(t, location=location, offset=offset, length=len(t.raw_data))


def data_at_locations(path: Path) -> bool:
    """Every external location exists under the model's folder (where ONNX Runtime looks)."""
    model = onnx.load(str(path), load_external_data=False)
    return all((path.parent / refcheck.external_entries(t)["location"]).exists()
               for _, t in refcheck.iter_tensors(model) if refcheck.is_external(t))


def count_external(path: Path) -> int:
    model = onnx.load(str(path), load_external_data=False)
    return sum(refcheck.is_external(t) for _, t in refcheck.iter_tensors(model))


# ---------------------------------------------------------------------------------------
# The cases

class Writer:
    def __init__(self, out: Path):
        self.out = out
        self.cases: list[dict] = []
        self.current = ""
        self.draws = 0

    def rng(self) -> np.random.Generator:
        """A fresh generator seeded by the current case's name (and how many it drew
        before), so adding or changing one case does not change the others' bytes."""
        self.draws += 1
        return np.random.default_rng([SEED, zlib.crc32(self.current.encode()), self.draws])

    def folder(self, name: str) -> Path:
        """Makes OUTDIR/name afresh; the case being written from now on."""
        self.current, self.draws = name, 0
        d = self.out / name
        if d.is_symlink() or d.is_file():
            d.unlink()
        elif d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        return d

    def rel(self, p: Path) -> str:
        return p.relative_to(self.out).as_posix()

    def good(self, name: str, model: Path, description: str, *, data=(), data_dirs=(), data_files=(),
             needs_args=False, merge_args=(), ort=True, split=False, reference: str | None = None) -> None:
        """Records a good case and writes its reference. Call it while the external data is
        where onnx's loader finds it (beside the model), before moving it away."""
        onnx.checker.check_model(str(model))
        tensors = refcheck.load_tensors(model)
        if reference is None:
            (self.out / REFERENCES).mkdir(exist_ok=True)
            np.savez(self.out / REFERENCES / f"{name}.npz", **tensors)
        else:
            refcheck.assert_same_tensors(self.out / reference, tensors)
        loaded = onnx.load(str(model), load_external_data=False)
        external = any(refcheck.is_external(t) for _, t in refcheck.iter_tensors(loaded))
        bool_inputs = any(vi.type.tensor_type.elem_type == TensorProto.BOOL for vi in loaded.graph.input)
        self.cases.append({
            "name": name, "kind": "good", "model": self.rel(model), "description": description,
            "data": [self.rel(p) for p in data], "data_dirs": [self.rel(p) for p in data_dirs],
            "external": external, "data_files": [self.rel(p) for p in data_files],
            "needs_args": needs_args, "merge_args": list(merge_args), "ort": ort, "split": split,
            "bool_inputs": bool_inputs,
            "reference": reference or f"{REFERENCES}/{name}.npz",
        })

    def bad(self, name: str, model: Path, description: str, *, error: str | None, error_any=(), error_all=(),
            commands=("merge",), args=(), data=(), data_dirs=(), lenient=None, sparse_files=()) -> None:
        self.cases.append({
            "name": name, "kind": "bad", "model": self.rel(model), "description": description,
            "commands": list(commands), "args": list(args),
            "data": [self.rel(p) for p in data], "data_dirs": [self.rel(p) for p in data_dirs],
            "exit_code": 1, "error": error, "error_any": list(error_any), "error_all": list(error_all),
            "lenient": lenient, "sparse_files": [self.rel(p) for p in sparse_files],
        })


def write_good_cases(w: Writer) -> None:
    # one_file: everything in model.onnx.data, as onnx.save_model writes it.
    d = w.folder("one_file")
    save_external(conv_mlp(w.rng()), d / "model.onnx", "model.onnx.data")
    w.good("one_file", d / "model.onnx", "all tensors in one external file model.onnx.data",
           data_files=[d / "model.onnx.data"])

    # per_tensor: one file per tensor, `location` only (as torch writes large models).
    d = w.folder("per_tensor")
    save_external(conv_mlp(w.rng()), d / "model.onnx", None, one_file=False)

    def location_only(model):
        for _, t in refcheck.iter_tensors(model):
            if refcheck.is_external(t):
                set_external(t, location=refcheck.external_entries(t)["location"])
    edit_model_file(d / "model.onnx", location_only)
    files = sorted(p for p in d.iterdir() if p.name != "model.onnx")
    w.good("per_tensor", d / "model.onnx", "one data file per tensor, external_data holds only `location`",
           data_files=files)

    # data_subfolder: location data/weights.bin.
    d = w.folder("data_subfolder")
    save_external(conv_mlp(w.rng()), d / "model.onnx", "data/weights.bin")
    w.good("data_subfolder", d / "model.onnx", "location data/weights.bin, a subfolder of the model's folder",
           data_files=[d / "data" / "weights.bin"])

    # only_data_flag: the data has a name no rule finds, elsewhere: needs --data.
    d = w.folder("only_data_flag")
    save_external(conv_mlp(w.rng()), d / "model" / "model.onnx", "weights.bin")
    w.good("only_data_flag", d / "model" / "model.onnx",
           "location weights.bin, the file is ../elsewhere/blob.xyz: found only with --data",
           data=[d / "elsewhere" / "blob.xyz"], data_files=[d / "elsewhere" / "blob.xyz"], needs_args=True)
    (d / "elsewhere").mkdir()
    os.rename(d / "model" / "weights.bin", d / "elsewhere" / "blob.xyz")

    # data_dir: the data lives in another folder: needs --data-dir.
    d = w.folder("data_dir")
    save_external(conv_mlp(w.rng()), d / "model" / "model.onnx", "params.bin")
    w.good("data_dir", d / "model" / "model.onnx",
           "location params.bin, the file is in ../weights_dir: found with --data-dir",
           data_dirs=[d / "weights_dir"], data_files=[d / "weights_dir" / "params.bin"], needs_args=True)
    (d / "weights_dir").mkdir()
    os.rename(d / "model" / "params.bin", d / "weights_dir" / "params.bin")

    # renamed: location model.onnx.data, the file is model.data (<stem>.data).
    d = w.folder("renamed")
    save_external(conv_mlp(w.rng()), d / "model.onnx", "model.onnx.data")
    w.good("renamed", d / "model.onnx", "location model.onnx.data, the file on disk is model.data",
           data_files=[d / "model.data"])
    os.rename(d / "model.onnx.data", d / "model.data")

    # if_subgraph: If branches with their own external initializers, depth 2.
    d = w.folder("if_subgraph")
    save_external(if_subgraph_model(w.rng()), d / "model.onnx", "model.onnx.data")
    assert count_external(d / "model.onnx") == 7
    w.good("if_subgraph", d / "model.onnx",
           "If/else branches (and a nested If) with their own external initializers and a Constant",
           data_files=[d / "model.onnx.data"])

    # constant_nodes: Constant `value` tensors in external data.
    d = w.folder("constant_nodes")
    save_external(constant_nodes_model(w.rng()), d / "model.onnx", "model.onnx.data")
    assert count_external(d / "model.onnx") == 3
    w.good("constant_nodes", d / "model.onnx",
           "Constant nodes whose value tensors are external (the Reshape shape stays in int64_data)",
           data_files=[d / "model.onnx.data"])

    # fp16_uint8: 1- and 2-byte types (and others) external.
    d = w.folder("fp16_uint8")
    save_external(fp16_uint8_model(w.rng()), d / "model.onnx", "model.onnx.data")
    w.good("fp16_uint8", d / "model.onnx", "external float16, uint8, int8, bool, double, int32, int64, uint16",
           data_files=[d / "model.onnx.data"])

    # checksum_ok: a correct SHA-1 `checksum` (one tensor per file, so the digest of the
    # file and of the tensor's bytes agree): merge --strict must accept it.
    d = w.folder("checksum_ok")
    save_external(conv_mlp(w.rng()), d / "model.onnx", None, one_file=False)

    def add_checksums(model):
        for _, t in refcheck.iter_tensors(model):
            if refcheck.is_external(t):
                entries = refcheck.external_entries(t)
                digest = hashlib.sha1((d / entries["location"]).read_bytes()).hexdigest()
                set_external(t, **entries, checksum=digest)
    edit_model_file(d / "model.onnx", add_checksums)
    w.good("checksum_ok", d / "model.onnx", "every external tensor has a correct SHA-1 checksum",
           data_files=sorted(p for p in d.iterdir() if p.name != "model.onnx"), merge_args=["--strict"])

    # hf_cache: the Hugging Face cache layout, model and data are symlinks into blobs/.
    d = w.folder("hf_cache")
    repo = d / "models--org--tiny"
    snap = repo / "snapshots" / "0123456789abcdef"
    save_external(conv_mlp(w.rng()), snap / "model.onnx", "model.onnx.data")
    (repo / "blobs").mkdir()
    for fname in ("model.onnx", "model.onnx.data"):
        blob = hashlib.sha256((snap / fname).read_bytes()).hexdigest()
        os.rename(snap / fname, repo / "blobs" / blob)
        os.symlink(f"../../blobs/{blob}", snap / fname)
    data_blob = (snap / "model.onnx.data").resolve()
    w.good("hf_cache", snap / "model.onnx",
           "Hugging Face cache: snapshots/<rev>/model.onnx(.data) are symlinks into blobs/",
           data_files=[data_blob])

    # Embedded models (no external data): merge must reproduce them byte for byte; split inputs.
    d = w.folder("typed_fields")
    save_embedded(typed_fields_model(w.rng()), d / "model.onnx")
    w.good("typed_fields", d / "model.onnx",
           "embedded tensors in float_data/int32_data/int64_data/double_data/uint64_data", split=True)

    d = w.folder("embedded")
    save_embedded(embedded_model(w.rng()), d / "model.onnx")
    w.good("embedded", d / "model.onnx",
           "embedded raw_data MLP: >= 1 MiB tensors, odd sizes, small tensors, int64 Reshape shape, Constants",
           split=True)

    # everywhere: sparse initializer, FunctionProto and TrainingInfoProto tensors, external
    # (written by hand: onnx's helpers skip those places).
    d = w.folder("everywhere")
    model = everywhere_model(w.rng())
    embedded = w.folder("everywhere_embedded") / "model.onnx"
    save_embedded(model, embedded)
    externalize_by_hand(model, d, "model.onnx.data")
    save_embedded(model, d / "model.onnx")
    assert count_external(d / "model.onnx") == 4
    w.good("everywhere", d / "model.onnx",
           "external tensors in a sparse initializer, a FunctionProto's Constant and a TrainingInfoProto",
           data_files=[d / "model.onnx.data"])
    w.good("everywhere_embedded", embedded, "the everywhere model with its tensors embedded",
           split=True, reference=f"{REFERENCES}/everywhere.npz")

    # unknown_fields: fields no ONNX version defines, on the model, graph and tensors.
    d = w.folder("unknown_fields")
    model = with_unknown_fields(conv_mlp(w.rng()))
    embedded = w.folder("unknown_fields_embedded") / "model.onnx"
    save_embedded(model, embedded)
    save_external(model, d / "model.onnx", "model.onnx.data")
    w.good("unknown_fields", d / "model.onnx", "unknown fields (9001, 9002) in model, graph and tensors",
           data_files=[d / "model.onnx.data"])
    w.good("unknown_fields_embedded", embedded, "unknown fields, tensors embedded", split=True,
           reference=f"{REFERENCES}/unknown_fields.npz")

    # multi_data_flags: two data files, each found by its own --data (matched by name).
    d = w.folder("multi_data_flags")
    model = conv_mlp(w.rng())
    save_external(model, d / "model" / "model.onnx", "first.bin")

    def two_files(m):
        names = [t.name for t in m.graph.initializer]
        with open(d / "model" / "first.bin", "rb") as f:
            blob = f.read()
        with open(d / "model" / "first.bin", "wb") as first, open(d / "model" / "second.bin", "wb") as second:
            for i, t in enumerate(m.graph.initializer):
                e = refcheck.external_entries(t)
                data = blob[int(e["offset"]):int(e["offset"]) + int(e["length"])]
                target, location = (first, "first.bin") if i % 2 == 0 else (second, "second.bin")
                offset = target.tell()
                target.write(data)
                set_external(t, location=location, offset=offset, length=len(data))
        assert len(names) == 6
    edit_model_file(d / "model" / "model.onnx", two_files)
    w.good("multi_data_flags", d / "model" / "model.onnx",
           "two data files first.bin and second.bin in ../elsewhere, passed as two --data",
           data=[d / "elsewhere" / "first.bin", d / "elsewhere" / "second.bin"],
           data_files=[d / "elsewhere" / "first.bin", d / "elsewhere" / "second.bin"], needs_args=True)
    (d / "elsewhere").mkdir()
    for fname in ("first.bin", "second.bin"):
        os.rename(d / "model" / fname, d / "elsewhere" / fname)

    # data_dir_filename: location sub/params.bin, the file is <data-dir>/params.bin.
    d = w.folder("data_dir_filename")
    save_external(conv_mlp(w.rng()), d / "model" / "model.onnx", "sub/params.bin")
    w.good("data_dir_filename", d / "model" / "model.onnx",
           "location sub/params.bin, the file is ../weights_dir/params.bin: --data-dir, by file name",
           data_dirs=[d / "weights_dir"], data_files=[d / "weights_dir" / "params.bin"], needs_args=True)
    (d / "weights_dir").mkdir()
    os.rename(d / "model" / "sub" / "params.bin", d / "weights_dir" / "params.bin")
    (d / "model" / "sub").rmdir()

    # only_data_like: the one data-like file in the model's folder has an unrelated name.
    d = w.folder("only_data_like")
    save_external(conv_mlp(w.rng()), d / "model.onnx", "weights.bin")
    w.good("only_data_like", d / "model.onnx",
           "location weights.bin, the folder's only data file is export-v2.data", data_files=[d / "export-v2.data"])
    os.rename(d / "weights.bin", d / "export-v2.data")

    # symlink_inside: the data file is a symlink that stays in the model's folder.
    d = w.folder("symlink_inside")
    save_external(conv_mlp(w.rng()), d / "model.onnx", "model.onnx.data")
    (d / "store").mkdir()
    os.rename(d / "model.onnx.data", d / "store" / "weights.bin")
    os.symlink("store/weights.bin", d / "model.onnx.data")
    w.good("symlink_inside", d / "model.onnx",
           "model.onnx.data is a symlink to store/weights.bin, inside the model's folder",
           data_files=[d / "store" / "weights.bin"])

    # torchvision: seeded random weights, one embedded and one external copy each.
    for arch in ("resnet18", "mobilenet_v2"):
        model = torchvision_model(arch)
        d = w.folder(f"{arch}_embedded")
        save_embedded(model, d / "model.onnx")
        reference = w.rel(d / "model.onnx")
        w.good(f"{arch}_embedded", d / "model.onnx", f"torchvision {arch}, weights embedded",
               split=True, reference=reference)
        d = w.folder(arch)
        save_external(model, d / "model.onnx", "model.onnx.data", size_threshold=1024, convert_attribute=False)
        w.good(arch, d / "model.onnx", f"torchvision {arch}, tensors >= 1 KiB in model.onnx.data",
               data_files=[d / "model.onnx.data"], reference=reference)


def tiny_external_model(rng, name: str, tensor_name: str = "weight", shape=(16, 16)) -> onnx.ModelProto:
    """Y = X + weight (+ bias): a small model for the bad cases."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["X", tensor_name], ["s"]), helper.make_node("Add", ["s", "bias"], ["Y"])],
        name, [vinfo("X", TensorProto.FLOAT, list(shape))], [vinfo("Y", TensorProto.FLOAT, list(shape))],
        [rand(rng, tensor_name, shape), rand(rng, "bias", (shape[-1],))])
    return model_of(graph)


NOT_ONNX_WORDS = ["not an onnx", "not a valid", "parse", "invalid", "malformed", "corrupt", "truncated",
                  "protobuf", "wire", "unexpected end"]


def write_bad_cases(w: Writer) -> None:
    # Data file cut short.
    d = w.folder("bad_truncated_data")
    save_external(conv_mlp(w.rng()), d / "model.onnx", "model.onnx.data")
    data = d / "model.onnx.data"
    with open(data, "r+b") as f:
        f.truncate(data.stat().st_size // 2)
    w.bad("bad_truncated_data", d / "model.onnx", "model.onnx.data cut to half its size",
          error="probably incomplete")

    # Data file missing (and no other data-like file around).
    d = w.folder("bad_missing_data")
    save_external(tiny_external_model(w.rng(), "missing"), d / "model.onnx", "missing_weights.data")
    (d / "missing_weights.data").unlink()
    w.bad("bad_missing_data", d / "model.onnx", "location missing_weights.data does not exist",
          error="missing_weights.data", error_any=["--data"])

    # location ../secret.bin: the file exists one level up; refused anyway.
    for name, also_inside in (("bad_traversal", False), ("bad_traversal_fallback", True)):
        d = w.folder(name)
        save_external(tiny_external_model(w.rng(), "traversal"), d / "model" / "model.onnx", "secret.bin")
        os.rename(d / "model" / "secret.bin", d / "secret.bin")
        if also_inside:
            shutil.copyfile(d / "secret.bin", d / "model" / "secret.bin")

        def traverse(model):
            for _, t in refcheck.iter_tensors(model):
                if refcheck.is_external(t):
                    entries = refcheck.external_entries(t)
                    entries["location"] = "../secret.bin"
                    set_external(t, **entries)
        edit_model_file(d / "model" / "model.onnx", traverse)
        w.bad(name, d / "model" / "model.onnx",
              "location ../secret.bin leaves the model's folder (the file exists there"
              + (", and secret.bin is in the model's folder too)" if also_inside else ")"),
              error="../secret.bin")

    # location /etc/passwd.
    d = w.folder("bad_absolute")
    model = tiny_external_model(w.rng(), "absolute", shape=(4, 4))
    set_external(find_tensor(model, "weight"), location="/etc/passwd")
    save_embedded(model, d / "model.onnx")
    w.bad("bad_absolute", d / "model.onnx", "location /etc/passwd is absolute", error="/etc/passwd")

    # length != dims x element size.
    d = w.folder("bad_size_mismatch")
    model = tiny_external_model(w.rng(), "mismatch", tensor_name="mismatch_weight")
    t = find_tensor(model, "mismatch_weight")
    (d / "model.onnx.data").write_bytes(t.raw_data[:1000])   # 16x16 float needs 1024
    set_external(t, location="model.onnx.data", offset=0, length=1000)
    save_embedded(model, d / "model.onnx")
    w.bad("bad_size_mismatch", d / "model.onnx",
          "mismatch_weight is 16x16 float (1024 bytes) but length and file say 1000",
          error="mismatch_weight",
          lenient={"args": ["--allow-size-mismatch"], "exit_code": 0, "warning_any": ["mismatch_weight"]})

    # Wrong SHA-1 checksum: a warning, an error with --strict.
    d = w.folder("bad_checksum")
    model = tiny_external_model(w.rng(), "checksum", tensor_name="checked_weight")
    save_external(model, d / "model.onnx", None, one_file=False)
    wrong = hashlib.sha1(b"these are not the bytes").hexdigest()

    def bad_checksum(model):
        t = find_tensor(model, "checked_weight")
        set_external(t, **refcheck.external_entries(t), checksum=wrong)
    edit_model_file(d / "model.onnx", bad_checksum)
    w.bad("bad_checksum", d / "model.onnx", "checked_weight has a wrong SHA-1 checksum",
          args=["--strict"], error=None, error_any=["checksum", "sha-1", "sha1", "checked_weight"],
          lenient={"args": [], "exit_code": 0, "warning_any": ["checksum", "sha-1", "sha1", "checked_weight"]})

    # Merged size over 2 GB: a sparse 2.2 GB data file behind one tensor.
    d = w.folder("bad_over_2gb")
    graph = helper.make_graph(
        [helper.make_node("Identity", ["huge.weight"], ["Y"])], "over_2gb", [],
        [vinfo("Y", TensorProto.FLOAT, [OVER_2GB_ELEMENTS])],
        [TensorProto(name="huge.weight", data_type=TensorProto.FLOAT, dims=[OVER_2GB_ELEMENTS])])
    model = model_of(graph, check=False)
    set_external(model.graph.initializer[0], location="huge.data", offset=0, length=OVER_2GB_BYTES)
    save_embedded(model, d / "model.onnx")
    with open(d / "huge.data", "wb") as f:
        f.truncate(OVER_2GB_BYTES)
    onnx.checker.check_model(str(d / "model.onnx"))
    w.bad("bad_over_2gb", d / "model.onnx",
          "one float tensor of 2.2 GB in a sparse huge.data: the merged model cannot be protobuf",
          error=None, error_any=["2 GB", "2GB", "2 GiB", "2GiB", "2147483647", "2^31", "external", "repack"],
          sparse_files=[d / "huge.data"])

    # Files that are not ONNX models.
    d = w.folder("bad_random_bytes")
    (d / "random.onnx").write_bytes(w.rng().bytes(4096))
    d2 = w.folder("bad_text")
    (d2 / "text.onnx").write_text("This is not an ONNX model.\nIt is a text file.\n")
    d3 = w.folder("bad_empty")
    (d3 / "empty.onnx").write_bytes(b"")
    d4 = w.folder("bad_truncated_model")
    whole = embedded_model(w.rng()).SerializeToString()
    (d4 / "cut.onnx").write_bytes(whole[: len(whole) // 2])
    for case, path, extra in (("bad_random_bytes", d / "random.onnx", []),
                              ("bad_text", d2 / "text.onnx", []),
                              ("bad_empty", d3 / "empty.onnx", ["empty", "no graph"]),
                              ("bad_truncated_model", d4 / "cut.onnx", [])):
        if path.stat().st_size:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")   # protobuf warns before it fails
                    onnx.load_model_from_string(path.read_bytes())
            except Exception:
                pass
            else:
                raise AssertionError(f"{path}: protobuf parses it; pick other bytes")
        w.bad(case, path, f"{path.name} is not an ONNX model", error=None,
              error_any=[path.name] + extra + NOT_ONNX_WORDS, commands=["merge", "inspect", "split"])

    # Broken external_data entries: each must be an error, never a crash.
    broken = [
        ("bad_offset_garbage", "offset is not a number", {"offset": "abc", "length": "1024"}, ["offset", "abc"]),
        ("bad_offset_overflow", "offset + length overflows 64 bits",
         {"offset": str(2**64 - 512), "length": "1024"}, ["offset", "probably incomplete", "range"]),
        ("bad_length_negative", "length is negative", {"offset": "0", "length": "-1024"}, ["length", "-1024"]),
        ("bad_no_location", "external tensor without a location key",
         {"location": None, "offset": "0", "length": "1024"}, ["location"]),
        ("bad_empty_location", "location is the empty string", {"location": "", "offset": "0", "length": "1024"},
         ["location"]),
    ]
    for name, description, entries, words in broken:
        d = w.folder(name)
        model = tiny_external_model(w.rng(), name, tensor_name="broken_weight")
        (d / "model.onnx.data").write_bytes(find_tensor(model, "broken_weight").raw_data)
        entries = {"location": "model.onnx.data", **entries}   # location None: no location key
        set_external(find_tensor(model, "broken_weight"), **{k: v for k, v in entries.items() if v is not None})
        save_embedded(model, d / "model.onnx")
        w.bad(name, d / "model.onnx", description, error=None, error_any=["broken_weight"] + words)

    # dims whose product overflows 64 bits.
    d = w.folder("bad_dims_overflow")
    model = tiny_external_model(w.rng(), "dims", tensor_name="huge_dims")
    t = find_tensor(model, "huge_dims")
    (d / "model.onnx.data").write_bytes(t.raw_data)
    set_external(t, location="model.onnx.data", offset=0, length=len(t.raw_data))
    del t.dims[:]
    t.dims.extend([2**40, 2**40, 16])
    save_embedded(model, d / "model.onnx")
    w.bad("bad_dims_overflow", d / "model.onnx", "huge_dims has dims 2^40 x 2^40 x 16 (overflows)",
          error=None, error_any=["huge_dims", "overflow", "dims"])

    # The location names a folder.
    d = w.folder("bad_data_is_directory")
    save_external(tiny_external_model(w.rng(), "directory"), d / "model.onnx", "weights.bin")
    (d / "weights.bin").unlink()
    (d / "weights.bin").mkdir()
    w.bad("bad_data_is_directory", d / "model.onnx", "location weights.bin is a directory", error="weights.bin")

    # A data file reached through a symlink that leaves the model's folder.
    d = w.folder("bad_symlink_escape")
    save_external(tiny_external_model(w.rng(), "symlink"), d / "model" / "model.onnx", "model.onnx.data")
    (d / "outside").mkdir()
    os.rename(d / "model" / "model.onnx.data", d / "outside" / "real.data")
    os.symlink("../outside/real.data", d / "model" / "model.onnx.data")
    w.bad("bad_symlink_escape", d / "model" / "model.onnx",
          "model.onnx.data is a symlink to ../outside/real.data, outside the model's folder",
          error=None, error_all=["model.onnx.data", "real.data"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path)
    args = parser.parse_args()
    out: Path = args.outdir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()

    if (out / REFERENCES).exists():
        shutil.rmtree(out / REFERENCES)
    w = Writer(out)
    write_good_cases(w)
    write_bad_cases(w)
    for case in w.cases:
        if case["kind"] == "good":
            case["ort_direct"] = data_at_locations(out / case["model"])
    manifest = {"format": FORMAT, "generator": "scripts/make_fixtures.py", "generator_sha1": generator_sha1(),
                "onnx_version": onnx.__version__, "cases": w.cases}
    tmp = out / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=1) + "\n")
    os.replace(tmp, out / "manifest.json")
    print(f"make_fixtures: {len(w.cases)} cases in {out} ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

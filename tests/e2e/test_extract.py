"""extract --outputs NAMES [--inputs NAMES], judged by python-onnx and ONNX Runtime.

- python-onnx's onnx.utils.extract_model on the same cut is the reference: the same nodes
  (op types and names, in the same order), the same initializers (names and values,
  storage aside), and ONNX Runtime gives both models the same outputs bit for bit. On
  real models: Silero VAD v5 (an If whose branches read outer values), a torchvision
  ResNet-18 (whole, and a block cut out between two intermediate values), the small
  transformer fixture, and ResNet-18 with external data.
- External data: only the kept tensors' bytes go to <output file name>.data; with
  --reuse-data the output points at the original data file and no data file is written.
- Bad input (no output, a name that is no value, inputs that do not cut the graph, an
  If's outer reads left uncut): a clear error naming the value, a non-zero exit, nothing
  written, the input unchanged.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import onnx
import onnx.utils
import pytest
from onnx import numpy_helper

import refcheck
from refcheck import describe, run_cli
from test_passes import ort_run, passes_dir
from test_real_models import npm_model, silero_inputs

RESNET_BLOCK_IN = "/layer1/layer1.0/relu_1/Relu_output_0"
RESNET_BLOCK_OUT = "/layer1/layer1.1/relu/Relu_output_0"
# One branch of a residual block: the skip connection beside it still reaches back to `input`.
RESNET_ONE_BRANCH = "/layer1/layer1.1/conv1/Conv_output_0"

ONNX_TYPES = {1: np.float32, 6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64}


def folder_hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def extract(model: Path, out: Path, *extra: str) -> dict:
    before = folder_hashes(model.parent)
    proc = run_cli(["extract", model, "-o", out, "--json", *extra])
    assert proc.returncode == 0, describe(proc)
    after = {k: v for k, v in folder_hashes(model.parent).items() if k in before}
    assert after == before, "extract changed its input files"
    return json.loads(proc.stdout)


def initializer_values(path: Path) -> dict[str, np.ndarray]:
    model = onnx.load(str(path))  # with external data, from beside the model
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def random_inputs(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    """Inputs for every graph input of a model whose inputs have static shapes (python-onnx
    inferred them for the reference)."""
    rng = np.random.default_rng(seed)
    initializers = {t.name for t in model.graph.initializer}
    out = {}
    for vi in model.graph.input:
        if vi.name in initializers:
            continue
        t = vi.type.tensor_type
        dims = [d.dim_value if d.dim_value > 0 else 1 for d in t.shape.dim]
        dtype = ONNX_TYPES[t.elem_type]
        if dtype == np.int64:
            out[vi.name] = rng.integers(0, 50, dims).astype(np.int64)
        else:
            out[vi.name] = (rng.standard_normal(dims) * 0.5).astype(dtype)
    return out


def without_value_info(node: onnx.NodeProto) -> bytes:
    """The node's bytes without what python-onnx's shape inference adds to the subgraphs in
    it (at any depth): their value_info and the types of their outputs."""
    node = onnx.NodeProto.FromString(node.SerializeToString())
    pending = [node]
    while pending:
        for attr in pending.pop().attribute:
            for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                del g.value_info[:]
                for output in g.output:
                    output.ClearField("type")
                pending.extend(g.node)
    return node.SerializeToString()


def compare_with_onnx(model: Path, ours: Path, tmp_path: Path, inputs: list[str], outputs: list[str],
                      feeds: dict | None = None) -> None:
    """ours against onnx.utils.extract_model's model of the same cut: nodes, initializers,
    interface names, and ONNX Runtime's outputs."""
    reference = tmp_path / "reference.onnx"
    onnx.utils.extract_model(str(model), str(reference), inputs, outputs, check_model=False)
    a = onnx.load(str(ours), load_external_data=False)
    b = onnx.load(str(reference), load_external_data=False)
    # The same nodes in the same order (both keep the input's topological order).
    assert [(n.op_type, n.name) for n in a.graph.node] == [(n.op_type, n.name) for n in b.graph.node]
    # Byte for byte, but for the value_info python-onnx's shape inference adds inside subgraphs.
    assert [without_value_info(n) for n in a.graph.node] == [without_value_info(n) for n in b.graph.node]
    assert [f.name for f in a.functions] == [f.name for f in b.functions]
    ours_values, reference_values = initializer_values(ours), initializer_values(reference)
    assert sorted(ours_values) == sorted(reference_values)
    for name, value in reference_values.items():
        assert ours_values[name].dtype == value.dtype and ours_values[name].tobytes() == value.tobytes(), name
    assert [i.name for i in a.graph.input] == inputs
    assert [o.name for o in a.graph.output] == outputs
    if feeds is None:
        feeds = random_inputs(b, seed=5)
    got, expected = ort_run(ours, feeds), ort_run(reference, feeds)
    assert sorted(got) == sorted(expected) == sorted(outputs)
    for name in outputs:
        assert got[name].dtype == expected[name].dtype and np.array_equal(got[name], expected[name]), name


# ---------------------------------------------------------------- against python-onnx

def test_resnet18_whole_is_the_model_byte_for_byte(tmp_path, onnxstream):
    """Extracting a model's own outputs from its own inputs changes nothing."""
    model = passes_dir() / "resnet18" / "model.onnx"
    out = tmp_path / "whole.onnx"
    r = extract(model, out, "--outputs", "logits")
    assert r["nodes_dropped"] == 0 and r["initializers_dropped"] == 0
    assert out.read_bytes() == model.read_bytes()


def test_resnet18_block_matches_onnx(tmp_path, onnxstream):
    """A residual block cut out between two intermediate values: they become the graph's
    input and output, typed (here: element type, as our inference does not reach them)."""
    model = passes_dir() / "resnet18" / "model.onnx"
    out = tmp_path / "block.onnx"
    r = extract(model, out, "--inputs", RESNET_BLOCK_IN, "--outputs", RESNET_BLOCK_OUT)
    assert (r["nodes_kept"], r["initializers_kept"]) == (3, 5), r
    assert r["inputs"][0]["name"] == RESNET_BLOCK_IN and r["outputs"][0]["name"] == RESNET_BLOCK_OUT
    a = onnx.load(str(out))
    assert a.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert a.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    compare_with_onnx(model, out, tmp_path, [RESNET_BLOCK_IN], [RESNET_BLOCK_OUT])


def test_resnet18_head_matches_onnx(tmp_path, onnxstream):
    """From the model's input to an early value: the rest of the network and its weights go."""
    model = passes_dir() / "resnet18" / "model.onnx"
    out = tmp_path / "head.onnx"
    r = extract(model, out, "--outputs", RESNET_BLOCK_IN)
    assert r["nodes_dropped"] > 50 and r["initializers_dropped"] > 80
    assert out.stat().st_size < model.stat().st_size / 10
    compare_with_onnx(model, out, tmp_path, ["input"], [RESNET_BLOCK_IN])


def test_small_transformer_matches_onnx(tmp_path, onnxstream):
    model = passes_dir() / "small_transformer" / "model.onnx"
    m = onnx.load(str(model), load_external_data=False)
    # The output of the middle MatMul: what the first half of the network computes.
    matmuls = [n for n in m.graph.node if n.op_type == "MatMul"]
    middle = matmuls[len(matmuls) // 2].output[0]
    out = tmp_path / "half.onnx"
    r = extract(model, out, "--outputs", middle)
    assert r["nodes_dropped"] > 0
    feeds = {"tokens": np.random.default_rng(3).integers(0, 50, (2, 5)).astype(np.int64)}
    compare_with_onnx(model, out, tmp_path, ["tokens"], [middle], feeds)


def test_silero_v5_if_with_outer_reads_matches_onnx(tmp_path, onnxstream):
    """Silero VAD v5: its If's branches read `input` and `state` from the main graph (no
    node there does): extracting `output` keeps the If whole and those inputs with it."""
    model = tmp_path / "silero_vad_v5.onnx"
    model.write_bytes(npm_model("silero_vad_v5.onnx").read_bytes())
    out = tmp_path / "vad.onnx"
    r = extract(model, out, "--outputs", "output")
    assert r["nodes_kept"] == 4 and r["nodes_dropped"] == 1  # the Identity to stateN goes
    assert [i["name"] for i in r["inputs"]] == ["input", "state", "sr"]
    compare_with_onnx(model, out, tmp_path, ["input", "state", "sr"], ["output"], silero_inputs("v5"))


def test_silero_v5_inputs_that_miss_the_if_outer_reads_are_refused(tmp_path, onnxstream):
    """Only `sr` given: the If's branches still read `input` and `state`; the error names
    them (python-onnx would write a model that reads undefined values)."""
    model = tmp_path / "silero_vad_v5.onnx"
    model.write_bytes(npm_model("silero_vad_v5.onnx").read_bytes())
    before = folder_hashes(tmp_path)
    proc = run_cli(["extract", model, "--inputs", "sr", "--outputs", "output"])
    assert proc.returncode != 0, describe(proc)
    assert "do not cut the graph" in proc.stderr and "'input'" in proc.stderr and "'state'" in proc.stderr, proc.stderr
    assert folder_hashes(tmp_path) == before


# ---------------------------------------------------------------- external data

def test_external_data_copies_only_the_kept_tensors(tmp_path, onnxstream):
    source = passes_dir() / "resnet18_external"
    folder = tmp_path / "in"
    folder.mkdir()
    for p in source.iterdir():
        (folder / p.name).write_bytes(p.read_bytes())
    model = folder / "model.onnx"
    out = tmp_path / "out" / "head.onnx"
    out.parent.mkdir()
    r = extract(model, out, "--outputs", RESNET_BLOCK_IN)
    assert r["storage"] == "external"
    data = out.parent / "head.onnx.data"
    assert [Path(f["path"]).name for f in r["data_files"]] == ["head.onnx.data"] and data.is_file()
    a = onnx.load(str(out), load_external_data=False)
    kept = 0
    for t in a.graph.initializer:
        if refcheck.is_external(t):
            assert refcheck.external_entries(t)["location"] == "head.onnx.data"
            kept += int(refcheck.external_entries(t)["length"])
    assert kept == r["bytes_copied"] > 0
    assert data.stat().st_size < (folder / "model.onnx.data").stat().st_size / 10
    compare_with_onnx(model, out, tmp_path, ["input"], [RESNET_BLOCK_IN])


def test_reuse_data_points_at_the_original_file(tmp_path, onnxstream):
    source = passes_dir() / "resnet18_external"
    for p in source.iterdir():
        (tmp_path / p.name).write_bytes(p.read_bytes())
    model = tmp_path / "model.onnx"
    out = tmp_path / "head.onnx"
    r = extract(model, out, "--outputs", RESNET_BLOCK_IN, "--reuse-data")
    assert r["storage"] == "reuse-data" and r["data_files"] == [] and r["bytes_copied"] == 0
    assert not (tmp_path / "head.onnx.data").exists()
    a = onnx.load(str(out), load_external_data=False)
    locations = {refcheck.external_entries(t)["location"] for t in a.graph.initializer if refcheck.is_external(t)}
    assert locations == {"model.onnx.data"}
    compare_with_onnx(model, out, tmp_path, ["input"], [RESNET_BLOCK_IN])


# ---------------------------------------------------------------- refusals

@pytest.mark.parametrize("args, words", [
    (["--outputs", ""], "--outputs needs a value"),
    (["--outputs", ","], "no output to extract"),
    (["--outputs", "no_such_value"], "nothing computes the output 'no_such_value'"),
    (["--outputs", "logits", "--inputs", "no_such_value"], "the input 'no_such_value' is no value"),
    (["--outputs", "logits", "--inputs", RESNET_ONE_BRANCH], "do not cut the graph"),
    (["--outputs", "logits,logits"], "twice"),
], ids=["empty-outputs", "no-outputs", "unknown-output", "unknown-input", "not-a-cut", "twice"])
def test_bad_names_are_refused_and_nothing_is_written(tmp_path, onnxstream, args, words):
    model = tmp_path / "model.onnx"
    model.write_bytes((passes_dir() / "resnet18" / "model.onnx").read_bytes())
    before = folder_hashes(tmp_path)
    proc = run_cli(["extract", model, *args])
    assert proc.returncode != 0, describe(proc)
    assert proc.stderr.startswith("onnxstream: error: ") and words in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) >= 2, "a hint line"
    assert folder_hashes(tmp_path) == before, "nothing written, the input unchanged"


def test_not_a_cut_names_the_graph_input_reached(tmp_path, onnxstream):
    """The cut misses the path from `input` to the output: the error says which value the
    kept part reaches that is neither computed nor given."""
    model = passes_dir() / "resnet18" / "model.onnx"
    proc = run_cli(["extract", model, "-o", tmp_path / "x.onnx", "--inputs", RESNET_ONE_BRANCH, "--outputs", "logits"])
    assert proc.returncode == 2, describe(proc)  # a usage error: the names given do not fit the model
    assert "'input'" in proc.stderr, proc.stderr
    assert not (tmp_path / "x.onnx").exists()


# ---------------------------------------------------------------- outer-scope reads

def outer_scope_feeds(flag: bool) -> dict:
    x = np.random.default_rng(11).standard_normal((2, 4)).astype(np.float32)
    return {"X": x, "flag": np.array(flag)}


@pytest.mark.parametrize("flag", [True, False])
def test_subgraph_outer_reads_keep_their_producers(tmp_path, onnxstream, flag):
    """The If's branches read `a` (Relu) and `b` (Sigmoid), the Loop's body `c` (Tanh), none
    of them as a node input of the main graph: their producers are kept (python-onnx 1.12
    drops them: its model reads values nothing defines), Exp and the final Add go, and
    if_out + loop_out is the original model's Y."""
    model = passes_dir() / "outer_scope" / "model.onnx"
    out = tmp_path / "parts.onnx"
    r = extract(model, out, "--outputs", "if_out,loop_out")
    kept = [n.op_type for n in onnx.load(str(out)).graph.node]
    assert kept == ["Relu", "Sigmoid", "Tanh", "If", "Constant", "Constant", "Loop"], kept
    assert (r["nodes_kept"], r["nodes_dropped"]) == (7, 2)
    got = ort_run(out, outer_scope_feeds(flag))
    expected = ort_run(model, outer_scope_feeds(flag))
    assert np.array_equal(got["if_out"] + got["loop_out"], expected["Y"])


def test_an_outer_read_given_as_input_stops_the_walk(tmp_path, onnxstream):
    """`b`, which only the else branch reads, given as an input: Sigmoid goes, `b` becomes a
    graph input typed by inference ([2, 4] float, from X through Sigmoid), and feeding it
    sigmoid(X) gives the original's if_out."""
    model = passes_dir() / "outer_scope" / "model.onnx"
    out = tmp_path / "if.onnx"
    r = extract(model, out, "--inputs", "X,flag,b", "--outputs", "if_out")
    assert [n.op_type for n in onnx.load(str(out)).graph.node] == ["Relu", "If"]
    assert r["inputs"][2] == {"name": "b", "type_from": "inferred"}
    b = onnx.load(str(out)).graph.input[2].type.tensor_type
    assert b.elem_type == onnx.TensorProto.FLOAT and [d.dim_value for d in b.shape.dim] == [2, 4]
    # If's outputs: typed from the branch's output (the shape too once inference reaches If).
    assert r["outputs"][0]["type_from"] in ("inferred", "element type only")
    feeds = outer_scope_feeds(False)
    feeds["b"] = (1 / (1 + np.exp(-feeds["X"].astype(np.float64)))).astype(np.float32)
    got = ort_run(out, feeds)["if_out"]
    expected = feeds["b"] * feeds["X"]
    assert np.allclose(got, expected, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- functions, IR version 3

def test_local_functions_kept_as_called_matches_onnx(tmp_path, onnxstream):
    """A function the kept nodes call stays, one nothing calls any more goes."""
    model = passes_dir() / "local_functions" / "model.onnx"
    out = tmp_path / "f.onnx"
    r = extract(model, out, "--outputs", "Y")
    m = onnx.load(str(model))
    assert r["functions_kept"] >= 1 and r["functions_kept"] + r["functions_dropped"] == len(m.functions)
    feeds = {"X": np.random.default_rng(2).standard_normal(
        [d.dim_value or 1 for d in m.graph.input[0].type.tensor_type.shape.dim]).astype(np.float32)}
    compare_with_onnx(model, out, tmp_path, ["X"], ["Y"], feeds)


def test_ir3_keeps_the_kept_initializers_among_the_inputs(tmp_path, onnxstream):
    """IR version 3 wants every initializer among the graph inputs: the kept one stays
    there, the dropped one goes from both lists; python-onnx's checker accepts the result."""
    from onnx import TensorProto, helper
    w = numpy_helper.from_array(np.ones(4, np.float32), "W")
    v = numpy_helper.from_array(np.full(4, 2, np.float32), "V")
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="r"), helper.make_node("Add", ["y", "W"], ["z"], name="a"),
         helper.make_node("Mul", ["x", "V"], ["u"], name="m")], "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in ("x", "W", "V")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in ("z", "u")], [w, v])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    m.ir_version = 3
    model = tmp_path / "ir3.onnx"
    onnx.save(m, str(model))
    out = tmp_path / "z.onnx"
    r = extract(model, out, "--outputs", "z")
    got = onnx.load(str(out))
    onnx.checker.check_model(got)
    assert [i.name for i in got.graph.input] == ["x", "W"] and [t.name for t in got.graph.initializer] == ["W"]
    assert [i["name"] for i in r["inputs"]] == ["x", "W"]
    x = np.array([-1, 0, 1, 2], np.float32)
    assert np.array_equal(ort_run(out, {"x": x})["z"], np.maximum(x, 0) + 1)

"""fold-constants, shape, nop and fuse on hand-made models, against ONNX Runtime: the folded
values must be what ONNX Runtime computes (integer division, casts, Range, broadcasting,
Where, Expand, values read from an If body's outer scope), the fused nodes bit-identical
(Conv bias) or within 1e-5 (Gemm), and what is left alone reported with its reason."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import refcheck
from refcheck import describe, run_cli
from test_passes import FOLD_TOLERANCE, op_counts, ort_run, relative_error

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def save(tmp_path: Path, nodes, inputs, outputs, initializers=(), opset=17, name="m.onnx") -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    path = tmp_path / name
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), str(path))
    onnx.checker.check_model(str(path))
    return path


def optimize(path: Path, *args) -> tuple[Path, dict]:
    out = path.with_name(path.stem + ".opt.onnx")
    proc = run_cli(["optimize", path, "-o", out, "--json", "--force", *args])
    assert proc.returncode == 0, describe(proc)
    onnx.checker.check_model(str(out))
    return out, json.loads(proc.stdout)


def const(name, array):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(array), name + ".v"))


def test_integer_and_float_folds_match_onnx_runtime(tmp_path, onnxstream):
    """Every folded value reaches an output, so ONNX Runtime checks it bit for bit."""
    nodes = [
        const("a", np.array([7, -7, 9, -9, np.iinfo(np.int64).max], dtype=np.int64)),
        const("b", np.array([2, 2, -4, -4, 1], dtype=np.int64)),
        helper.make_node("Div", ["a", "b"], ["q"]),                      # truncation toward zero
        helper.make_node("Add", ["q", "b"], ["qb"]),                     # max + 1 wraps
        helper.make_node("Neg", ["qb"], ["nq"]),
        const("f", np.array([2.75, -2.75, 65536.5, 0.1], dtype=np.float32)),
        helper.make_node("Cast", ["f"], ["fi"], to=TensorProto.INT32),
        helper.make_node("Cast", ["fi"], ["fi64"], to=TensorProto.INT64),
        const("start", np.array(0.5, dtype=np.float32)), const("limit", np.array(3.0, dtype=np.float32)),
        const("delta", np.array(0.3, dtype=np.float32)),
        helper.make_node("Range", ["start", "limit", "delta"], ["r"]),   # repeated addition in float
        helper.make_node("Mul", ["r", "r"], ["r2"]),
        helper.make_node("Div", ["r2", "delta"], ["r3"]),
        helper.make_node("Equal", ["fi64", "fi64"], ["eq"]),
        const("shape", np.array([2, 4], dtype=np.int64)),
        helper.make_node("Expand", ["f", "shape"], ["fx"]),
        helper.make_node("Shape", ["fx"], ["fxs"]),
        helper.make_node("Gather", ["fxs", "one"], ["g"], axis=0),
        helper.make_node("Unsqueeze", ["g", "zero_axis"], ["gu"]),
        helper.make_node("Concat", ["gu", "gu", "nq"], ["cat"], axis=0),
        helper.make_node("Slice", ["cat", "s_start", "s_end", "zero_axis", "s_step"], ["sl"]),
        helper.make_node("Transpose", ["fx"], ["fxt"], perm=[1, 0]),
        helper.make_node("ReduceSum", ["sl", "zero_axis"], ["rs"], keepdims=0),
        helper.make_node("Where", ["eq", "fi64", "rs"], ["w"]),
        # The results meet the input X, so nothing here is an output by itself.
        helper.make_node("Add", ["X", "r3"], ["Y1"]),
        helper.make_node("Add", ["N", "w"], ["Y2"]),
        helper.make_node("Mul", ["T", "fxt"], ["Y3"]),
        helper.make_node("Add", ["M", "cat"], ["Y4"]),
    ]
    inits = [numpy_helper.from_array(np.array(1, dtype=np.int64), "one"),
             numpy_helper.from_array(np.array([0], dtype=np.int64), "zero_axis"),
             numpy_helper.from_array(np.array([-1], dtype=np.int64), "s_start"),
             numpy_helper.from_array(np.array([np.iinfo(np.int64).min], dtype=np.int64), "s_end"),
             numpy_helper.from_array(np.array([-2], dtype=np.int64), "s_step")]
    path = save(tmp_path, nodes,
                [helper.make_tensor_value_info("X", F, [9]), helper.make_tensor_value_info("N", I64, [4]),
                 helper.make_tensor_value_info("T", F, [4, 2]), helper.make_tensor_value_info("M", I64, [7])],
                [helper.make_tensor_value_info("Y1", F, [9]), helper.make_tensor_value_info("Y2", I64, [4]),
                 helper.make_tensor_value_info("Y3", F, [4, 2]), helper.make_tensor_value_info("Y4", I64, [7])], inits)
    out, report = optimize(path)
    counts = op_counts(out)
    assert set(counts) == {"Add", "Mul"}, counts   # everything else folded
    rng = np.random.default_rng(0)
    inputs = {"X": rng.standard_normal(9).astype(np.float32), "N": rng.integers(-5, 5, 4).astype(np.int64),
              "T": rng.standard_normal((4, 2)).astype(np.float32), "M": rng.integers(-5, 5, 7).astype(np.int64)}
    expected, got = ort_run(path, inputs), ort_run(out, inputs)
    for k in expected:
        assert refcheck.same_array(expected[k], got[k]), f"{k}: {expected[k]} vs {got[k]}"
    folded = [f for p in report["passes"] for f in p["findings"] if f["kind"] == "folded_constant"]
    assert len(folded) >= 20


def test_folds_inside_a_subgraph_reading_outer_constants(tmp_path, onnxstream):
    then_branch = helper.make_graph(
        [helper.make_node("Unsqueeze", ["outer", "axes"], ["u"]), helper.make_node("Mul", ["u", "X"], ["t"])],
        "then", [], [helper.make_tensor_value_info("t", F, [1, 3])])
    else_branch = helper.make_graph([helper.make_node("Neg", ["X"], ["n"]), helper.make_node("Unsqueeze", ["n", "axes"], ["e"])],
                                    "else", [], [helper.make_tensor_value_info("e", F, [1, 3])])
    nodes = [const("base", np.array([1.5, 2.5, -3.0], dtype=np.float32)), const("axes", np.array([0], dtype=np.int64)),
             helper.make_node("Add", ["base", "base"], ["outer"]),
             helper.make_node("If", ["c"], ["Y"], then_branch=then_branch, else_branch=else_branch)]
    path = save(tmp_path, nodes, [helper.make_tensor_value_info("X", F, [3]), helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                [helper.make_tensor_value_info("Y", F, [1, 3])])
    out, _ = optimize(path)
    counts = op_counts(out)
    assert counts.get("Unsqueeze", 0) == 1 and counts.get("Add", 0) == 0 and counts.get("Constant", 0) == 0, counts
    m = onnx.load(str(out))
    then_graph = next(a.g for a in m.graph.node[0].attribute if a.name == "then_branch")
    assert [t.name for t in then_graph.initializer] == ["u"]       # folded where it is used
    for flag in (True, False):
        inputs = {"X": np.array([1, -2, 3], dtype=np.float32), "c": np.array(flag)}
        assert refcheck.same_array(ort_run(path, inputs)["Y"], ort_run(out, inputs)["Y"])


def test_shape_of_static_input_folds_symbolic_dims_stay(tmp_path, onnxstream):
    nodes = [helper.make_node("Shape", ["X"], ["s"]),
             helper.make_node("Gather", ["s", "i1"], ["d1"], axis=0),     # static dim 1: folds
             helper.make_node("Gather", ["s", "i0"], ["d0"], axis=0),     # symbolic dim 0: stays
             helper.make_node("Mul", ["d0", "d1"], ["n"]),
             helper.make_node("Unsqueeze", ["n", "axes"], ["nu"]),
             helper.make_node("Reshape", ["X", "nu"], ["flat"]),
             helper.make_node("Cast", ["flat"], ["Y"], to=TensorProto.FLOAT)]   # to its own type: nop
    inits = [numpy_helper.from_array(np.array(1, dtype=np.int64), "i1"), numpy_helper.from_array(np.array(0, dtype=np.int64), "i0"),
             numpy_helper.from_array(np.array([0], dtype=np.int64), "axes")]
    path = save(tmp_path, nodes, [helper.make_tensor_value_info("X", F, ["batch", 6])],
                [helper.make_tensor_value_info("Y", F, ["n"])], inits)
    out, report = optimize(path)
    counts = op_counts(out)
    assert counts.get("Gather") == 1 and counts.get("Shape") == 1, counts
    # The Cast is the graph output: it stays (reported), its input's producer cannot take the name here.
    x = np.random.default_rng(2).standard_normal((5, 6)).astype(np.float32)
    assert refcheck.same_array(ort_run(path, {"X": x})["Y"], ort_run(out, {"X": x})["Y"])
    shapes = [f for p in report["passes"] for f in p["findings"] if f["kind"] == "folded_shape"]
    assert [f["op_type"] for f in shapes] == ["Gather"]


def test_nop_nodes_removed_exactly(tmp_path, onnxstream):
    nodes = [helper.make_node("Cast", ["X"], ["a"], to=TensorProto.FLOAT),
             helper.make_node("Reshape", ["a", "same"], ["b"]),
             helper.make_node("Transpose", ["b"], ["c"], perm=[1, 0]),
             helper.make_node("Transpose", ["c"], ["d"], perm=[1, 0]),
             helper.make_node("Mul", ["d", "ones"], ["e"]),
             helper.make_node("Sub", ["e", "zeros"], ["f"]),
             helper.make_node("Concat", ["f"], ["g"], axis=0),
             helper.make_node("Pad", ["g", "pads"], ["h"]),
             helper.make_node("Relu", ["h"], ["Y"])]
    inits = [numpy_helper.from_array(np.array([2, 3], dtype=np.int64), "same"),
             numpy_helper.from_array(np.ones(3, dtype=np.float32), "ones"),
             numpy_helper.from_array(np.zeros((1, 3), dtype=np.float32), "zeros"),
             numpy_helper.from_array(np.zeros(4, dtype=np.int64), "pads")]
    path = save(tmp_path, nodes, [helper.make_tensor_value_info("X", F, [2, 3])], [helper.make_tensor_value_info("Y", F, [2, 3])], inits)
    out, report = optimize(path)
    assert op_counts(out) == {"Relu": 1}, op_counts(out)
    x = np.array([[-0.0, 1, -2], [3, np.nan, -np.inf]], dtype=np.float32)
    assert refcheck.same_array(ort_run(path, {"X": x})["Y"], ort_run(out, {"X": x})["Y"])
    # Add of +0.0 to floats is not a no-op (-0.0 + 0.0 is +0.0): it stays.
    nodes = [helper.make_node("Add", ["X", "zeros"], ["Y"])]
    path = save(tmp_path, nodes, [helper.make_tensor_value_info("X", F, [2, 3])], [helper.make_tensor_value_info("Y", F, [2, 3])],
                [numpy_helper.from_array(np.zeros(3, dtype=np.float32), "zeros")], name="add.onnx")
    out, _ = optimize(path)
    assert op_counts(out) == {"Add": 1}


def test_fuse_conv_bias_exact_and_matmul_gemm_within_tolerance(tmp_path, onnxstream):
    rng = np.random.default_rng(5)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "W")
    bias = numpy_helper.from_array(rng.standard_normal((1, 4, 1, 1)).astype(np.float32), "bias")
    b2 = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "W2")
    b2b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "W2b")
    mm_b = numpy_helper.from_array(rng.standard_normal((64, 5)).astype(np.float32), "B")
    mm_c = numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "C")
    nodes = [helper.make_node("Conv", ["X", "W"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "bias"], ["Y"]),
             helper.make_node("Conv", ["X", "W2", "W2b"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["bias", "c2"], ["Z"]),       # has a bias already: skipped
             helper.make_node("MatMul", ["A", "B"], ["m"]),
             helper.make_node("Add", ["m", "C"], ["G"])]
    path = save(tmp_path, nodes,
                [helper.make_tensor_value_info("X", F, [1, 3, 8, 8]), helper.make_tensor_value_info("A", F, [7, 64])],
                [helper.make_tensor_value_info("Y", F, [1, 4, 8, 8]), helper.make_tensor_value_info("Z", F, [1, 4, 8, 8]),
                 helper.make_tensor_value_info("G", F, [7, 5])], [w, bias, b2, b2b, mm_b, mm_c])
    out, report = optimize(path)
    assert op_counts(out) == {"Conv": 2, "Add": 1, "Gemm": 1}, op_counts(out)
    skips = [f["detail"] for p in report["passes"] for f in p["findings"] if f["kind"] == "skipped"]
    assert any("bias already" in s for s in skips), skips
    inputs = {"X": rng.standard_normal((1, 3, 8, 8)).astype(np.float32), "A": rng.standard_normal((7, 64)).astype(np.float32)}
    expected, got = ort_run(path, inputs), ort_run(out, inputs)
    assert refcheck.same_array(expected["Y"], got["Y"]) and refcheck.same_array(expected["Z"], got["Z"])
    assert relative_error(expected["G"], got["G"]) <= FOLD_TOLERANCE


def test_random_ops_and_graph_outputs_are_never_folded(tmp_path, onnxstream):
    nodes = [const("shape", np.array([2, 2], dtype=np.int64)),
             helper.make_node("RandomUniform", [], ["r"], shape=[2, 2], seed=1.0),
             helper.make_node("ConstantOfShape", ["shape"], ["Y"]),           # a graph output: stays
             helper.make_node("Add", ["r", "X"], ["Z"])]
    path = save(tmp_path, nodes, [helper.make_tensor_value_info("X", F, [2, 2])],
                [helper.make_tensor_value_info("Y", F, [2, 2]), helper.make_tensor_value_info("Z", F, [2, 2])])
    out, report = optimize(path)
    counts = op_counts(out)
    assert counts.get("RandomUniform") == 1 and counts.get("ConstantOfShape") == 1, counts
    skips = [f["detail"] for p in report["passes"] for f in p["findings"] if f["kind"] == "skipped"]
    assert any("graph output" in s for s in skips), skips


def test_folded_load_time_tensors_stay_embedded_in_an_external_model(tmp_path, onnxstream):
    """A fold whose result feeds an input runtimes read while loading (Slice bounds here)
    stays embedded even past the size that sends computed tensors to the data file:
    ONNX Runtime cannot read such inputs from external data (issue 9, item 15's rule)."""
    rank = 130  # 130 int64 bounds: 1040 bytes, over optimize's 1 KiB external threshold
    halves = {n: np.zeros(rank // 2, dtype=np.int64) for n in ("s0", "s1")}
    halves.update({n: np.ones(rank // 2, dtype=np.int64) for n in ("e0", "e1")})
    inits = [numpy_helper.from_array(v, n) for n, v in halves.items()]
    inits.append(numpy_helper.from_array(np.arange(4096, dtype=np.float32), "w"))
    nodes = [helper.make_node("Concat", ["s0", "s1"], ["starts"], axis=0),
             helper.make_node("Concat", ["e0", "e1"], ["ends"], axis=0),
             helper.make_node("Slice", ["x", "starts", "ends"], ["y"]),
             helper.make_node("Relu", ["w"], ["z"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1] * rank)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1] * rank),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, [4096])], inits)
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path),
              save_as_external_data=True, location="m.onnx.data", size_threshold=1024)
    out, doc = optimize(path)
    model = onnx.load(str(out), load_external_data=False)
    assert [n.op_type for n in model.graph.node] == ["Slice", "Relu"], doc
    by_name = {t.name: t for t in model.graph.initializer}
    for name in ("starts", "ends"):
        assert by_name[name].data_location != TensorProto.EXTERNAL, f"{name} was written to the data file"
    assert by_name["w"].data_location == TensorProto.EXTERNAL
    loaded = onnx.load(str(out))
    assert np.array_equal(numpy_helper.to_array({t.name: t for t in loaded.graph.initializer}["ends"]), np.ones(rank))
    assert run_cli(["verify", out]).returncode == 0

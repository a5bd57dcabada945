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


def pad_node(x, out, pads, value=None, mode=None, axes=None):
    """Pad (opset 11+) with constant pads, an optional constant value and axes."""
    inputs = [x, out + ".pads", out + ".value" if value is not None else "", out + ".axes" if axes is not None else ""]
    while inputs[-1] == "":
        inputs.pop()
    attrs = {"mode": mode} if mode else {}
    inits = [numpy_helper.from_array(np.array(pads, dtype=np.int64), out + ".pads")]
    if value is not None:
        inits.append(numpy_helper.from_array(np.array(value, dtype=np.float32), out + ".value"))
    if axes is not None:
        inits.append(numpy_helper.from_array(np.array(axes, dtype=np.int64), out + ".axes"))
    return helper.make_node("Pad", inputs, [out], **attrs), inits


def symbolic(name, rank=4, elem_type=F):
    """An output of known rank and type, its dims left to the runtime."""
    return helper.make_tensor_value_info(name, elem_type, [f"{name}_{i}" for i in range(rank)])


def skip_details(report) -> list[str]:
    return [f["detail"] for p in report["passes"] for f in p["findings"] if f["kind"] == "skipped"]


def test_fuse_pad_into_conv_and_pools_bit_identical(tmp_path, onnxstream):
    """Zero Pads go into Conv (plain, strided and dilated, pointwise, depthwise, 1-D) and
    AveragePool pads, a -inf Pad into MaxPool's; ONNX Runtime's outputs stay bit for bit."""
    rng = np.random.default_rng(11)
    weights = {"W3": (4, 3, 3, 3), "W1": (5, 3, 1, 1), "Wd": (3, 1, 3, 3), "W1d": (2, 3, 3)}
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n) for n, s in weights.items()]
    inits.append(numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "B3"))
    nodes = []
    plan = [  # (output, pads over N C H W, value, consumer)
        ("p1", [0, 0, 1, 2, 0, 0, 2, 1], None, helper.make_node("Conv", ["p1", "W3", "B3"], ["Y1"], pads=[1, 0, 0, 1], strides=[2, 1])),
        ("p2", [0, 0, 1, 1, 0, 0, 1, 1], 0.0, helper.make_node("Conv", ["p2", "W1"], ["Y2"])),
        ("p3", [0, 0, 2, 0, 0, 0, 0, 2], None, helper.make_node("Conv", ["p3", "Wd"], ["Y3"], group=3, dilations=[2, 2])),
        ("p4", [0, 0, 1, 1, 0, 0, 1, 0], None, helper.make_node("AveragePool", ["p4"], ["Y4"], kernel_shape=[3, 3])),
        ("p5", [0, 0, 1, 0, 0, 0, 0, 1], None, helper.make_node("AveragePool", ["p5"], ["Y5"], kernel_shape=[2, 3],
                                                                 pads=[0, 1, 1, 0], count_include_pad=1, strides=[2, 2])),
        ("p6", [0, 0, 1, 1, 0, 0, 0, 1], -np.inf, helper.make_node("MaxPool", ["p6"], ["Y6"], kernel_shape=[3, 3], strides=[2, 2])),
    ]
    for out, pads, value, consumer in plan:
        node, extra = pad_node("X", out, pads, value)
        nodes += [node, consumer]
        inits += extra
    # 1-D: pads over N C L.
    node, extra = pad_node("L", "p7", [0, 0, 3, 0, 0, 1])
    nodes += [node, helper.make_node("Conv", ["p7", "W1d"], ["Y7"])]
    inits += extra
    outputs = ["Y1", "Y2", "Y3", "Y4", "Y5", "Y6", "Y7"]
    path = save(tmp_path, nodes, [helper.make_tensor_value_info("X", F, [1, 3, 9, 10]), helper.make_tensor_value_info("L", F, [2, 3, 7])],
                [symbolic(y, 3 if y == "Y7" else 4) for y in outputs], inits)
    out, report = optimize(path)
    assert op_counts(out) == {"Conv": 4, "AveragePool": 2, "MaxPool": 1}, (op_counts(out), skip_details(report))
    by_output = {n.output[0]: n for n in onnx.load(str(out)).graph.node}
    attrs = {y: {a.name: helper.get_attribute_value(a) for a in by_output[y].attribute} for y in outputs}
    assert attrs["Y1"]["pads"] == [2, 2, 2, 2] and attrs["Y1"]["strides"] == [2, 1]
    assert attrs["Y4"]["pads"] == [1, 1, 1, 0] and attrs["Y4"]["count_include_pad"] == 1
    assert attrs["Y5"]["pads"] == [1, 1, 1, 1] and attrs["Y6"]["pads"] == [1, 1, 0, 1] and attrs["Y7"]["pads"] == [3, 1]
    fused = [f for p in report["passes"] for f in p["findings"] if f["kind"] == "fused_node"]
    assert len(fused) == 7 and all(f["op_type"] == "Pad" for f in fused), fused
    analyzed = run_cli(["analyze", path, "--json"])
    assert analyzed.returncode == 0, describe(analyzed)
    assert json.loads(analyzed.stdout)["summary"]["fused_nodes"]["count"] == 7
    for seed in range(3):
        r = np.random.default_rng(seed)
        x = r.standard_normal((1, 3, 9, 10)).astype(np.float32)
        x[0, 0, 0, :3] = [-0.0, np.inf, -np.inf]   # edges meet the padding
        inputs = {"X": x, "L": r.standard_normal((2, 3, 7)).astype(np.float32)}
        expected, got = ort_run(path, inputs), ort_run(out, inputs)
        for y in outputs:
            assert refcheck.same_array(expected[y], got[y]), f"{y} differs (seed {seed})"


def test_pads_that_would_change_the_result_are_not_fused(tmp_path, onnxstream):
    """Each Pad here is left with the reason: not zeros, not constant mode, the channel axis,
    an AveragePool that excludes its own padding, a MaxPool of zero padding, a MaxPool window
    of padding only, a MaxPool asked for Indices."""
    rng = np.random.default_rng(12)
    inits = [numpy_helper.from_array(rng.standard_normal((2, 3, 3, 3)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.standard_normal((2, 4, 3, 3)).astype(np.float32), "W4")]
    cases = [  # (pads, value, mode, consumer, reason)
        ([0, 0, 1, 1, 0, 0, 1, 1], 1.0, None, helper.make_node("Conv", ["q1", "W"], ["Z1"]), "pads with 1"),
        ([0, 0, 1, 1, 0, 0, 1, 1], None, "reflect", helper.make_node("Conv", ["q2", "W"], ["Z2"]), "mode 'reflect'"),
        ([0, 1, 1, 1, 0, 0, 1, 1], None, None, helper.make_node("Conv", ["q3", "W4"], ["Z3"]), "channel axis"),
        ([0, 0, 1, 1, 0, 0, 1, 1], None, None, helper.make_node("AveragePool", ["q4"], ["Z4"], kernel_shape=[3, 3], pads=[1, 0, 0, 0]),
         "own padded cells"),
        ([0, 0, 1, 0, 0, 0, 0, 1], None, None, helper.make_node("MaxPool", ["q5"], ["Z5"], kernel_shape=[2, 2]), "-inf"),
        ([0, 0, 3, 0, 0, 0, 0, 0], -np.inf, None, helper.make_node("MaxPool", ["q6"], ["Z6"], kernel_shape=[2, 2], pads=[0, 0, 0, 0]),
         "padded cells only"),
        ([0, 0, 1, 1, 0, 0, 1, 1], -np.inf, None, helper.make_node("MaxPool", ["q7"], ["Z7", "I7"], kernel_shape=[2, 2]), "Indices"),
        ([0, 0, -1, 0, 0, 0, 0, 0], None, None, helper.make_node("Conv", ["q8", "W"], ["Z8"]), "negative"),
    ]
    nodes, outputs = [], []
    for k, (pads, value, mode, consumer, _) in enumerate(cases, 1):
        node, extra = pad_node("X", f"q{k}", pads, value, mode)
        nodes += [node, consumer]
        inits += extra
        outputs += list(consumer.output)
    outputs_info = [symbolic(y, 4, TensorProto.INT64 if y.startswith("I") else F) for y in outputs]
    path = save(tmp_path, nodes, [helper.make_tensor_value_info("X", F, [1, 3, 6, 6])], outputs_info, inits)
    out, report = optimize(path)
    assert op_counts(out)["Pad"] == len(cases), op_counts(out)
    skips = skip_details(report)
    for *_, reason in cases:
        assert any("not fused" in s and reason in s for s in skips), (reason, skips)
    # analyze names the same skips, with their reasons, in --json and in its text.
    analyzed = run_cli(["analyze", path, "--json"])
    assert analyzed.returncode == 0, describe(analyzed)
    doc = json.loads(analyzed.stdout)
    left = [f["detail"] for f in doc["scopes"][0]["skipped"]]
    for *_, reason in cases:
        assert any("not fused" in s and reason in s for s in left), (reason, left)
    assert doc["summary"]["skipped"]["count"] == len(left)
    text = run_cli(["analyze", path]).stdout
    assert "left alone, and why" in text and "channel axis" in text, text
    inputs = {"X": rng.standard_normal((1, 3, 6, 6)).astype(np.float32)}
    expected, got = ort_run(path, inputs), ort_run(out, inputs)
    for y in outputs:
        assert refcheck.same_array(expected[y], got[y]), y


def test_pad_with_axes_of_opset_18_fuses(tmp_path, onnxstream):
    """Pad's axes input (opset 18). The Debian python-onnx (1.12) predates opset 18, so its
    checker is not asked; ONNX Runtime loads and runs both models."""
    rng = np.random.default_rng(14)
    w = numpy_helper.from_array(rng.standard_normal((2, 3, 3)).astype(np.float32), "W")
    node, inits = pad_node("L", "p", [3, 1], axes=[-1])
    graph = helper.make_graph([node, helper.make_node("Conv", ["p", "W"], ["Y"], pads=[1, 0])], "g",
                              [helper.make_tensor_value_info("L", F, [2, 3, 7])], [symbolic("Y", 3)], [w, *inits])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    out = tmp_path / "m.opt.onnx"
    proc = run_cli(["optimize", path, "-o", out])
    assert proc.returncode == 0, describe(proc)
    conv = onnx.load(str(out)).graph.node
    assert [n.op_type for n in conv] == ["Conv"] and helper.get_attribute_value(conv[0].attribute[0]) == [4, 1]
    inputs = {"L": rng.standard_normal((2, 3, 7)).astype(np.float32)}
    assert refcheck.same_array(ort_run(path, inputs)["Y"], ort_run(out, inputs)["Y"])


def test_pad_attribute_form_of_opset_10_fuses(tmp_path, onnxstream):
    """Before opset 11 Pad's pads and value are attributes."""
    rng = np.random.default_rng(13)
    w = numpy_helper.from_array(rng.standard_normal((2, 3, 3, 3)).astype(np.float32), "W")
    nodes = [helper.make_node("Pad", ["X"], ["p"], pads=[0, 0, 1, 2, 0, 0, 1, 0], value=0.0),
             helper.make_node("Conv", ["p", "W"], ["Y"], pads=[1, 1, 1, 1]),
             helper.make_node("Pad", ["X"], ["q"], pads=[0, 0, 1, 1, 0, 0, 1, 1], value=-np.inf),
             helper.make_node("MaxPool", ["q"], ["Z"], kernel_shape=[2, 2])]
    path = save(tmp_path, nodes, [helper.make_tensor_value_info("X", F, [1, 3, 5, 5])],
                [symbolic("Y"), symbolic("Z")], [w], opset=10)
    out, _ = optimize(path)
    assert op_counts(out) == {"Conv": 1, "MaxPool": 1}, op_counts(out)
    inputs = {"X": rng.standard_normal((1, 3, 5, 5)).astype(np.float32)}
    expected, got = ort_run(path, inputs), ort_run(out, inputs)
    assert refcheck.same_array(expected["Y"], got["Y"]) and refcheck.same_array(expected["Z"], got["Z"])


def test_nop_pairs_composed_transposes_split_of_one(tmp_path, onnxstream):
    """Two Transposes become one by the composed permutation; Squeeze undoing Unsqueeze and
    Unsqueeze undoing Squeeze go; Split into one part and Expand by ones go; a Transpose
    whose input something else reads too is left."""
    axes = lambda name, values: numpy_helper.from_array(np.array(values, dtype=np.int64), name)
    nodes = [helper.make_node("Transpose", ["X"], ["t1"], perm=[0, 2, 3, 1]),
             helper.make_node("Transpose", ["t1"], ["t2"], perm=[2, 0, 3, 1]),
             helper.make_node("Transpose", ["t2"], ["t3"], perm=[1, 0, 2, 3]),
             helper.make_node("Unsqueeze", ["t3", "ax_a"], ["u1"]),
             helper.make_node("Squeeze", ["u1", "ax_b"], ["s1"]),         # -1 and 4 of a rank-5 value: the same axis
             helper.make_node("Split", ["s1"], ["sp"], axis=1),
             helper.make_node("Expand", ["sp", "ones"], ["ex"]),
             helper.make_node("Relu", ["ex"], ["Y"]),
             helper.make_node("Squeeze", ["S", "ax_c"], ["sq"]),
             helper.make_node("Unsqueeze", ["sq", "ax_c"], ["us"]),
             helper.make_node("Neg", ["us"], ["Z"]),
             helper.make_node("Transpose", ["X"], ["k1"], perm=[3, 2, 1, 0]),
             helper.make_node("Transpose", ["k1"], ["k2"], perm=[1, 0, 2, 3]),
             helper.make_node("Add", ["k1", "k1"], ["K1"]),
             helper.make_node("Abs", ["k2"], ["K2"])]
    inits = [axes("ax_a", [-1]), axes("ax_b", [4]), axes("ax_c", [0, 2]), axes("ones", [1, 1])]
    path = save(tmp_path, nodes, [helper.make_tensor_value_info("X", F, [2, 3, 4, 5]), helper.make_tensor_value_info("S", F, [1, 3, 1])],
                [symbolic("Y"), symbolic("Z", 3), symbolic("K1"), symbolic("K2")], inits)
    out, report = optimize(path)
    assert op_counts(out) == {"Transpose": 3, "Relu": 1, "Neg": 1, "Add": 1, "Abs": 1}, op_counts(out)
    perms = sorted(helper.get_attribute_value(n.attribute[0]) for n in onnx.load(str(out)).graph.node if n.op_type == "Transpose")
    assert perms == [[0, 3, 1, 2], [1, 0, 2, 3], [3, 2, 1, 0]], perms   # [0,2,3,1] then [2,0,3,1] then [1,0,2,3]
    r = np.random.default_rng(4)
    inputs = {"X": r.standard_normal((2, 3, 4, 5)).astype(np.float32), "S": r.standard_normal((1, 3, 1)).astype(np.float32)}
    expected, got = ort_run(path, inputs), ort_run(out, inputs)
    for y in ("Y", "Z", "K1", "K2"):
        assert refcheck.same_array(expected[y], got[y]), y
    assert np.array_equal(got["Y"], np.maximum(np.transpose(inputs["X"], [0, 3, 1, 2]), 0))

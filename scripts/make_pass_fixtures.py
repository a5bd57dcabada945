#!/usr/bin/python3
"""Writes the fixtures of onnxstream's graph-pass tests (analyze, optimize), made with the
reference libraries.

    /usr/bin/python3 scripts/make_pass_fixtures.py OUTDIR

Needs Debian's python3-onnx (1.12), python3-numpy, python3-torch and python3-torchvision.
Everything is seeded: two runs write the same bytes. OUTDIR/<case>/model.onnx per case,
and OUTDIR/manifest.json:

  {"format": 1, "generator_sha1": ..., "cases": [case, ...]}

  name          the case, also its folder
  model         path of the .onnx, relative to OUTDIR
  description   what it is about
  external      the weights are in external data (model.onnx.data)
  bool_inputs   the model has bool inputs (run both values)
  folds         fold-bn changes numerics (compare within tolerance, not bit for bit)
  nan_outputs   the original model yields NaN/Inf in places (compare where it is finite)
  expect_after  {op_type: count} over all graphs after the default `optimize`
  expect_analyze {category: count} in `analyze --json`'s summary (only the listed ones)
  expect_warning a substring optimize's stderr must contain, or null
  expect_skips  substrings of fold-bn skip reasons that must be reported
"""
from __future__ import annotations

import hashlib
import io
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
SEED = 20240607
F = TensorProto.FLOAT


def generator_sha1() -> str:
    return hashlib.sha1(Path(__file__).resolve().read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------------
# Helpers

class Rng:
    def __init__(self, seed: int):
        self.g = np.random.default_rng(seed)

    def tensor(self, name, shape, dtype=np.float32, scale=0.3):
        return numpy_helper.from_array((self.g.standard_normal(shape) * scale).astype(dtype), name)

    def bn(self, prefix, channels, dtype=np.float32, var=None):
        """scale, B, mean, var initializers (random, var > 0 unless given)."""
        g = self.g
        v = g.uniform(0.5, 1.5, channels) if var is None else np.asarray(var, dtype=np.float64)
        return [
            numpy_helper.from_array(g.uniform(0.5, 1.5, channels).astype(dtype), f"{prefix}.scale"),
            numpy_helper.from_array((g.standard_normal(channels) * 0.1).astype(dtype), f"{prefix}.B"),
            numpy_helper.from_array((g.standard_normal(channels) * 0.1).astype(dtype), f"{prefix}.mean"),
            numpy_helper.from_array(v.astype(dtype), f"{prefix}.var"),
        ]


def bn_node(x, prefix, out, **attrs):
    return helper.make_node("BatchNormalization", [x, f"{prefix}.scale", f"{prefix}.B", f"{prefix}.mean", f"{prefix}.var"],
                            [out], name=prefix, **attrs)


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def model_of(graph, opset=OPSET, **kwargs) -> onnx.ModelProto:
    imports = kwargs.pop("opset_imports", [helper.make_opsetid("", opset)])
    model = helper.make_model(graph, opset_imports=imports, producer_name="onnxstream-pass-fixtures", **kwargs)
    onnx.checker.check_model(model, full_check=True)
    return model


def const(name, value, dtype=np.float32):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value, dtype=dtype), name + ".value"))


# ---------------------------------------------------------------------------------------
# The cases

def resnet_style(r: Rng):
    """Conv-BN-Relu blocks with a residual Add, plus everything analyze must find: 16 dead
    BatchNorm, 3 Identity, a 5-node isolated component, an If with constant False whose
    then-branch holds a Conv and an Add (reading outer values), two duplicate
    GlobalAveragePool (one of them a graph output)."""
    inits = [r.tensor("conv1.W", (8, 4, 3, 3)), r.tensor("conv1.b", (8,)), r.tensor("conv2.W", (8, 8, 3, 3)),
             r.tensor("branch.W", (8, 8, 3, 3)), r.tensor("fc.W", (10, 8)), r.tensor("fc.b", (10,)),
             r.tensor("iso.init", (4,))]
    inits += r.bn("bn1", 8) + r.bn("bn2", 8)
    nodes = [
        helper.make_node("Conv", ["X", "conv1.W", "conv1.b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        bn_node("c1", "bn1", "n1"),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node("Identity", ["r1"], ["r1_id"], name="id1"),
        helper.make_node("Conv", ["r1_id", "conv2.W"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        bn_node("c2", "bn2", "n2"),
        helper.make_node("Add", ["n2", "r1"], ["a1"], name="add1"),
        helper.make_node("Relu", ["a1"], ["r2"], name="relu2"),
        const("cond", False, np.bool_),
    ]
    then_branch = helper.make_graph(
        [helper.make_node("Conv", ["r2", "branch.W"], ["t_conv"], name="then_conv", pads=[1, 1, 1, 1]),
         helper.make_node("Add", ["t_conv", "r2"], ["t_out"], name="then_add")],
        "then", [], [vi("t_out", F, [1, 8, 8, 8])])
    else_branch = helper.make_graph([helper.make_node("Sigmoid", ["r2"], ["e_out"], name="else_sigmoid")],
                                    "else", [], [vi("e_out", F, [1, 8, 8, 8])])
    nodes += [
        helper.make_node("If", ["cond"], ["if_out"], name="if_const", then_branch=then_branch, else_branch=else_branch),
        helper.make_node("Relu", ["if_out"], ["r3"], name="relu3"),
        helper.make_node("Identity", ["r3"], ["r3_id"], name="id2"),
        helper.make_node("GlobalAveragePool", ["r3_id"], ["g1"], name="gap1"),
        helper.make_node("GlobalAveragePool", ["r3_id"], ["pool"], name="gap2"),
        helper.make_node("Add", ["g1", "pool"], ["a2"], name="add2"),
        helper.make_node("Flatten", ["a2"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc.W", "fc.b"], ["fc"], name="fc", transB=1),
        helper.make_node("Relu", ["fc"], ["r4"], name="relu4"),
        helper.make_node("Identity", ["r4"], ["Y"], name="id3"),
    ]
    # 16 dead BatchNormalization nodes hanging off live values.
    for i in range(16):
        inits += r.bn(f"dead{i}", 8)
        nodes.append(bn_node(["c1", "r1", "c2", "r2"][i % 4], f"dead{i}", f"dead{i}_out"))
    # A 5-node isolated component.
    nodes += [
        const("iso_c", np.arange(4, dtype=np.float32)),
        helper.make_node("Add", ["iso_c", "iso.init"], ["iso_a"], name="iso_add"),
        helper.make_node("Mul", ["iso_a", "iso_a"], ["iso_m"], name="iso_mul"),
        helper.make_node("Sigmoid", ["iso_m"], ["iso_s"], name="iso_sigmoid"),
        helper.make_node("Neg", ["iso_s"], ["iso_n"], name="iso_neg"),
    ]
    graph = helper.make_graph(nodes, "resnet_style", [vi("X", F, [1, 4, 8, 8])],
                              [vi("Y", F, [1, 10]), vi("pool", F, [1, 8, 1, 1])], inits)
    return model_of(graph), dict(
        folds=True,
        expect_after={"Conv": 2, "Relu": 4, "Add": 2, "Sigmoid": 1, "GlobalAveragePool": 1, "Flatten": 1, "Gemm": 1},
        expect_analyze={"dead_nodes": 21, "isolated_components": 1, "dead_branches": 1, "duplicate_computations": 1,
                        "identity_nodes": 3})


def outer_scope(r: Rng):
    """If / Loop bodies reading outer values that nothing else reads: dce must keep their
    producers; a dead node and an Identity inside a branch go."""
    then_branch = helper.make_graph(
        [helper.make_node("Add", ["a", "X"], ["t1"], name="then_add"),
         helper.make_node("Neg", ["a"], ["t_dead"], name="then_dead"),
         helper.make_node("Identity", ["t1"], ["t_out"], name="then_identity")],
        "then", [], [vi("t_out", F, [2, 4])])
    else_branch = helper.make_graph([helper.make_node("Mul", ["b", "X"], ["e_out"], name="else_mul")],
                                    "else", [], [vi("e_out", F, [2, 4])])
    body = helper.make_graph(
        [helper.make_node("Add", ["v_in", "c"], ["v_out"], name="body_add"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
        "body", [vi("iter", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []), vi("v_in", F, [2, 4])],
        [vi("cond_out", TensorProto.BOOL, []), vi("v_out", F, [2, 4])])
    nodes = [
        helper.make_node("Relu", ["X"], ["a"], name="outer_relu"),
        helper.make_node("Sigmoid", ["X"], ["b"], name="outer_sigmoid"),
        helper.make_node("Tanh", ["X"], ["c"], name="outer_tanh"),
        helper.make_node("Exp", ["X"], ["unused"], name="outer_dead"),
        helper.make_node("If", ["flag"], ["if_out"], name="if_flag", then_branch=then_branch, else_branch=else_branch),
        const("trips", 3, np.int64),
        const("keep_going", True, np.bool_),
        helper.make_node("Loop", ["trips", "keep_going", "X"], ["loop_out"], name="loop", body=body),
        helper.make_node("Add", ["if_out", "loop_out"], ["Y"], name="sum"),
    ]
    graph = helper.make_graph(nodes, "outer_scope", [vi("X", F, [2, 4]), vi("flag", TensorProto.BOOL, [])],
                              [vi("Y", F, [2, 4])])
    return model_of(graph), dict(
        bool_inputs=True,
        expect_after={"Relu": 1, "Sigmoid": 1, "Tanh": 1, "If": 1, "Add": 3, "Mul": 1, "Loop": 1, "Identity": 1,
                      "Constant": 0},  # fold-constants makes them initializers
        expect_analyze={"dead_nodes": 2, "identity_nodes": 1})


def conv_bn(r: Rng, name, weight_shape, group, bias, channels_in, spatial=8):
    inits = [r.tensor("W", weight_shape)] + r.bn("bn", weight_shape[0])
    inputs = ["X", "W"]
    if bias:
        inits.append(r.tensor("b", (weight_shape[0],)))
        inputs.append("b")
    nodes = [helper.make_node("Conv", inputs, ["c"], name="conv", group=group, pads=[1, 1, 1, 1]),
             bn_node("c", "bn", "Y")]
    graph = helper.make_graph(nodes, name, [vi("X", F, [1, channels_in, spatial, spatial])],
                              [vi("Y", F, [1, weight_shape[0], spatial, spatial])], inits)
    return model_of(graph), dict(folds=True, expect_after={"Conv": 1})


def conv_transpose_bn(r: Rng):
    """ConvTranspose with group 2: weight [C_in, C_out/group, k, k], channels along axis 1."""
    inits = [r.tensor("W", (8, 3, 3, 3)), r.tensor("b", (6,))] + r.bn("bn", 6)
    nodes = [helper.make_node("ConvTranspose", ["X", "W", "b"], ["c"], name="deconv", group=2, strides=[2, 2]),
             bn_node("c", "bn", "Y")]
    graph = helper.make_graph(nodes, "convtranspose_bn", [vi("X", F, [1, 8, 5, 5])], [vi("Y", F, [1, 6, 11, 11])], inits)
    return model_of(graph), dict(folds=True, expect_after={"ConvTranspose": 1})


def gemm_bn(r: Rng, trans_b: int, c_shape):
    """Gemm (alpha, beta != 1) followed by BatchNormalization over its N outputs."""
    k, n, m = 12, 6, 3
    w_shape = (n, k) if trans_b else (k, n)
    inits = [r.tensor("W", w_shape)] + r.bn("bn", n)
    inputs = ["X", "W"]
    if c_shape is not None:
        inits.append(r.tensor("C", c_shape))
        inputs.append("C")
    nodes = [helper.make_node("Gemm", inputs, ["g"], name="gemm", transB=trans_b, alpha=0.75, beta=1.5),
             bn_node("g", "bn", "Y")]
    graph = helper.make_graph(nodes, f"gemm_bn_transb{trans_b}", [vi("X", F, [m, k])], [vi("Y", F, [m, n])], inits)
    return model_of(graph), dict(folds=True, expect_after={"Gemm": 1})


def conv_bn_fp16(r: Rng):
    h = TensorProto.FLOAT16
    inits = [r.tensor("W", (8, 4, 3, 3), np.float16), r.tensor("b", (8,), np.float16)] + r.bn("bn", 8, np.float16)
    nodes = [helper.make_node("Conv", ["X", "W", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]), bn_node("c", "bn", "Y")]
    graph = helper.make_graph(nodes, "conv_bn_fp16", [vi("X", h, [1, 4, 8, 8])], [vi("Y", h, [1, 8, 8, 8])], inits)
    return model_of(graph), dict(folds=True, fp16=True, expect_after={"Conv": 1})


def negative_variance(r: Rng, clamped: bool):
    """Running variances below 0: var + eps > 0 folds as the model computes it; var + eps
    <= 0 (NaN/Inf in the model) is clamped to 0 with a warning naming node and channel."""
    var = np.full(8, 0.8)
    var[2] = -0.0005  # + eps 0.001 > 0
    if clamped:
        var[5] = -0.5  # + eps < 0: the model yields NaN here
    inits = [r.tensor("W", (8, 4, 3, 3)), r.tensor("b", (8,))] + r.bn("bn", 8, var=var)
    nodes = [helper.make_node("Conv", ["X", "W", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             bn_node("c", "bn", "Y", epsilon=0.001)]
    name = "bn_negative_variance_clamped" if clamped else "bn_negative_variance"
    graph = helper.make_graph(nodes, name, [vi("X", F, [1, 4, 8, 8])], [vi("Y", F, [1, 8, 8, 8])], inits)
    extra = dict(folds=True, expect_after={"Conv": 1})
    if clamped:
        extra.update(nan_outputs=True, expect_warning="channel 5")
    return model_of(graph), extra


def conv_output_used_twice(r: Rng):
    inits = [r.tensor("W", (8, 4, 3, 3))] + r.bn("bn", 8)
    nodes = [helper.make_node("Conv", ["X", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             bn_node("c", "bn", "Y"),
             helper.make_node("Relu", ["c"], ["Z"], name="relu")]
    graph = helper.make_graph(nodes, "conv_output_used_twice", [vi("X", F, [1, 4, 8, 8])],
                              [vi("Y", F, [1, 8, 8, 8]), vi("Z", F, [1, 8, 8, 8])], inits)
    return model_of(graph), dict(expect_after={"Conv": 1, "BatchNormalization": 1, "Relu": 1},
                                 expect_skips=["also used elsewhere"])


def shared_weight(r: Rng):
    """One weight read by two Convs, each followed by its own BatchNormalization: each gets
    its own folded copy; the shared weight is never changed under the other."""
    inits = [r.tensor("W", (8, 4, 3, 3))] + r.bn("bn_a", 8) + r.bn("bn_b", 8)
    nodes = [helper.make_node("Conv", ["X", "W"], ["ca"], name="conv_a", pads=[1, 1, 1, 1]),
             bn_node("ca", "bn_a", "Y1"),
             helper.make_node("Conv", ["X2", "W"], ["cb"], name="conv_b", pads=[1, 1, 1, 1]),
             bn_node("cb", "bn_b", "Y2")]
    graph = helper.make_graph(nodes, "shared_weight", [vi("X", F, [1, 4, 8, 8]), vi("X2", F, [1, 4, 8, 8])],
                              [vi("Y1", F, [1, 8, 8, 8]), vi("Y2", F, [1, 8, 8, 8])], inits)
    return model_of(graph), dict(folds=True, expect_after={"Conv": 2})


def random_normal(r: Rng):
    """Two identical RandomNormal nodes: nondeterministic, never merged (cse)."""
    nodes = [helper.make_node("RandomNormal", [], ["n1"], name="rn1", shape=[2, 4], seed=3.0),
             helper.make_node("RandomNormal", [], ["n2"], name="rn2", shape=[2, 4], seed=3.0),
             helper.make_node("Mul", ["n1", "n2"], ["m"], name="mul"),
             helper.make_node("Add", ["X", "m"], ["Y"], name="add"),
             helper.make_node("Relu", ["X"], ["r1"], name="relu1"),
             helper.make_node("Relu", ["X"], ["r2"], name="relu2"),
             helper.make_node("Sub", ["r1", "r2"], ["Z"], name="sub")]
    graph = helper.make_graph(nodes, "random_normal", [vi("X", F, [2, 4])], [vi("Y", F, [2, 4]), vi("Z", F, [2, 4])])
    return model_of(graph), dict(expect_after={"RandomNormal": 2, "Relu": 1},
                                 expect_analyze={"duplicate_computations": 1})


def loop_never_runs(r: Rng):
    """A Loop with trip count 0 (replaced by its initial values) and one whose scan output is
    used (kept)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["v_in", "Xc"], ["v_out"], name="body_add"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
        "body", [vi("iter", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []), vi("v_in", F, [2, 4])],
        [vi("cond_out", TensorProto.BOOL, []), vi("v_out", F, [2, 4])])
    scan_body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "Xc"], ["s_out"], name="scan_add"),
         helper.make_node("Identity", ["s_out"], ["s_scan"], name="scan_copy"),
         helper.make_node("Identity", ["cond_in2"], ["cond_out2"], name="scan_cond")],
        "scan_body", [vi("iter2", TensorProto.INT64, []), vi("cond_in2", TensorProto.BOOL, []), vi("s_in", F, [2, 4])],
        [vi("cond_out2", TensorProto.BOOL, []), vi("s_out", F, [2, 4]), vi("s_scan", F, [2, 4])])
    nodes = [
        helper.make_node("Cos", ["X"], ["Xc"], name="cos"),
        const("zero", 0, np.int64),
        const("yes", True, np.bool_),
        helper.make_node("Loop", ["zero", "yes", "X"], ["loop_out"], name="loop_zero", body=body),
        helper.make_node("Relu", ["loop_out"], ["Y"], name="relu"),
        helper.make_node("Loop", ["zero", "yes", "X"], ["scan_final", "scan_all"], name="loop_scan", body=scan_body),
        helper.make_node("Add", ["scan_final", "X"], ["Z"], name="add"),
    ]
    graph = helper.make_graph(nodes, "loop_never_runs", [vi("X", F, [2, 4])],
                              [vi("Y", F, [2, 4]), vi("Z", F, [2, 4]), vi("S", F, [0, 2, 4])])
    graph.node.append(helper.make_node("Identity", ["scan_all"], ["S"], name="scan_out"))
    return model_of(graph), dict(expect_after={"Loop": 1, "Relu": 1, "Add": 2, "Cos": 1, "Identity": 2, "Constant": 0},
                                 expect_analyze={"dead_branches": 2})


def if_expressions(r: Rng):
    """Conditions computed from constants (Equal, Not, Cast, an initializer), a nested
    constant If inside the taken branch, branch initializers, and two If nodes whose
    branches define the same local names (renamed when inlined)."""
    inner_then = helper.make_graph([helper.make_node("Mul", ["X", "inner.k"], ["inner_tmp"], name="inner_mul"),
                                    helper.make_node("Add", ["inner_tmp", "X"], ["inner_out"], name="inner_add")],
                                   "inner_then", [], [vi("inner_out", F, [2, 4])], [r.tensor("inner.k", (4,))])
    inner_else = helper.make_graph([helper.make_node("Neg", ["X"], ["inner_else_out"], name="inner_neg")],
                                   "inner_else", [], [vi("inner_else_out", F, [2, 4])])
    then_1 = helper.make_graph([helper.make_node("Sin", ["X"], ["tmp"], name="then1_sin")],
                               "then_1", [], [vi("tmp", F, [2, 4])])
    else_1 = helper.make_graph(
        [helper.make_node("Cos", ["X"], ["tmp"], name="else1_cos"),
         helper.make_node("If", ["flag_init"], ["nested_out"], name="if_nested", then_branch=inner_then,
                          else_branch=inner_else),
         helper.make_node("Add", ["tmp", "nested_out"], ["else1_out"], name="else1_add")],
        "else_1", [], [vi("else1_out", F, [2, 4])], [r.tensor("else1.unused", (4,))])
    then_2 = helper.make_graph([helper.make_node("Abs", ["X"], ["tmp"], name="then2_abs"),
                                helper.make_node("Mul", ["tmp", "then2.k"], ["then2_out"], name="then2_mul")],
                               "then_2", [], [vi("then2_out", F, [2, 4])], [r.tensor("then2.k", (4,))])
    else_2 = helper.make_graph([helper.make_node("Exp", ["X"], ["else2_out"], name="else2_exp")],
                               "else_2", [], [vi("else2_out", F, [2, 4])])
    nodes = [
        const("two", 2, np.int64),
        const("two_f", 2.0, np.float32),
        helper.make_node("Cast", ["two_f"], ["two_i"], name="cast", to=TensorProto.INT64),
        helper.make_node("Equal", ["two", "two_i"], ["eq"], name="equal"),
        helper.make_node("Not", ["eq"], ["cond1"], name="not"),
        helper.make_node("If", ["cond1"], ["out1"], name="if_not_equal", then_branch=then_1, else_branch=else_1),
        helper.make_node("If", ["eq"], ["out2"], name="if_equal", then_branch=then_2, else_branch=else_2),
        helper.make_node("Add", ["out1", "out2"], ["Y"], name="sum"),
    ]
    flag = numpy_helper.from_array(np.array(True), "flag_init")
    graph = helper.make_graph(nodes, "if_expressions", [vi("X", F, [2, 4])], [vi("Y", F, [2, 4])], [flag])
    return model_of(graph), dict(expect_after={"Cos": 1, "Mul": 2, "Add": 3, "Abs": 1},
                                 expect_analyze={"dead_branches": 3})


def dropout(r: Rng):
    nodes = [helper.make_node("Dropout", ["X"], ["d1"], name="dropout_plain"),
             helper.make_node("Relu", ["d1"], ["Y"], name="relu"),
             helper.make_node("Dropout", ["X"], ["d2", "mask"], name="dropout_mask_used"),
             helper.make_node("Cast", ["mask"], ["maskf"], name="cast", to=F),
             helper.make_node("Mul", ["d2", "maskf"], ["Z"], name="mul"),
             helper.make_node("Dropout", ["X"], ["d3", "mask3"], name="dropout_mask_unused"),
             helper.make_node("Neg", ["d3"], ["W"], name="neg")]
    graph = helper.make_graph(nodes, "dropout", [vi("X", F, [2, 4])], [vi("Y", F, [2, 4]), vi("Z", F, [2, 4]),
                                                                         vi("W", F, [2, 4])])
    return model_of(graph), dict(expect_after={"Dropout": 1, "Relu": 1, "Neg": 1, "Mul": 1, "Cast": 1},
                                 expect_analyze={"identity_nodes": 2})


def cse_outputs(r: Rng):
    """Duplicates whose outputs are graph outputs (survivor renamed, or an Identity added),
    identical initializers (merged, which then makes two Mul nodes duplicates), and an
    initializer of the same shape but other values (kept)."""
    w = r.tensor("W1", (4,))
    w2 = numpy_helper.from_array(numpy_helper.to_array(w).copy(), "W2")
    nodes = [helper.make_node("Relu", ["X"], ["A1"], name="relu_a"),
             helper.make_node("Relu", ["X"], ["A2"], name="relu_b"),
             helper.make_node("Sigmoid", ["X"], ["b1"], name="sig_a"),
             helper.make_node("Sigmoid", ["X"], ["B2"], name="sig_b"),
             helper.make_node("Add", ["b1", "B2"], ["C"], name="add"),
             helper.make_node("Mul", ["X", "W1"], ["M1"], name="mul_a"),
             helper.make_node("Mul", ["X", "W2"], ["M2"], name="mul_b"),
             helper.make_node("Mul", ["X", "W3"], ["M3"], name="mul_c")]
    graph = helper.make_graph(nodes, "cse_outputs", [vi("X", F, [2, 4])],
                              [vi(n, F, [2, 4]) for n in ("A1", "A2", "B2", "C", "M1", "M2", "M3")],
                              [w, w2, r.tensor("W3", (4,))])
    return model_of(graph), dict(expect_after={"Relu": 1, "Sigmoid": 1, "Mul": 2, "Identity": 2, "Add": 1},
                                 expect_analyze={"duplicate_computations": 2, "duplicate_initializers": 1})


def local_functions(r: Rng):
    """A local function that is called (kept) and one nothing calls (removed)."""
    used = helper.make_function("local", "AddRelu", ["x", "y"], ["z"],
                                [helper.make_node("Add", ["x", "y"], ["s"]), helper.make_node("Relu", ["s"], ["z"])],
                                [helper.make_opsetid("", OPSET)])
    unused = helper.make_function("local", "Unused", ["x"], ["z"], [helper.make_node("Neg", ["x"], ["z"])],
                                  [helper.make_opsetid("", OPSET)])
    nodes = [helper.make_node("AddRelu", ["X", "X"], ["Y"], name="call", domain="local"),
             helper.make_node("Unused", ["X"], ["dead"], name="dead_call", domain="local")]
    graph = helper.make_graph(nodes, "local_functions", [vi("X", F, [2, 4])], [vi("Y", F, [2, 4])])
    model = model_of(graph, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)],
                     functions=[used, unused], ir_version=8)
    return model, dict(expect_after={"AddRelu": 1}, expect_functions=1)


def torchvision_model(arch: str):
    """torchvision, seeded random weights and random BatchNorm statistics, eval mode,
    exported with BatchNormalization kept (no constant folding, training mode preserved)."""
    import torch
    import torchvision
    torch.manual_seed(0)
    net = getattr(torchvision.models, arch)(weights=None)
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0, 0.1)
                module.running_mean.normal_(0, 0.1)
                module.running_var.uniform_(0.5, 1.5)
    net.eval()
    buf = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(net, torch.randn(1, 3, 64, 64), buf, opset_version=OPSET, input_names=["input"],
                          output_names=["logits"], training=torch.onnx.TrainingMode.PRESERVE,
                          do_constant_folding=False)
    model = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model)
    convs = sum(n.op_type == "Conv" for n in model.graph.node)
    bns = sum(n.op_type == "BatchNormalization" for n in model.graph.node)
    assert bns > 0, f"{arch}: the export lost its BatchNormalization nodes"
    return model, dict(folds=True, expect_after={"Conv": convs, "BatchNormalization": 0})


def small_transformer():
    """A two-layer transformer encoder written out in torch (attention with heads split by
    x.shape, LayerNorm, GELU MLP), exported with dynamic batch and sequence axes: the
    Shape -> Gather -> Unsqueeze -> Concat chains and Constants exporters emit."""
    import torch

    class Block(torch.nn.Module):
        def __init__(self, width, heads):
            super().__init__()
            self.heads = heads
            self.qkv = torch.nn.Linear(width, 3 * width)
            self.proj = torch.nn.Linear(width, width)
            self.norm1 = torch.nn.LayerNorm(width)
            self.norm2 = torch.nn.LayerNorm(width)
            self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 2 * width), torch.nn.GELU(), torch.nn.Linear(2 * width, width))

        def forward(self, x):
            batch, length, width = x.shape
            q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
            split = lambda t: t.reshape(batch, length, self.heads, width // self.heads).transpose(1, 2)
            q, k, v = split(q), split(k), split(v)
            attention = torch.softmax(q @ k.transpose(-2, -1) / (width // self.heads) ** 0.5, dim=-1)
            y = (attention @ v).transpose(1, 2).reshape(batch, length, width)
            x = x + self.proj(y)
            return x + self.mlp(self.norm2(x))

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(50, 32)
            self.blocks = torch.nn.Sequential(Block(32, 4), Block(32, 4))
            self.head = torch.nn.Linear(32, 8)

        def forward(self, tokens):
            positions = torch.arange(tokens.shape[1]).unsqueeze(0)
            x = self.embed(tokens) + self.embed(positions)
            return self.head(self.blocks(x))

    torch.manual_seed(0)
    net = Encoder().eval()
    buf = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(net, torch.randint(0, 4, (1, 6)), buf, opset_version=OPSET, input_names=["tokens"],
                          output_names=["logits"], dynamic_axes={"tokens": {0: "batch", 1: "length"}},
                          do_constant_folding=False)
    model = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model)
    # Its Constants become initializers, which ONNX Runtime then prepacks (the last bit of
    # some sums changes): the default optimize is compared with ONNX Runtime's basic level,
    # which does the same.
    return model, dict(expect_after={"Constant": 0}, default_reference="basic")


# ---------------------------------------------------------------------------------------

def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    seed = SEED
    cases = []

    def add(name, description, built, external=False, threshold=1024):
        nonlocal seed
        model, extra = built
        folder = out / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        path = folder / "model.onnx"
        if external:
            onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                            location="model.onnx.data", size_threshold=threshold)
        else:
            path.write_bytes(model.SerializeToString())
        onnx.checker.check_model(str(path))
        bool_inputs = any(v.type.tensor_type.elem_type == TensorProto.BOOL for v in model.graph.input)
        case = {"name": name, "model": f"{name}/model.onnx", "description": description, "external": external,
                "bool_inputs": bool_inputs, "folds": False, "nan_outputs": False, "fp16": False, "expect_after": {},
                "expect_analyze": {}, "expect_warning": None, "expect_skips": [], "expect_functions": None}
        case.update(extra)
        cases.append(case)

    def rng():
        nonlocal seed
        seed += 1
        return Rng(seed)

    add("resnet_style", "ResNet-style graph with dead BatchNorm, Identity, an isolated component, a constant If, "
        "duplicate GlobalAveragePool", resnet_style(rng()))
    add("resnet_style_external", "resnet_style with every tensor in external data", resnet_style(rng()), external=True,
        threshold=0)
    add("outer_scope", "If / Loop bodies reading outer values", outer_scope(rng()))
    add("conv_bn_grouped", "grouped Conv (group 2) + BatchNormalization", conv_bn(rng(), "conv_bn_grouped", (8, 4, 3, 3), 2, True, 8))
    add("conv_bn_depthwise", "depthwise Conv + BatchNormalization", conv_bn(rng(), "conv_bn_depthwise", (8, 1, 3, 3), 8, False, 8))
    add("conv_bn_no_bias", "Conv without bias + BatchNormalization (a bias is added)",
        conv_bn(rng(), "conv_bn_no_bias", (6, 4, 3, 3), 1, False, 4))
    add("convtranspose_bn", "ConvTranspose group 2 + BatchNormalization", conv_transpose_bn(rng()))
    add("gemm_bn_transb0", "Gemm transB 0, alpha/beta, C [N] + BatchNormalization", gemm_bn(rng(), 0, (6,)))
    add("gemm_bn_transb1", "Gemm transB 1, alpha/beta, C [M, N] + BatchNormalization", gemm_bn(rng(), 1, (3, 6)))
    add("gemm_bn_no_c", "Gemm transB 1 without C + BatchNormalization", gemm_bn(rng(), 1, None))
    add("conv_bn_fp16", "FLOAT16 Conv + BatchNormalization", conv_bn_fp16(rng()))
    add("bn_negative_variance", "negative running variance, var + eps > 0", negative_variance(rng(), False))
    add("bn_negative_variance_clamped", "negative running variance, var + eps <= 0 in one channel",
        negative_variance(rng(), True))
    add("conv_output_used_twice", "a Conv output read by BatchNormalization and Relu (not folded)",
        conv_output_used_twice(rng()))
    add("shared_weight", "one weight shared by two Convs, each followed by BatchNormalization", shared_weight(rng()))
    add("random_normal", "duplicate RandomNormal (never merged) and duplicate Relu (merged)", random_normal(rng()))
    add("loop_never_runs", "Loop with trip count 0; one with a used scan output", loop_never_runs(rng()))
    add("if_expressions", "If conditions from Equal/Not/Cast of constants, nested If, name collisions", if_expressions(rng()))
    add("if_expressions_external", "if_expressions with every tensor in external data (branch initializers move "
        "with their data)", if_expressions(rng()), external=True, threshold=0)
    add("dropout", "Dropout in inference mode, with and without the mask used", dropout(rng()))
    add("cse_outputs", "duplicates that are graph outputs, identical initializers", cse_outputs(rng()))
    add("local_functions", "a used and an unused local function", local_functions(rng()))
    resnet = torchvision_model("resnet18")
    add("resnet18", "torchvision ResNet-18, random weights and BatchNorm statistics", resnet)
    add("resnet18_external", "the same ResNet-18 with its weights in model.onnx.data", resnet, external=True)
    add("mobilenet_v2", "torchvision MobileNetV2, random weights and BatchNorm statistics", torchvision_model("mobilenet_v2"))
    add("small_transformer", "a two-layer transformer encoder exported by torch (attention, LayerNorm, shape chains)",
        small_transformer())

    (out / "manifest.json").write_text(json.dumps({"format": 1, "generator_sha1": generator_sha1(), "cases": cases}, indent=1))
    print(f"wrote {len(cases)} pass fixtures to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

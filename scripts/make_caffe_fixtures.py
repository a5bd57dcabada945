#!/usr/bin/env python3
"""Fixtures for `export --to caffe`: torchvision architectures with seeded random weights
and BatchNorm kept in the export, plus small hand-made nets for each layer rule and each
refusal.

Usage: /usr/bin/python3 scripts/make_caffe_fixtures.py OUT_DIR

Needs Debian's python3-onnx, python3-numpy, python3-torch and python3-torchvision; nothing
is downloaded. Writes OUT_DIR/manifest.json (one entry per model: file, kind, the input
shape, what the test expects) and the models. Re-running with the same generator is a
no-op; a lock file keeps two runs from writing at once.
"""
from __future__ import annotations

import fcntl
import hashlib
import io
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
VERSION = "3"


def generator_id() -> str:
    return hashlib.sha1((Path(__file__).read_bytes() + VERSION.encode())).hexdigest()


# ---------------------------------------------------------------------------------------
# torchvision

def torchvision_model(arch: str, size: int, dynamic_batch: bool) -> onnx.ModelProto:
    import torch
    import torchvision
    torch.manual_seed(0)
    net = getattr(torchvision.models, arch)(weights=None)
    if arch == "vgg11_bn":
        # At 64x64 the features end 2x2: pool them to 1x1 and size the first Linear to
        # match (the conv/BN stack is the architecture's own).
        net.avgpool = torch.nn.AdaptiveAvgPool2d((1, 1))
        net.classifier[0] = torch.nn.Linear(512, 4096)
    gen = torch.Generator().manual_seed(1)
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            # Statistics that are not 0/1, so folding them is not a no-op.
            m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=gen) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(m.num_features, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
    net.eval()
    buf = io.BytesIO()
    kwargs = {}
    if dynamic_batch:
        kwargs["dynamic_axes"] = {"input": {0: "N"}, "logits": {0: "N"}}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, torch.randn(1, 3, size, size), buf, opset_version=OPSET, input_names=["input"],
                          output_names=["logits"], training=torch.onnx.TrainingMode.PRESERVE, **kwargs)
    model = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model)
    return model


TORCHVISION = [
    # name, arch, input size, dynamic batch
    ("resnet18", "resnet18", 64, True),
    ("mobilenet_v2", "mobilenet_v2", 64, False),
    ("squeezenet1_1", "squeezenet1_1", 64, False),
    ("vgg11_bn", "vgg11_bn", 64, False),
    ("densenet121", "densenet121", 64, False),
    ("shufflenet_v2_x0_5", "shufflenet_v2_x0_5", 64, False),
    ("mnasnet0_5", "mnasnet0_5", 64, False),
]


# ---------------------------------------------------------------------------------------
# Hand-made nets

class Net:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.inits: list[TensorProto] = []
        self.nodes: list[onnx.NodeProto] = []

    def w(self, name: str, shape, scale=0.5, positive=False) -> str:
        v = self.rng.standard_normal(shape).astype(np.float32) * scale
        if positive:
            v = np.abs(v) + 0.5
        self.inits.append(numpy_helper.from_array(v, name))
        return name

    def const(self, name: str, values, dtype=np.int64) -> str:
        self.inits.append(numpy_helper.from_array(np.array(values, dtype=dtype), name))
        return name

    def node(self, op: str, inputs, outputs, **attrs) -> str:
        self.nodes.append(helper.make_node(op, inputs, outputs, name=f"{op.lower()}_{len(self.nodes)}", **attrs))
        return outputs[0]

    def model(self, inputs, outputs, opset=OPSET) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, "net",
                                  [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                                  [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
                                  self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 7
        # The outputs' shapes from ONNX's own shape inference.
        g = onnx.shape_inference.infer_shapes(m).graph
        inferred = {v.name: v for v in list(g.value_info) + list(g.output)}
        for o in m.graph.output:
            if o.name in inferred:
                o.CopyFrom(inferred[o.name])
        if all(o.type.tensor_type.HasField("shape") for o in m.graph.output):
            onnx.checker.check_model(m)
        else:
            print("no inferred shape for", [o.name for o in m.graph.output if not o.type.tensor_type.HasField("shape")])
        return m


def bn(net: Net, x: str, prefix: str, channels: int, out: str) -> str:
    return net.node("BatchNormalization", [x, net.w(prefix + ".s", [channels], positive=True), net.w(prefix + ".b", [channels]),
                                           net.w(prefix + ".m", [channels], 0.1), net.w(prefix + ".v", [channels], positive=True)],
                    [out], epsilon=1e-3)


def hand_made() -> list[tuple[str, onnx.ModelProto, dict]]:
    out = []
    x = ("x", [1, 4, 9, 11])

    n = Net(1)  # grouped, dilated conv with asymmetric pads, BN folded; leaky/prelu/elu
    c = n.node("Conv", ["x", n.w("w1", [8, 2, 3, 3]), n.w("b1", [8])], ["c1"], group=2, dilations=[2, 1], pads=[1, 0, 2, 1],
               strides=[1, 2])
    b = bn(n, c, "bn1", 8, "n1")
    r = n.node("LeakyRelu", [b], ["r1"], alpha=0.1)
    p = n.node("PRelu", [r, n.w("slope", [8, 1, 1])], ["p1"])
    c2 = n.node("Conv", [p, n.w("w2", [8, 1, 3, 3])], ["c2"], group=8, pads=[0, 1, 1, 0], strides=[2, 2])
    e = n.node("Elu", [c2], ["y"], alpha=0.7)
    out.append(("conv_rules", n.model([x], [e]), {"ok": True}))

    n = Net(2)  # pooling: floor with padding, ceil, count_include_pad 0 and 1, global max
    a = n.node("MaxPool", ["x"], ["m1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    b = n.node("AveragePool", ["x"], ["a1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=0)
    c = n.node("AveragePool", ["x"], ["a2"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)
    d = n.node("AveragePool", ["x"], ["a3"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    e = n.node("MaxPool", ["x"], ["m2"], kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1, pads=[0, 0, 1, 1])
    g = n.node("GlobalMaxPool", ["x"], ["g"])
    out.append(("pool_rules", n.model([x], [a, b, c, d, e, g]), {"ok": True}))

    n = Net(3)  # BN not after a conv, per-channel and scalar constants, Clip/HardSwish/HardSigmoid, eltwise
    b = bn(n, "x", "bn", 4, "n1")
    s = n.node("Mul", [b, n.w("gamma", [1, 4, 1, 1])], ["s1"])
    s = n.node("Add", [s, n.w("beta", [4, 1, 1])], ["s2"])
    s = n.node("Sub", [s, n.const("half", [0.5], np.float32)], ["s3"])
    c = n.node("Clip", [s, n.const("lo", -0.25, np.float32), n.const("hi", 0.75, np.float32)], ["c1"])
    r6 = n.node("Clip", [s, n.const("zero", 0.0, np.float32), n.const("six", 6.0, np.float32)], ["c2"])
    hs = n.node("HardSwish", [s], ["hs"])
    hg = n.node("HardSigmoid", [s], ["hg"], alpha=0.3, beta=0.4)
    m = n.node("Max", [c, r6], ["mx"])
    d = n.node("Sub", [hs, hg], ["df"])
    t = n.node("Tanh", [m], ["th"])
    sg = n.node("Sigmoid", [d], ["sg"])
    y = n.node("Mul", [t, sg], ["y"])
    gp = n.node("GlobalAveragePool", [y], ["gp"])
    gate = n.node("Mul", [y, gp], ["gated"])
    sm = n.node("Sum", [gate, y, b], ["sum"])
    out.append(("elementwise_rules", n.model([x], [sm], opset=14), {"ok": True}))  # HardSwish is opset 14

    n = Net(4)  # shapes: Transpose, Split, Slice, Concat, Reshape, Flatten, MatMul, Gemm (transB 0), Softmax, LRN, Resize
    l = n.node("LRN", ["x"], ["lrn"], size=3, alpha=1e-2, beta=0.75, bias=1.5)
    up = n.node("Resize", [l, "", n.const("scales", [1, 1, 2, 3], np.float32)], ["up"], mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    a, b = n.node("Split", [up, n.const("split", [1, 3])], ["sa", "sb"], axis=1), "sb"
    sl = n.node("Slice", [b, n.const("st", [1, 2]), n.const("en", [100, -1]), n.const("ax", [2, 3])], ["sl"])
    cat = n.node("Concat", [n.node("Slice", [a, n.const("st2", [1, 2]), n.const("en2", [100, -1]), n.const("ax2", [2, 3])], ["sa2"]), sl],
                 ["cat"], axis=1)
    tr = n.node("Transpose", [cat], ["tr"], perm=[0, 2, 3, 1])
    rs = n.node("Reshape", [tr, n.const("shape", [1, -1, 4])], ["rs"])
    mm = n.node("MatMul", [rs, n.w("mm", [4, 6])], ["mm_out"])
    fl = n.node("Flatten", [mm], ["fl"], axis=1)
    k = 1
    for d in [17 * 30 * 6]:
        k = d
    gm = n.node("Gemm", [fl, n.w("gw", [k, 5], 0.05), n.w("gb", [5])], ["gm"], alpha=0.5, beta=2.0)
    sm = n.node("Softmax", [gm], ["probs"], axis=1)
    rm = n.node("ReduceMean", [up], ["rm"], axes=[2, 3], keepdims=0)
    out.append(("shape_rules", n.model([x], [sm, rm]), {"ok": True}))

    n = Net(5)  # ConvTranspose (grouped), Squeeze/Unsqueeze
    ct = n.node("ConvTranspose", ["x", n.w("tw", [4, 3, 3, 3]), n.w("tb", [6])], ["ct"], group=2, strides=[2, 2], pads=[1, 1, 1, 1])
    us = n.node("Unsqueeze", [n.node("GlobalAveragePool", [ct], ["g"]), n.const("uax", [4])], ["us"])
    sq = n.node("Squeeze", [us, n.const("sax", [3, 4])], ["sq"])
    out.append(("deconv_rules", n.model([x], [sq, ct]), {"ok": True}))

    # Refusals: each net mixes one that exports and ones that cannot.
    n = Net(6)
    r = n.node("Relu", ["x"], ["r"])
    lin = n.node("Resize", [r, "", n.const("sc", [1, 1, 2, 2], np.float32)], ["lin"], mode="linear")
    e = n.node("Exp", [r], ["e"])
    half = n.node("Resize", [r, "", n.const("sc2", [1, 1, 1.5, 1.5], np.float32)], ["half"], mode="nearest")
    out.append(("refusals", n.model([x], [lin, e, half]),
                {"ok": False, "refused": ["Resize", "Exp"], "texts": ["linear has no exact Caffe layer", "Exp has no exact Caffe layer",
                                                                      "whole number"]}))

    n = Net(7)  # a pooling whose end padding Caffe cannot reproduce (pad >= kernel)
    p = n.node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[1, 1], pads=[0, 0, 3, 3])
    out.append(("refuse_pool_pads", n.model([x], [p]), {"ok": False, "refused": ["MaxPool"], "texts": ["no Caffe padding"]}))

    n = Net(8)  # MatMul of two computed tensors; Add with broadcasting
    r = n.node("Relu", ["x"], ["r"])
    mm = n.node("MatMul", [r, n.node("Transpose", [r], ["t"], perm=[0, 1, 3, 2])], ["mm"])
    ad = n.node("Add", [r, n.node("GlobalAveragePool", [r], ["g"])], ["ad"])
    out.append(("refuse_matmul", n.model([x], [mm, ad]), {"ok": False, "refused": ["MatMul", "Add"], "texts": ["computed"]}))

    n = Net(10)  # opset 9: Upsample nearest with a scales input; Sum of one input
    up = n.node("Upsample", ["x", n.const("scales", [1, 1, 2, 2], np.float32)], ["up"], mode="nearest")
    one = n.node("Sum", [up], ["one"])
    out.append(("upsample_rule", n.model([x], [one], opset=9), {"ok": True}))

    n = Net(9)  # opset 11: Softmax over a 4-D input coerces to 2-D; ConvTranspose output_padding
    sm = n.node("Softmax", ["x"], ["sm"], axis=1)
    ct = n.node("ConvTranspose", ["x", n.w("tw", [4, 2, 3, 3])], ["ct"], strides=[2, 2], output_padding=[1, 1])
    out.append(("refuse_opset11", n.model([x], [sm, ct], opset=11),
                {"ok": False, "refused": ["Softmax", "ConvTranspose"], "texts": ["before opset 13", "output_padding"]}))
    return out


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    folder = Path(sys.argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        manifest_path = folder / "manifest.json"
        stamp = generator_id()
        if manifest_path.exists() and json.loads(manifest_path.read_text()).get("generator") == stamp:
            return 0
        entries = []
        for name, model, expect in hand_made():
            onnx.save(model, folder / f"{name}.onnx")
            entries.append({"name": name, "file": f"{name}.onnx", "kind": "hand", "input_shape": [1, 4, 9, 11], **expect})
        for name, arch, size, dynamic in TORCHVISION:
            model = torchvision_model(arch, size, dynamic)
            onnx.save(model, folder / f"{name}.onnx")
            entries.append({"name": name, "file": f"{name}.onnx", "kind": "torchvision", "input_shape": [1, 3, size, size],
                            "dynamic_batch": dynamic, "ok": True})
        # One model with its weights in an external data file.
        ext = torchvision_model("resnet18", 64, False)
        onnx.save(ext, str(folder / "resnet18_external.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                  location="resnet18_external.onnx.data", size_threshold=1024)
        entries.append({"name": "resnet18_external", "file": "resnet18_external.onnx", "kind": "torchvision",
                        "input_shape": [1, 3, 64, 64], "dynamic_batch": False, "ok": True, "external": True})
        manifest_path.write_text(json.dumps({"generator": stamp, "models": entries}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

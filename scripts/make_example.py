#!/usr/bin/python3
"""Writes the bundled example: a small MLP classifier (seeded weights) saved the way model
hubs ship large models, a graph file plus an external data file:

    examples/mlp/model.onnx        the graph (a few hundred bytes)
    examples/mlp/model.onnx.data   the weights (about 200 KiB)

Run with Debian's python3-onnx: /usr/bin/python3 scripts/make_example.py [OUTDIR]
"""
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main() -> None:
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent / "examples" / "mlp")
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    sizes = [64, 256, 128, 10]
    inits, nodes = [], []
    x = "input"
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        w = numpy_helper.from_array((rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32), f"fc{i}.weight")
        b = numpy_helper.from_array((rng.standard_normal(n_out) * 0.1).astype(np.float32), f"fc{i}.bias")
        inits += [w, b]
        nodes.append(helper.make_node("Gemm", [x, w.name, b.name], [f"fc{i}"], name=f"fc{i}"))
        x = f"fc{i}"
        if i < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [x], [f"relu{i}"], name=f"relu{i}"))
            x = f"relu{i}"
    nodes.append(helper.make_node("Softmax", [x], ["probabilities"], axis=1, name="softmax"))
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", sizes[0]])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", sizes[-1]])],
        inits)
    model = helper.make_model(graph, producer_name="onnxstream-example", opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    for stale in (out / "model.onnx", out / "model.onnx.data"):
        stale.unlink(missing_ok=True)
    onnx.save_model(model, str(out / "model.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="model.onnx.data", size_threshold=0)
    print(f"wrote {out / 'model.onnx'} and {out / 'model.onnx.data'}")


if __name__ == "__main__":
    main()

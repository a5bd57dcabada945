"""The numpy reference of quantize's rule, as a python user would run it (the benchmark's
python-onnx row for `quantize --weights int8|int4`): load the whole model, quantize every
float32 MatMul/Gemm weight (2-D, >= 4 KiB) symmetrically in blocks of 32 along K with
round-half-even, put a DequantizeLinear (opset 21, block_size) in front, save with external
data. Usage: py_quantize.py MODEL OUT int8|int4"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

BLOCK = 32


def quantize(w: np.ndarray, levels: int) -> tuple[np.ndarray, np.ndarray]:
    k, n = w.shape
    pad = (-k) % BLOCK
    padded = np.pad(w, ((0, pad), (0, 0)))
    blocks = padded.reshape(-1, BLOCK, n)
    scale = (np.abs(blocks).max(axis=1) / levels).astype(np.float32)
    scale[scale == 0] = 1
    q = np.clip(np.rint(blocks / scale[:, None, :]), -levels - 1, levels).reshape(-1, n)[:k]
    return q, scale


def main() -> None:
    model_path, out, weights = sys.argv[1], sys.argv[2], sys.argv[3]
    levels = 127 if weights == "int8" else 7
    m = onnx.load(model_path)
    inits = {t.name: t for t in m.graph.initializer}
    readers = {n.input[1] for n in m.graph.node if n.op_type in ("MatMul", "Gemm") and len(n.input) > 1}
    new_nodes = []
    for name in sorted(readers):
        t = inits.get(name)
        if t is None or t.data_type != onnx.TensorProto.FLOAT or len(t.dims) != 2:
            continue
        w = numpy_helper.to_array(t)
        if w.nbytes < 4096:
            continue
        q, scale = quantize(w, levels)
        m.graph.initializer.remove(t)
        if levels == 127:
            qt = numpy_helper.from_array(q.astype(np.int8), name + "_q")
        else:  # INT4 (22; older onnx has no name for it): two per byte, low nibble first
            nibbles = (q.astype(np.int8).flatten() & 0x0F).astype(np.uint8)
            nibbles = np.pad(nibbles, (0, nibbles.size % 2))
            qt = onnx.TensorProto(name=name + "_q", data_type=22, dims=q.shape)
            qt.raw_data = (nibbles[0::2] | (nibbles[1::2] << 4)).tobytes()
        m.graph.initializer.extend([qt, numpy_helper.from_array(scale, name + "_scale")])
        new_nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_scale"], [name], axis=0, block_size=BLOCK))
    nodes = new_nodes + list(m.graph.node)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    for opset in m.opset_import:
        if opset.domain in ("", "ai.onnx"):
            opset.version = max(opset.version, 21)
    m.ir_version = max(m.ir_version, 10)
    onnx.save_model(m, out, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=os.path.basename(out) + ".data", size_threshold=1024)


if __name__ == "__main__":
    main()

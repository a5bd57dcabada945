"""Peak memory of commands that read every weight of a model held in the .onnx itself.

DESIGN.md: peak RSS (ru_maxrss, file-backed pages included) depends on metadata, not on
weight bytes. Every weight here is read through the mapped model: by a pass (fold-bn
scales every Conv weight, produced when the optimized model is written), by convert, by
the planner of a rewritten model (export --to safetensors --link re-reads each linked
tensor's body), so a read path that forgets to release the pages behind it maps the
whole file. The child's own peak is measured (wait4 in a small interpreter: this test's
arrays are not counted: refcheck.peak_rss).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import refcheck

WEIGHT_BYTES = 320 << 20  # a few hundred MB: far above what the metadata needs


def conv_batchnorm_model(path: Path) -> int:
    """Convs of 9 MiB weights, each followed by a BatchNormalization: fold-bn rescales
    every weight. Returns the weight bytes."""
    rng = np.random.default_rng(7)
    channels = 512
    count = WEIGHT_BYTES // (channels * channels * 9 * 4)
    nodes, inits = [], []
    x = "x"
    for i in range(count):
        w = rng.standard_normal((channels, channels, 3, 3), dtype=np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        for name in ("scale", "bias", "mean", "var"):
            value = rng.uniform(0.5, 1.5, channels).astype(np.float32)
            inits.append(numpy_helper.from_array(value, f"{name}{i}"))
        nodes.append(helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("BatchNormalization", [f"c{i}", f"scale{i}", f"bias{i}", f"mean{i}", f"var{i}"],
                                      [f"y{i}"]))
        x = f"y{i}"
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, 8, 8])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, channels, 8, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.save(model, str(path))
    return count * channels * channels * 9 * 4


def many_tensors_model(path: Path) -> int:
    """Twenty thousand 16 KiB initializers summed in a chain: any walk over their bodies
    that keeps what it read maps the file. Returns the weight bytes."""
    count = WEIGHT_BYTES // (16 << 10)
    rng = np.random.default_rng(8)
    block = rng.standard_normal((64, 4096), dtype=np.float32)
    inits = [numpy_helper.from_array(block[i % 64].reshape(64, 64) + np.float32(i), f"w{i}") for i in range(count)]
    graph = helper.make_graph([helper.make_node("Sum", [f"w{i}" for i in range(count)], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.save(model, str(path))
    return count * 64 * 64 * 4


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("page_release")
    return {
        "conv_bn": (folder / "conv_bn.onnx", conv_batchnorm_model(folder / "conv_bn.onnx")),
        "many": (folder / "many.onnx", many_tensors_model(folder / "many.onnx")),
    }


CASES = {
    # a pass that reads every weight (fold-bn), and the writer of its results
    "optimize fold-bn": ("conv_bn", lambda m, o: ["optimize", m, "-o", o / "out.onnx", "--passes", "fold-bn"]),
    # every weight converted
    "convert": ("conv_bn", lambda m, o: ["convert", m, "--dtype", "fp16", "-o", o / "out.onnx"]),
    # the linked model's planner reads every linked tensor's body again
    "export safetensors --link": ("many", lambda m, o: ["export", m, "--to", "safetensors", "--link", "-o",
                                                         o / "out.safetensors"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_reading_every_weight_keeps_peak_memory_flat(models, tmp_path, case):
    which, command = CASES[case]
    model, weight_bytes = models[which]
    out = tmp_path / "out"
    out.mkdir()
    code, peak, stderr = refcheck.peak_rss([*command(model, out), "--quiet"])
    assert code == 0, stderr
    print(f"{case}: peak RSS {peak / 2**20:.1f} MiB for {weight_bytes / 2**20:.0f} MiB of weights")
    assert peak < weight_bytes / 3, f"{case}: peak RSS {peak / 2**20:.1f} MiB for {weight_bytes / 2**20:.0f} MiB of weights"

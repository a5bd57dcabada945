"""extract, edit and infer-shapes past 2 GB (issue 32), opt-in: ONNXSTREAM_LARGE=1
(scripts/test.sh --large), on the 2.9 GB per-tensor GPT export of scripts/make_llm_fixture.py.

- extract of the first half (up to the middle MatMul) copies only the weights it reads, at a
  peak RSS within the metadata budget (2 x the .onnx + 32 MiB), and runs in ONNX Runtime;
- edit (a rename, an intermediate tensor exposed, metadata) reads no weight, points at the
  same data files and runs in ONNX Runtime, where the exposed tensor equals the extract's
  output and the logits equal the original's (ONNX Runtime's optimizer off: its fusions
  differ between graphs);
- infer-shapes writes the value_info onnx.shape_inference gives on the weight-stripped copy.
python-onnx cannot do any of these on this model: extract_model and infer_shapes load the
whole model, past protobuf's 2 GB.
"""
from __future__ import annotations

import time

import numpy as np
import onnx
import pytest

import refcheck
from test_infer_shapes import compare
from test_passes import ort_run
from test_quantize import LARGE, large_llm  # noqa: F401 (the module-scoped 2.9 GB fixture)

pytestmark = pytest.mark.skipif(not LARGE, reason="multi-GB: scripts/test.sh --large (ONNXSTREAM_LARGE=1)")


def middle_matmul_output(model) -> str:
    graph = onnx.load(str(model), load_external_data=False).graph
    matmuls = [n for n in graph.node if n.op_type == "MatMul"]
    return matmuls[len(matmuls) // 2].output[0]


def run_bounded(args: list, budget: int) -> float:
    started = time.monotonic()
    code, rss, stderr = refcheck.peak_rss(args, timeout=1800)
    seconds = time.monotonic() - started
    assert code == 0, stderr
    print(f"{args[0]}: {seconds:.2f} s, peak RSS {rss >> 20} MiB (budget {budget >> 20} MiB)")
    assert rss < budget, f"{args[0]}: peak RSS {rss >> 20} MiB over {budget >> 20} MiB"
    return seconds


def test_large_llm_extract_edit_and_infer_shapes(onnxstream, ort, tmp_path, large_llm):  # noqa: F811
    src = large_llm.model
    assert sum(p.stat().st_size for p in src.parent.iterdir() if p.is_file()) > 2 << 30
    budget = 2 * src.stat().st_size + (32 << 20)
    cut = middle_matmul_output(src)
    ids = large_llm.inputs()
    (input_name, tokens), = ids.items()

    extracted = tmp_path / "x.onnx"
    run_bounded(["extract", src, "--outputs", cut, "-o", extracted, "--quiet"], budget)
    kept = (tmp_path / "x.onnx.data").stat().st_size
    print(f"extract kept {kept >> 20} MiB of weights")
    assert 0 < kept < sum(p.stat().st_size for p in src.parent.iterdir() if p.name != src.name)

    edited = src.parent / "model.edited.onnx"  # beside the model: it points at the same files
    shapes = src.parent / "model.shapes.onnx"
    try:
        run_bounded(["edit", src, "--rename", f"{input_name}=tokens", "--add-output", cut, "--metadata", "source=test",
                     "-o", edited, "--quiet"], budget)
        run_bounded(["infer-shapes", src, "-o", shapes, "--quiet"], budget)

        x = ort_run(extracted, ids)
        e = ort_run(edited, {"tokens": tokens})
        original = ort_run(src, ids)
        assert list(x) == [cut]
        assert np.array_equal(x[cut], e[cut])
        for name, value in original.items():
            assert np.array_equal(value, e[name]), name

        wrong, missing, compared = compare(src, shapes)
        print(f"infer-shapes: {compared} values from onnx, {len(missing)} known to onnx only")
        assert not wrong, wrong[:10]
        assert not missing, missing
    finally:
        edited.unlink(missing_ok=True)
        shapes.unlink(missing_ok=True)

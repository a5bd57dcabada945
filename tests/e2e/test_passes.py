"""`onnxstream analyze` and `onnxstream optimize` against python-onnx and ONNX Runtime.

Fixtures: scripts/make_pass_fixtures.py, written to <ONNXSTREAM_FIXTURES>/passes (made when
missing or stale). ONNX Runtime runs with its own graph optimizer disabled unless a test
says otherwise, so what is compared is onnxstream's rewrite alone:
  - every pass but fold-bn: outputs bit-identical to the original's;
  - fold-bn: within 1e-5 of the output's largest magnitude (FLOAT16 models: within the
    format's precision), measured and printed;
  - python-onnx's checker accepts every output.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest

import cases
import refcheck
from refcheck import describe, run_cli

MAKE_PASS_FIXTURES = refcheck.REPO_ROOT / "scripts" / "make_pass_fixtures.py"
ORT_PASSES_JS = Path(__file__).resolve().parent / "ort_passes.js"
SINGLE_PASSES = ["dce", "const-if", "cse", "identity", "shape", "fold-constants", "nop"]
FOLD_TOLERANCE = 1e-5        # of the output's largest magnitude
FP16_TOLERANCE = 4e-3        # FLOAT16 keeps 11 significant bits


# ---------------------------------------------------------------------------------------
# Fixtures and ONNX Runtime

def passes_dir() -> Path:
    return cases.fixtures_dir() / "passes"


def _generator_sha1() -> str:
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_pass_fixtures", MAKE_PASS_FIXTURES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generator_sha1()


@functools.lru_cache(maxsize=None)
def manifest() -> dict:
    path = passes_dir() / "manifest.json"
    current = json.loads(path.read_text()) if path.exists() else None
    if current is None or current.get("generator_sha1") != _generator_sha1():
        subprocess.run([sys.executable, str(MAKE_PASS_FIXTURES), str(passes_dir())], check=True)
        current = json.loads(path.read_text())
    return current


def all_cases() -> list[dict]:
    return manifest()["cases"]


def case_ids(selected):
    return [c["name"] for c in selected]


def copy_case(case: dict, root: Path) -> Path:
    """The case's folder copied under root; returns its model path."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(passes_dir() / case["name"], root / case["name"])
    return root / case["model"]


def write_tensor_dir(folder: Path, tensors: dict) -> None:
    """Tensors as ort_passes.js reads them: raw little-endian files and a manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for index, (name, value) in enumerate(tensors.items()):
        value = np.asarray(value)
        value.astype(value.dtype.newbyteorder("<"), copy=False).tofile(folder / f"t{index}.bin")
        entries.append({"name": name, "dtype": value.dtype.name, "dims": list(value.shape), "file": f"t{index}.bin"})
    (folder / "manifest.json").write_text(json.dumps(entries))


def read_tensor_dir(folder: Path) -> dict:
    out = {}
    for e in json.loads((folder / "manifest.json").read_text()):
        dtype = np.dtype(e["dtype"]).newbyteorder("<")
        out[e["name"]] = np.fromfile(folder / e["file"], dtype=dtype).reshape(e["dims"])
    return out


def ort_run(model: Path, inputs: dict, level: str = "disabled") -> dict:
    problem = refcheck.ort_problem()
    if problem:
        pytest.fail(problem)
    with tempfile.TemporaryDirectory(prefix="onnxstream-passes-ort-") as tmp:
        in_dir, out_dir = Path(tmp) / "in", Path(tmp) / "out"
        write_tensor_dir(in_dir, inputs)
        proc = subprocess.run([shutil.which("node"), str(ORT_PASSES_JS), "run", str(model), str(in_dir), str(out_dir), level],
                              capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"ONNX Runtime failed on {model}: {proc.stderr}"
        return read_tensor_dir(out_dir)


def ort_optimize(model: Path, out: Path, level: str = "basic") -> onnx.ModelProto:
    proc = subprocess.run([shutil.which("node"), str(ORT_PASSES_JS), "optimize", str(model), str(out), level],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"ONNX Runtime's optimizer failed on {model}: {proc.stderr}"
    return onnx.load(str(out), load_external_data=False)


def variants(case: dict) -> list:
    return [True, False] if case["bool_inputs"] else [None]


@functools.lru_cache(maxsize=None)
def original_outputs(name: str, bool_value, level: str = "disabled") -> tuple[dict, dict]:
    """Inputs and ONNX Runtime's outputs for the case's original model (cached)."""
    model = passes_dir() / next(c for c in all_cases() if c["name"] == name)["model"]
    inputs = refcheck.make_inputs(model, 0, bool_value)
    return inputs, ort_run(model, inputs, level)


def op_counts(model: Path) -> dict[str, int]:
    """Nodes per op_type in every graph of the model (subgraphs and functions included)."""
    m = onnx.load(str(model), load_external_data=False)
    counts: dict[str, int] = {}

    def walk(nodes):
        for node in nodes:
            counts[node.op_type] = counts.get(node.op_type, 0) + 1
            for attr in node.attribute:
                if attr.HasField("g"):
                    walk(attr.g.node)
                for g in attr.graphs:
                    walk(g.node)

    walk(m.graph.node)
    for f in m.functions:
        walk(f.node)
    return counts


def relative_error(expected: np.ndarray, got: np.ndarray) -> float:
    """max |expected - got| over the finite elements of expected, over max |expected|."""
    e = expected.astype(np.float64)
    g = got.astype(np.float64)
    finite = np.isfinite(e)
    if not finite.any():
        return 0.0
    scale = np.abs(e[finite]).max()
    diff = np.abs(e[finite] - g[finite]).max()
    return float(diff / scale) if scale > 0 else float(diff)


def run_optimize(model: Path, *args, expect: int = 0) -> tuple[subprocess.CompletedProcess, dict | None]:
    proc = run_cli(["optimize", model, "--json", *args])
    assert proc.returncode == expect, describe(proc)
    return proc, json.loads(proc.stdout) if proc.stdout.strip() else None


def check_outputs(case: dict, optimized: Path, folds: bool, level: str = "disabled") -> float:
    """Compares ONNX Runtime's outputs of the original and the optimized model; returns the
    largest relative error (0.0 when bit-identical is required and holds). `level`: ONNX
    Runtime's optimizer level for the original (see test_real_models.py for why a model
    whose Constants become initializers is compared with the basic level)."""
    worst = 0.0
    for bool_value in variants(case):
        inputs, expected = original_outputs(case["name"], bool_value, level)
        got = ort_run(optimized, inputs)
        assert list(expected) == list(got), f"output names differ: {list(expected)} vs {list(got)}"
        for name in expected:
            x, y = expected[name], got[name]
            assert x.dtype == y.dtype and x.shape == y.shape, f"{name}: {x.dtype}{x.shape} vs {y.dtype}{y.shape}"
            if not folds:
                assert refcheck.same_array(x, y), f"output {name} of {optimized} is not bit-identical to the original's"
                continue
            error = relative_error(x, y)
            assert np.isfinite(y[np.isfinite(x)]).all(), f"{name}: the optimized model yields NaN/Inf where the original does not"
            limit = FP16_TOLERANCE if case["fp16"] else FOLD_TOLERANCE
            assert error <= limit, f"{case['name']} output {name}: fold-bn error {error:.3g} > {limit:g} of the largest magnitude"
            worst = max(worst, error)
    return worst


# ---------------------------------------------------------------------------------------
# optimize, all passes

@pytest.mark.parametrize("case", all_cases(), ids=case_ids(all_cases()))
def test_optimize_default(case, tmp_path, onnxstream):
    model = copy_case(case, tmp_path)
    before = cases.snapshot(model.parent)
    proc, report = run_optimize(model)
    out = model.with_name("model.optimized.onnx")
    assert out.is_file(), f"no output at the default path {out}"
    assert report["ok"] and report["output"] == str(out)
    after = cases.snapshot(model.parent)
    cases.assert_inputs_unchanged(before, after)
    onnx.checker.check_model(str(out))
    counts = op_counts(out)
    for op, expected in case["expect_after"].items():
        assert counts.get(op, 0) == expected, f"{case['name']}: {op} x{counts.get(op, 0)} after optimize, expected {expected}: {counts}"
    if case["folds"]:
        assert counts.get("BatchNormalization", 0) < op_counts(model).get("BatchNormalization", 0)
    if case["expect_warning"]:
        assert case["expect_warning"] in proc.stderr, proc.stderr
    skips = [f["detail"] for p in report["passes"] for f in p["findings"] if f["kind"] == "skipped"]
    for reason in case["expect_skips"]:
        assert any(reason in s for s in skips), f"no skip '{reason}' reported: {skips}"
    if case["expect_functions"] is not None:
        assert len(onnx.load(str(out)).functions) == case["expect_functions"]
    error = check_outputs(case, out, case["folds"], case.get("default_reference", "disabled"))
    if case["folds"]:
        print(f"\n{case['name']}: fold-bn relative error {error:.3g}")
    if case["external"]:
        m = onnx.load(str(out), load_external_data=False)
        locations = {refcheck.external_entries(t)["location"] for _, t in refcheck.iter_tensors(m) if refcheck.is_external(t)}
        assert locations == {"model.optimized.onnx.data"}, locations


# ---------------------------------------------------------------------------------------
# optimize, one pass at a time: bit-identical outputs (fold-bn: within tolerance)

SINGLE = [(c, p) for c in all_cases() for p in SINGLE_PASSES + ["fold-bn"]
          if p != "fold-bn" or c["folds"]]


@pytest.mark.parametrize("case,pass_name", SINGLE, ids=[f"{c['name']}-{p}" for c, p in SINGLE])
def test_single_pass(case, pass_name, tmp_path, onnxstream):
    model = copy_case(case, tmp_path)
    out = tmp_path / "out" / "optimized.onnx"
    out.parent.mkdir()
    if case["external"]:
        out = model.with_name("optimized.onnx")
    _, report = run_optimize(model, "--passes", pass_name, "-o", out)
    assert [p["name"] for p in report["passes"]] == [pass_name]
    onnx.checker.check_model(str(out))
    # fold-constants turns Constants into initializers, as ONNX Runtime's basic level does.
    level = case.get("default_reference", "disabled") if pass_name == "fold-constants" else "disabled"
    check_outputs(case, out, pass_name == "fold-bn", level)


# ---------------------------------------------------------------------------------------
# analyze

ANALYZED = [c for c in all_cases() if c["expect_analyze"]]


@pytest.mark.parametrize("case", ANALYZED, ids=case_ids(ANALYZED))
def test_analyze(case, onnxstream):
    proc = run_cli(["analyze", passes_dir() / case["model"], "--json"])
    assert proc.returncode == 0, describe(proc)
    report = json.loads(proc.stdout)
    summary = report["summary"]
    for category, expected in case["expect_analyze"].items():
        assert summary[category]["count"] == expected, f"{category}: {summary[category]} (expected {expected})"
    assert report["scopes"][0]["scope"] == "graph"
    text = run_cli(["analyze", passes_dir() / case["model"]])
    assert text.returncode == 0 and "summary:" in text.stdout, describe(text)


def test_analyze_resnet_style_details(onnxstream):
    """The ResNet-style fixture, item by item: names, nodes and bytes each removal saves."""
    case = next(c for c in all_cases() if c["name"] == "resnet_style")
    report = json.loads(run_cli(["analyze", passes_dir() / case["model"], "--json"]).stdout)
    graph = report["scopes"][0]
    dead_bn = [f for f in graph["dead_nodes"] if f["op_type"] == "BatchNormalization"]
    assert len(dead_bn) == 16
    (component,) = graph["isolated_components"]
    assert component["nodes"] == 5 and len(component["names"]) == 5
    assert component["bytes"] == 16   # iso.init, read by the component only
    (branch,) = graph["dead_branches"]
    assert branch["op_type"] == "If" and "then_branch" in branch["detail"]
    assert branch["nodes"] == 3 and branch["bytes"] == 0   # Conv + Add in the branch, the If itself
    (duplicate,) = graph["duplicate_computations"]
    assert duplicate["op_type"] == "GlobalAveragePool"
    assert sorted(f["names"][0] for f in graph["identity_nodes"]) == ["id1", "id2", "id3"]
    freed = [f for f in graph["unused_initializers"] if f["detail"] == "only dead nodes read it"]
    dead_parameters = [f for f in freed if f["names"][0].startswith("dead")]
    assert len(dead_parameters) == 64 and sum(f["bytes"] for f in dead_parameters) == 64 * 32   # 16 x 4 of 8 floats
    assert [f["names"] for f in freed if f not in dead_parameters] == [["iso.init"]]
    assert not graph["unused_inputs"]


def test_analyze_reports_unused_inputs_and_subgraphs(tmp_path, onnxstream):
    from onnx import TensorProto, helper
    then_g = helper.make_graph([helper.make_node("Neg", ["X"], ["n"]), helper.make_node("Identity", ["n"], ["t"]),
                                helper.make_node("Abs", ["X"], ["dead"])],
                               "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Abs", ["X"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])
    graph = helper.make_graph([helper.make_node("If", ["c"], ["Y"], name="branchy", then_branch=then_g, else_branch=else_g)],
                              "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2]),
                                    helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                    helper.make_tensor_value_info("spare", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    report = json.loads(run_cli(["analyze", path, "--json"]).stdout)
    scopes = {s["scope"]: s for s in report["scopes"]}
    assert [f["names"] for f in scopes["graph"]["unused_inputs"]] == [["spare"]]
    then_scope = scopes["graph/If 'branchy'/then_branch"]
    assert [f["op_type"] for f in then_scope["dead_nodes"]] == ["Abs"]
    assert [f["op_type"] for f in then_scope["identity_nodes"]] == ["Identity"]
    # optimize never removes the unused input
    out = tmp_path / "o.onnx"
    run_optimize(path, "-o", out)
    assert [i.name for i in onnx.load(str(out)).graph.input] == ["X", "c", "spare"]


# ---------------------------------------------------------------------------------------
# Storage, outputs and errors

def test_external_output_has_its_own_data_file(tmp_path, onnxstream):
    case = next(c for c in all_cases() if c["name"] == "resnet18_external")
    model = copy_case(case, tmp_path)
    out = tmp_path / "elsewhere" / "small.onnx"
    out.parent.mkdir()
    _, report = run_optimize(model, "-o", out)
    assert report["storage"] == "external"
    data = out.with_name("small.onnx.data")
    assert data.is_file() and [Path(f["path"]) for f in report["data_files"]] == [data]
    # Removed tensors are dropped: the new data file is smaller than the old one.
    assert data.stat().st_size < (model.parent / "model.onnx.data").stat().st_size
    # Every tensor is readable by onnx's own loader from the output's folder alone.
    shutil.rmtree(model.parent)
    tensors = refcheck.load_tensors(out)
    assert len(tensors) == report["after"]["initializers"]
    onnx.checker.check_model(str(out))


def test_reuse_data_points_at_the_original_file(tmp_path, onnxstream):
    case = next(c for c in all_cases() if c["name"] == "resnet18_external")
    model = copy_case(case, tmp_path)
    old_data = model.parent / "model.onnx.data"
    out = model.with_name("reused.onnx")
    _, report = run_optimize(model, "-o", out, "--reuse-data")
    assert report["storage"] == "reuse-data"
    m = onnx.load(str(out), load_external_data=False)
    locations = {refcheck.external_entries(t)["location"] for _, t in refcheck.iter_tensors(m) if refcheck.is_external(t)}
    assert locations == {"model.onnx.data", "reused.onnx.data"}   # old weights, and the folded ones
    check_outputs(case, out, folds=True)
    # Outside the data file's folder, reuse cannot work: refused, nothing written.
    other = tmp_path / "other"
    other.mkdir()
    proc, _ = run_optimize(model, "-o", other / "x.onnx", "--reuse-data", expect=2)
    assert "--reuse-data" in proc.stderr and not list(other.iterdir())
    assert old_data.is_file()


def test_no_change_reproduces_the_input(tmp_path, onnxstream):
    case = next(c for c in all_cases() if c["name"] == "conv_output_used_twice")
    model = copy_case(case, tmp_path)
    out = tmp_path / "same.onnx"
    run_optimize(model, "-o", out)
    assert out.read_bytes() == model.read_bytes()


def test_dry_run_writes_nothing(tmp_path, onnxstream):
    case = next(c for c in all_cases() if c["name"] == "resnet_style")
    model = copy_case(case, tmp_path)
    before = cases.snapshot(tmp_path)
    proc, report = run_optimize(model, "--dry-run")
    assert report["dry_run"] and report["after"]["nodes"] < report["before"]["nodes"]
    cases.assert_unchanged(before, cases.snapshot(tmp_path), "optimize --dry-run")
    text = run_cli(["optimize", model, "--dry-run"])
    assert "would" in text.stdout and "nothing written" in text.stdout, describe(text)


def test_existing_output_needs_force_and_usage_errors(tmp_path, onnxstream):
    case = next(c for c in all_cases() if c["name"] == "dropout")
    model = copy_case(case, tmp_path)
    run_optimize(model)
    proc, _ = run_optimize(model, expect=1)
    assert "already exists" in proc.stderr and "--force" in proc.stderr
    run_optimize(model, "--force")
    for bad in (["--passes", "dce,nope"], ["--passes", "dce,dce"], ["--bogus"]):
        proc = run_cli(["optimize", model, *bad])
        assert proc.returncode == 2, describe(proc)
    proc = run_cli(["optimize", model, "-o", model])
    assert proc.returncode == 1 and "one of the inputs" in proc.stderr, describe(proc)


def test_bad_input_fails_cleanly(tmp_path, onnxstream):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0f" + b"junk" * 10)
    for command in (["optimize", bad], ["analyze", bad], ["optimize", bad, "--json"]):
        proc = run_cli(command)
        assert proc.returncode == 1, describe(proc)
        assert cases.error_lines(proc.stderr), describe(proc)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.onnx"]
    missing = run_cli(["optimize", tmp_path / "nope.onnx"])
    assert missing.returncode == 1 and cases.error_lines(missing.stderr)


def test_text_report_names_each_pass(tmp_path, onnxstream):
    case = next(c for c in all_cases() if c["name"] == "resnet_style")
    model = copy_case(case, tmp_path)
    proc = run_cli(["optimize", model])
    assert proc.returncode == 0, describe(proc)
    for line in ("dce:", "const-if:", "cse:", "identity:", "fold-bn:"):
        assert line in proc.stdout
    assert "folded 2 BatchNormalizations" in proc.stdout


# ---------------------------------------------------------------------------------------
# The figures: fold-bn's error on torchvision models, and node counts vs ONNX Runtime

TORCHVISION = [c for c in all_cases() if c["name"] in ("resnet18", "mobilenet_v2")]


@pytest.mark.parametrize("case", TORCHVISION, ids=case_ids(TORCHVISION))
def test_fold_error_against_onnx_runtime_fusion(case, tmp_path, onnxstream):
    """fold-bn's error next to ONNX Runtime's own Conv+BN fusion (basic level) on the same input."""
    model = copy_case(case, tmp_path)
    out = tmp_path / "folded.onnx"
    run_optimize(model, "-o", out)
    inputs, expected = original_outputs(case["name"], None)
    ours = ort_run(out, inputs)
    theirs = ort_run(model, inputs, "basic")
    ours_error = max(relative_error(expected[k], ours[k]) for k in expected)
    ort_error = max(relative_error(expected[k], theirs[k]) for k in expected)
    print(f"\n{case['name']}: onnxstream fold-bn {ours_error:.3g}, ONNX Runtime basic fusion {ort_error:.3g} "
          f"(of the largest output magnitude)")
    assert ours_error <= FOLD_TOLERANCE


def test_node_counts_vs_onnx_runtime_basic(tmp_path, onnxstream):
    """Main-graph node counts: original, after onnxstream optimize, after ONNX Runtime's
    offline optimizer at basic level. Prints the table; writes it as JSON when
    ONNXSTREAM_PASSES_TABLE names a file."""
    rows = []
    for case in all_cases():
        if case["external"]:
            continue
        model = copy_case(case, tmp_path / "models")
        out = model.with_name("ours.onnx")
        run_optimize(model, "-o", out)
        theirs = ort_optimize(model, model.with_name("ort.onnx"))
        original = onnx.load(str(model), load_external_data=False)
        ours = onnx.load(str(out), load_external_data=False)
        rows.append({"model": case["name"], "original": len(original.graph.node), "onnxstream": len(ours.graph.node),
                     "onnxruntime_basic": len(theirs.graph.node),
                     "onnxstream_without_constants": sum(n.op_type != "Constant" for n in ours.graph.node),
                     "onnxruntime_ops": sorted({n.op_type for n in theirs.graph.node} - {n.op_type for n in ours.graph.node})})
    print("\n| model | original | onnxstream optimize | ONNX Runtime basic |\n|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['model']} | {r['original']} | {r['onnxstream']} | {r['onnxruntime_basic']} |")
    if os.environ.get("ONNXSTREAM_PASSES_TABLE"):
        Path(os.environ["ONNXSTREAM_PASSES_TABLE"]).write_text(json.dumps(rows, indent=1))
    for r in rows:
        if r["model"] in ("resnet18", "mobilenet_v2", "resnet_style"):
            assert r["onnxstream_without_constants"] <= r["onnxruntime_basic"], r

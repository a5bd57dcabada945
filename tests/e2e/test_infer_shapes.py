"""infer-shapes, judged by python-onnx and ONNX Runtime.

- Value by value against onnx.shape_inference.infer_shapes(strict_mode=False) (onnx 1.12)
  on the real models the tests fetch (Silero v5 and legacy, PP-OCR det/rec/cls) and the
  torchvision/transformer fixtures: every type and dim we write equals onnx's where onnx
  has one (its fresh `unk__` symbols count as unknown), and every value onnx infers fully
  we infer the same, but for the exceptions listed with their reasons.
- The output passes onnx.checker and gives ONNX Runtime's outputs of the input.
- --input-shape fixes an input's dims (numbers or symbols) and the shapes that follow.
- Bad input: a clear error, a non-zero exit, nothing written.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import refcheck
from refcheck import describe, run_cli
from test_passes import passes_dir
from test_real_models import OCR_MODELS, ocr_model, npm_model, silero_inputs

# What onnx 1.12 infers fully and we do not, by model: value name -> reason. Empty where
# we match onnx everywhere.
EXCEPTIONS: dict[str, dict[str, str]] = {}


def infer(model: Path, out: Path, *extra: str) -> dict:
    proc = run_cli(["infer-shapes", model, "-o", out, "--json", *extra])
    assert proc.returncode == 0, describe(proc)
    return json.loads(proc.stdout)


def dims_of(t: onnx.TypeProto):
    """The dims as ('v', n) / ('p', name) / None (unknown, onnx's unk__ included), or None for no shape."""
    tt = t.tensor_type
    if not tt.HasField("shape"):
        return None
    out = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            out.append(("v", d.dim_value))
        elif d.HasField("dim_param") and not d.dim_param.startswith("unk__"):
            out.append(("p", d.dim_param))
        else:
            out.append(None)
    return out


def compare(source: Path, ours_path: Path) -> tuple[list[str], dict[str, str], int]:
    """(disagreements, values onnx infers fully that we do not -> op, values compared)."""
    base = onnx.load(str(source), load_external_data=False)
    reference = onnx.shape_inference.infer_shapes(base, strict_mode=False)
    theirs = {k: t for k, t in value_infos_everywhere(reference).items() if t.HasField("tensor_type")}
    ours_model = onnx.load(str(ours_path), load_external_data=False)
    ours = value_infos_everywhere(ours_model)
    producer = {f"{path}/{o}": n.op_type for path, n in nodes_everywhere(base) for o in n.output}
    wrong, missing = [], {}
    for name, t in theirs.items():
        o = ours.get(name)
        td = dims_of(t)
        if o is not None:
            if o.tensor_type.elem_type != t.tensor_type.elem_type:
                wrong.append(f"{name}: type {o.tensor_type.elem_type}, onnx {t.tensor_type.elem_type}")
            od = dims_of(o)
            if od is not None and td is not None:
                if len(od) != len(td):
                    wrong.append(f"{name}: rank {len(od)}, onnx {len(td)}")
                else:
                    for a, b in zip(od, td):
                        if a is not None and b is not None and a != b:
                            wrong.append(f"{name}: dims {od}, onnx {td}")
                            break
        if td is not None and all(x is not None for x in td):
            if o is None or dims_of(o) != td or o.tensor_type.elem_type != t.tensor_type.elem_type:
                missing[name] = producer.get(name, "?")
    # Every name we write is a node output of its graph.
    for key in ours:
        assert key in producer, key
    return wrong, missing, len(theirs)


def nodes_everywhere(model: onnx.ModelProto):
    """(graph path, node) for every node, subgraphs included; the path names a subgraph by
    the node index and attribute holding it (the same in the input and the output)."""
    stack = [("", model.graph)]
    while stack:
        path, g = stack.pop()
        for i, n in enumerate(g.node):
            yield path, n
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    stack.append((f"{path}/{i}.{a.name}", a.g))
                for j, sub in enumerate(a.graphs):
                    stack.append((f"{path}/{i}.{a.name}.{j}", sub))


def value_infos_everywhere(model: onnx.ModelProto) -> dict:
    out = {}
    stack = [("", model.graph)]
    while stack:
        path, g = stack.pop()
        for vi in g.value_info:
            out[f"{path}/{vi.name}"] = vi.type
        for i, n in enumerate(g.node):
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    stack.append((f"{path}/{i}.{a.name}", a.g))
                for j, sub in enumerate(a.graphs):
                    stack.append((f"{path}/{i}.{a.name}.{j}", sub))
    return out


def check_against_onnx(key: str, source: Path, out: Path, inputs: dict | None) -> dict:
    report = infer(source, out)
    assert out.is_file()
    wrong, missing, compared = compare(source, out)
    assert not wrong, f"{key}: we disagree with onnx on {len(wrong)} value(s): {wrong[:10]}"
    expected = EXCEPTIONS.get(key, {})
    unexplained = {k: v for k, v in missing.items() if k not in expected}
    print(f"{key}: {compared} values from onnx, {report['inferred']} inferred by us, "
          f"{len(missing)} known to onnx only ({sorted(set(missing.values()))})")
    assert not unexplained, f"{key}: onnx infers {len(unexplained)} value(s) we do not: {unexplained}"
    onnx.checker.check_model(onnx.load(str(out), load_external_data=False))
    if inputs is not None and refcheck.ort_problem() is None:
        assert_close_outputs(refcheck.run_ort(source, inputs), refcheck.run_ort(out, inputs))
        checked = check_against_runtime(out, inputs, out.parent / "probe.onnx")
        print(f"{key}: {checked} main-graph values checked against ONNX Runtime's tensors")
    return report


def check_against_runtime(model_path: Path, inputs: dict, probe: Path) -> int:
    """Every main-graph value_info we wrote, made a graph output (type only) and run in ONNX
    Runtime: the tensor's rank and every numeric dim equal ours, and each symbol stands
    for one size throughout (the size the inputs give it). onnx infers little of some
    models (Silero: it stops at the first If); this judges all we write there."""
    model = onnx.load(str(model_path))
    outputs = {o.name for o in model.graph.output}
    ours = [vi for vi in model.graph.value_info if vi.name not in outputs]
    for vi in ours:
        t = onnx.TypeProto()
        t.tensor_type.elem_type = vi.type.tensor_type.elem_type
        model.graph.output.append(onnx.ValueInfoProto(name=vi.name, type=t))
    onnx.save(model, str(probe))
    got = refcheck.run_ort(probe, inputs)
    bound: dict[str, int] = {}
    for vi in model.graph.input:
        if vi.name in inputs:
            for d, size in zip(dims_of(vi.type) or [], inputs[vi.name].shape):
                if d is not None and d[0] == "p":
                    bound.setdefault(d[1], size)
    for vi in ours:
        dims = dims_of(vi.type)
        actual = got[vi.name].shape
        if dims is None:
            continue
        assert len(dims) == len(actual), (vi.name, dims, actual)
        for d, size in zip(dims, actual):
            if d is None:
                continue
            if d[0] == "v":
                assert d[1] == size, (vi.name, dims, actual)
            else:
                assert bound.setdefault(d[1], size) == size, (vi.name, d[1], bound[d[1]], actual)
    return len(ours)


def assert_close_outputs(a: dict, b: dict) -> None:
    """ONNX Runtime's outputs with and without value_info: with shapes known its graph
    optimizer may fuse otherwise (PP-OCRv4 rec differs by 3e-7 in a softmax), so equal
    within float32 rounding rather than bit for bit."""
    assert list(a) == list(b)
    for name in a:
        assert a[name].shape == b[name].shape and a[name].dtype == b[name].dtype, name
        assert np.allclose(a[name], b[name], rtol=1e-5, atol=1e-6), (name, float(np.abs(a[name] - b[name]).max()))


@pytest.mark.parametrize("version", ["v5", "legacy"])
def test_silero_matches_onnx(version, tmp_path, onnxstream):
    source = tmp_path / f"silero_vad_{version}.onnx"
    shutil.copy(npm_model(f"silero_vad_{version}.onnx"), source)
    check_against_onnx(f"silero_{version}", source, tmp_path / "out.onnx", silero_inputs(version))


@pytest.mark.parametrize("name", sorted(OCR_MODELS))
def test_ppocr_matches_onnx(name, tmp_path, onnxstream):
    source, inputs = ocr_model(name, tmp_path)
    check_against_onnx(name, source, tmp_path / "out.onnx", inputs)


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "small_transformer"])
def test_fixtures_match_onnx(name, tmp_path, onnxstream):
    folder = passes_dir() / name
    if not (folder / "model.onnx").is_file():
        pytest.fail(f"{folder} is missing: run scripts/make_pass_fixtures.py")
    work = tmp_path / name
    shutil.copytree(folder, work)
    source = work / "model.onnx"
    check_against_onnx(name, source, work / "model.shapes.onnx", refcheck.make_inputs(source, 3))


def test_external_data_stays_where_it_is(tmp_path, onnxstream):
    """An external-data model: the output points at the same data file, which is not read or copied."""
    folder = passes_dir() / "resnet18_external"
    if not (folder / "model.onnx").is_file():
        pytest.fail(f"{folder} is missing: run scripts/make_pass_fixtures.py")
    work = tmp_path / "ext"
    shutil.copytree(folder, work)
    before = {p.name: p.read_bytes() for p in work.iterdir()}
    proc = run_cli(["infer-shapes", work / "model.onnx", "--json"])
    assert proc.returncode == 0, describe(proc)
    out = work / "model.shapes.onnx"
    assert out.is_file()
    assert {p.name: p.read_bytes() for p in work.iterdir() if p.name != out.name} == before
    model = onnx.load(str(out), load_external_data=False)
    assert any(refcheck.is_external(t) for t in model.graph.initializer)
    inputs = refcheck.make_inputs(work / "model.onnx", 5)
    if refcheck.ort_problem() is None:
        assert_close_outputs(refcheck.run_ort(work / "model.onnx", inputs), refcheck.run_ort(out, inputs))
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    bad = run_cli(["infer-shapes", work / "model.onnx", "-o", elsewhere / "x.onnx"])
    assert bad.returncode == 2, describe(bad)
    assert "onnxstream: error:" in bad.stderr
    assert not any(elsewhere.iterdir())


# ---------------------------------------------------------------- small models, --input-shape

def conv_model(path: Path, dims=("N", 3, "H", "W"), value_info=()) -> None:
    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 3, 3, 3], np.zeros(8 * 27, np.float32).tolist())
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["p"], ["g"]),
             helper.make_node("Flatten", ["g"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w],
                              value_info=list(value_info))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def value_infos(path: Path) -> dict:
    return {vi.name: dims_of(vi.type) for vi in onnx.load(str(path)).graph.value_info}


def test_symbols_carried_and_input_shape_fixes_dims(tmp_path, onnxstream):
    source = tmp_path / "m.onnx"
    conv_model(source)
    infer(source, tmp_path / "a.onnx")
    got = value_infos(tmp_path / "a.onnx")
    assert got["c"] == [("p", "N"), ("v", 8), None, None]
    assert got["r"] == got["c"]
    assert got["g"] == [("p", "N"), ("v", 8), ("v", 1), ("v", 1)]
    report = infer(source, tmp_path / "b.onnx", "--input-shape", "x=1,3,32,48")
    assert report["inputs_fixed"] == 1
    got = value_infos(tmp_path / "b.onnx")
    assert got["c"] == [("v", 1), ("v", 8), ("v", 16), ("v", 24)]
    assert got["p"] == [("v", 1), ("v", 8), ("v", 8), ("v", 12)]
    fixed = onnx.load(str(tmp_path / "b.onnx"))
    assert dims_of(fixed.graph.input[0].type) == [("v", 1), ("v", 3), ("v", 32), ("v", 48)]
    compare_fixed = onnx.shape_inference.infer_shapes(fixed, strict_mode=False)
    assert {vi.name: dims_of(vi.type) for vi in compare_fixed.graph.value_info} == got
    infer(source, tmp_path / "c.onnx", "--input-shape", "x=B,3,H,W")
    assert value_infos(tmp_path / "c.onnx")["c"][0] == ("p", "B")


def test_existing_value_info_replaced_others_kept(tmp_path, onnxstream):
    source = tmp_path / "m.onnx"
    stale = helper.make_tensor_value_info("c", TensorProto.FLOAT, [7, 7])
    other = helper.make_tensor_value_info("not_a_value", TensorProto.FLOAT, [2])
    conv_model(source, value_info=[stale, other])
    report = infer(source, tmp_path / "a.onnx")
    assert report["value_info_replaced"] == 1
    got = value_infos(tmp_path / "a.onnx")
    assert got["c"] == [("p", "N"), ("v", 8), None, None]
    assert got["not_a_value"] == [("v", 2)]


# ---------------------------------------------------------------- bad input

def assert_refused(args: list, out: Path, status: int = 1, words: str = "") -> None:
    proc = run_cli(["infer-shapes", *args, "-o", out])
    assert proc.returncode == status, describe(proc)
    assert "onnxstream: error:" in proc.stderr, describe(proc)
    assert words in proc.stderr, describe(proc)
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(out.name) or ".tmp" in p.name]


def test_input_shape_naming_no_input(tmp_path, onnxstream):
    source = tmp_path / "m.onnx"
    conv_model(source)
    assert_refused([source, "--input-shape", "nope=1,3,8,8"], tmp_path / "o.onnx", status=2, words="nope")
    assert_refused([source, "--input-shape", "w=8,3,3,3"], tmp_path / "o.onnx", status=2, words="no input")


def test_input_shape_contradicting_a_static_dim(tmp_path, onnxstream):
    source = tmp_path / "m.onnx"
    conv_model(source, dims=(1, 3, 32, 32))
    assert_refused([source, "--input-shape", "x=1,4,32,32"], tmp_path / "o.onnx", status=2, words="dim 1")
    assert_refused([source, "--input-shape", "x=N,3,32,32"], tmp_path / "o.onnx", status=2, words="dim 0")
    assert_refused([source, "--input-shape", "x=1,3,32"], tmp_path / "o.onnx", status=2, words="dims")
    assert_refused([source, "--input-shape", "x=1,-3,32,32"], tmp_path / "o.onnx", status=2)


def test_cycle_refused(tmp_path, onnxstream):
    nodes = [helper.make_node("Add", ["x", "b"], ["a"]), helper.make_node("Relu", ["a"], ["b"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])])
    source = tmp_path / "cycle.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(source))
    # An unnamed node is called by its operator and output.
    assert_refused([source], tmp_path / "o.onnx", words="node 'Add->a' (Add) reads 'b' before any node makes it")


def test_second_graph_field_refused(tmp_path, onnxstream):
    source = tmp_path / "m.onnx"
    conv_model(source)
    model = onnx.load(str(source))
    body = helper.make_graph([], "second", [], []).SerializeToString()
    n, prefix = len(body), b""
    while True:
        prefix += bytes([(n & 0x7F) | (0x80 if n >> 7 else 0)])
        n >>= 7
        if not n:
            break
    data = model.SerializeToString() + b"\x3a" + prefix + body  # field 7 (graph), length-delimited
    twice = tmp_path / "twice.onnx"
    twice.write_bytes(data)
    assert_refused([twice], tmp_path / "o.onnx")


# ---------------------------------------------------------------- optimize's shape pass

def test_optimize_folds_shape_chains_behind_conv_and_resize(tmp_path, onnxstream):
    """optimize's `shape` pass reads the same inference: the spatial dims of a Conv and a
    Resize output are known even with a symbolic batch, so Shape -> Gather chains on them
    fold (issue 32: ISNet kept 39 such chains). The result runs as the original does."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3], np.linspace(-1, 1, 108, dtype=np.float32).tolist())
    scales = helper.make_tensor("scales", TensorProto.FLOAT, [4], [1.0, 1.0, 2.0, 2.0])
    two = helper.make_tensor("two", TensorProto.INT64, [], [2])
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Resize", ["c", "", "scales"], ["r"], mode="nearest"),
             helper.make_node("Shape", ["r"], ["s"]),
             helper.make_node("Gather", ["s", "two"], ["h"], axis=0),
             helper.make_node("Cast", ["h"], ["hf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["r", "hf"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, scales, two])
    source = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(source))
    out = tmp_path / "o.onnx"
    proc = run_cli(["optimize", source, "-o", out, "--json"])
    assert proc.returncode == 0, describe(proc)
    ops = [n.op_type for n in onnx.load(str(out)).graph.node]
    assert "Shape" not in ops and "Gather" not in ops, ops
    inputs = {"x": np.random.default_rng(4).standard_normal((2, 3, 16, 16)).astype(np.float32)}
    if refcheck.ort_problem() is None:
        assert_close_outputs(refcheck.run_ort(source, inputs), refcheck.run_ort(out, inputs))


def test_a_large_compact_graph_costs_little_memory_a_node(tmp_path, onnxstream):
    """A chain of 200,000 Relu nodes (scripts/bench/models.py compact-graph, 21 bytes of .onnx
    a node), each output getting a value_info entry. The peak was 590 bytes a node over the
    floor when every entry was an encoded message in a list, then a new_field (48 bytes) in
    the edits, with a hash set of the names written and the index held to the end; then
    about 255 (one run of encoded fields a graph, the index let go before the entries are
    encoded); about 190 now that a node without attributes has its fields read on demand
    (node_fields::on_demand): the budget is 250."""
    count = 200_000
    model = refcheck.write_compact_graph(tmp_path / "chain.onnx", count)
    out = tmp_path / "chain.shapes.onnx"
    code, rss, err = refcheck.peak_rss(["infer-shapes", model, "-o", out, "--quiet"])
    assert code == 0, err
    floor = 12 << 20  # the process with a graph of a few nodes, and the writer's buffers
    budget = floor + 250 * count
    assert rss < budget, f"peak RSS {rss >> 20} MiB for {count} nodes, over {budget >> 20} MiB"
    written = onnx.load(str(out))
    assert len(written.graph.value_info) == count - 1  # every node output but the graph's
    first = written.graph.value_info[0]
    assert first.name == "0" and first.type.tensor_type.elem_type == TensorProto.FLOAT
    assert [d.dim_value for d in first.type.tensor_type.shape.dim] == [1, 64]

"""edit: dims, renames, outputs, metadata, producer and doc strings, judged by python-onnx
and ONNX Runtime.

- --batch / --input-shape give the graph inputs and outputs onnx.tools.update_model_dims
  gives (torchvision ResNet-18 and MobileNetV2 with a symbolic batch, Silero VAD v5 whose
  dims are unknown); onnx.checker and strict shape inference accept the result, and ONNX
  Runtime runs it at the new shapes with the original's outputs.
- --rename renames a tensor everywhere (captured in If and Loop bodies too, not where a
  body defines the name itself); the renamed model runs with the new names.
- An external-data model keeps pointing at the same, unchanged data file (also from
  another folder, by a rewritten relative location).
- --metadata, --remove-metadata, --producer, --strip-doc, --add-output, --remove-output.
- Bad input: a clear error, exit 2, nothing written, the input unchanged.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.tools import update_model_dims

import refcheck
from refcheck import describe, run_cli
from test_passes import ort_run, passes_dir

SILERO_V5 = refcheck.REPO_ROOT / "tests" / "models" / "node_modules" / "@ricky0123" / "vad-web" / "dist" / "silero_vad_v5.onnx"


def edit(model: Path, out: Path, *extra: str) -> dict:
    proc = run_cli(["edit", model, "-o", out, "--json", *extra])
    assert proc.returncode == 0, describe(proc)
    return json.loads(proc.stdout)


def sha1(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


def dynamic_copy(name: str, folder: Path) -> Path:
    """The pass fixture with dim 0 of its input and output made the symbol N (as torch's
    dynamic_axes exports it)."""
    model = onnx.load(str(passes_dir() / name / "model.onnx"))
    for vi in [*model.graph.input, *model.graph.output]:
        vi.type.tensor_type.shape.dim[0].dim_param = "N"
    path = folder / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def value_infos(model: onnx.ModelProto, which: str) -> list[bytes]:
    return [vi.SerializeToString() for vi in getattr(model.graph, which)]


def check_valid(path: Path) -> onnx.ModelProto:
    onnx.checker.check_model(str(path))
    model = onnx.load(str(path))
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    return model


def rand(shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------- dims vs update_model_dims

@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_batch_matches_update_model_dims_and_runs(tmp_path, name):
    model = dynamic_copy(name, tmp_path)
    original = onnx.load(str(model))
    in_dims = [d.dim_value for d in original.graph.input[0].type.tensor_type.shape.dim[1:]]
    out_dims = [d.dim_value for d in original.graph.output[0].type.tensor_type.shape.dim[1:]]
    expected = update_model_dims.update_inputs_outputs_dims(
        onnx.load(str(model)), {original.graph.input[0].name: [2, *in_dims]},
        {original.graph.output[0].name: [2, *out_dims]})
    for flags in (["--batch", "2"], ["--input-shape", f"{original.graph.input[0].name}=2," + ",".join(map(str, in_dims))]):
        out = tmp_path / "out.onnx"
        out.unlink(missing_ok=True)
        report = edit(model, out, *flags)
        assert {c["kind"] for c in report["changes"]} <= {"shape", "value_info"}, report
        edited = check_valid(out)
        assert value_infos(edited, "input") == value_infos(expected, "input")
        assert value_infos(edited, "output") == value_infos(expected, "output")
    x = rand([2, *in_dims])
    got = ort_run(out, {original.graph.input[0].name: x})
    want = ort_run(model, {original.graph.input[0].name: x})
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


def test_symbolic_dim_is_fixed_everywhere_it_appears(tmp_path):
    """N fixed on the input is fixed on the output and in value_info (make_dynamic_shape_fixed)."""
    model = dynamic_copy("resnet18", tmp_path)
    m = onnx.load(str(model))
    m.graph.value_info.append(helper.make_tensor_value_info(m.graph.node[0].output[0], TensorProto.FLOAT, ["N", None, "H2", None]))
    onnx.save(m, str(model))
    out = tmp_path / "out.onnx"
    report = edit(model, out, "--input-shape", "input=4,3,64,64")
    edited = onnx.load(str(out))
    assert [d.dim_value for d in edited.graph.output[0].type.tensor_type.shape.dim] == [4, 1000]
    vi = edited.graph.value_info[0].type.tensor_type.shape.dim
    assert vi[0].dim_value == 4 and vi[2].dim_param == "H2" and not vi[1].HasField("dim_value")
    assert any(c["kind"] == "value_info" for c in report["changes"])
    # A symbol for a symbol: N becomes B everywhere.
    out2 = tmp_path / "out2.onnx"
    edit(model, out2, "--input-shape", "input=B,3,64,64")
    edited = onnx.load(str(out2))
    assert edited.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "B"
    assert edited.graph.value_info[0].type.tensor_type.shape.dim[0].dim_param == "B"


def test_silero_v5_unknown_dims_fixed_and_runs(tmp_path):
    if not SILERO_V5.is_file():
        pytest.fail(f"{SILERO_V5} is missing: run scripts/setup_models.sh")
    out = tmp_path / "silero.onnx"
    edit(SILERO_V5, out, "--input-shape", "input=1,512", "--input-shape", "state=2,1,128", "--batch", "1")
    expected = update_model_dims.update_inputs_outputs_dims(
        onnx.load(str(SILERO_V5)), {"input": [1, 512], "state": [2, 1, 128], "sr": []},
        {"output": [-1, 1], "stateN": [-1, -1, -1]})
    edited = check_valid(out)
    assert value_infos(edited, "input") == value_infos(expected, "input")
    # The outputs' unknown dim 0 is not guessed: stateN is [2, batch, 128], not [batch, ...].
    assert not edited.graph.output[1].type.tensor_type.shape.dim[0].HasField("dim_value")
    rng = np.random.default_rng(7)
    inputs = {"input": (rng.standard_normal((1, 512)) * 0.1).astype(np.float32),
              "state": rng.standard_normal((2, 1, 128)).astype(np.float32), "sr": np.array(16000, dtype=np.int64)}
    got, want = ort_run(out, inputs), ort_run(SILERO_V5, inputs)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


# ---------------------------------------------------------------- renames

def test_rename_inputs_and_outputs_runs_with_new_names(tmp_path):
    model = passes_dir() / "resnet18" / "model.onnx"
    out = tmp_path / "renamed.onnx"
    report = edit(model, out, "--rename", "input=image", "--rename", "logits=scores")
    assert [c["kind"] for c in report["changes"]] == ["rename", "rename"]
    edited = check_valid(out)
    assert [i.name for i in edited.graph.input] == ["image"] and [o.name for o in edited.graph.output] == ["scores"]
    x = rand([1, 3, 64, 64])
    got, want = ort_run(out, {"image": x}), ort_run(model, {"input": x})
    np.testing.assert_array_equal(got["scores"], want["logits"])


def test_rename_reaches_if_bodies(tmp_path):
    model = passes_dir() / "if_expressions" / "model.onnx"
    out = tmp_path / "renamed.onnx"
    edit(model, out, "--rename", "X=features", "--rename", "flag_init=flag0", "--rename", "Y=result")
    edited = check_valid(out)
    text = str(edited.graph)
    assert '"X"' not in text and '"flag_init"' not in text
    x = rand([2, 3])
    original = onnx.load(str(model))
    dims = [d.dim_value or 1 for d in original.graph.input[0].type.tensor_type.shape.dim]
    x = rand(dims)
    got, want = ort_run(out, {"features": x}), ort_run(model, {"X": x})
    np.testing.assert_array_equal(got["result"], want["Y"])


def test_rename_stops_where_a_body_defines_the_name(tmp_path):
    """outer_scope's Loop body reads the outer 'c' and defines its own 'v_in': renaming the
    outer 'c' reaches the body; a body input named like an outer value shadows it."""
    model = passes_dir() / "outer_scope" / "model.onnx"
    out = tmp_path / "renamed.onnx"
    edit(model, out, "--rename", "c=c_outer", "--rename", "a=a_outer")
    edited = check_valid(out)
    loop = next(n for n in edited.graph.node if n.op_type == "Loop")
    body_inputs = [i for n in loop.attribute[0].g.node for i in n.input]
    assert "c_outer" in body_inputs and "c" not in body_inputs

    # A body whose own input is called like the outer value keeps its own name.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["x", "x"], ["x_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("x_out", TensorProto.FLOAT, [2])])
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["n"], value=helper.make_tensor("n", TensorProto.INT64, [], [3])),
         helper.make_node("Constant", [], ["t"], value=helper.make_tensor("t", TensorProto.BOOL, [], [True])),
         helper.make_node("Loop", ["n", "t", "x"], ["y"], body=body)], "g", [x], [y])
    shadow = tmp_path / "shadow.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(shadow))
    out = tmp_path / "shadow_renamed.onnx"
    edit(shadow, out, "--rename", "x=outer_x")
    edited = check_valid(out)
    loop = edited.graph.node[2]
    assert list(loop.input) == ["n", "t", "outer_x"]
    assert [i.name for i in loop.attribute[0].g.input][2] == "x"
    assert list(loop.attribute[0].g.node[1].input) == ["x", "x"]
    got = ort_run(out, {"outer_x": np.array([1, 2], np.float32)})
    np.testing.assert_array_equal(got["y"], [8, 16])


def test_rename_reaches_quantization_annotations(tmp_path):
    """GraphProto.quantization_annotation names tensors too (tensor_name, and the values of
    quant_parameter_tensor_names)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Mul", ["x", "x_scale"], ["y"])], "g", [x], [y],
                              [helper.make_tensor("x_scale", TensorProto.FLOAT, [], [2.0])])
    annotation = graph.quantization_annotation.add()
    annotation.tensor_name = "x"
    annotation.quant_parameter_tensor_names.add(key="SCALE_TENSOR", value="x_scale")
    source = tmp_path / "q.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(source))
    out = tmp_path / "out.onnx"
    edit(source, out, "--rename", "x=input", "--rename", "x_scale=scale")
    edited = check_valid(out)
    annotation = edited.graph.quantization_annotation[0]
    assert annotation.tensor_name == "input"
    assert [(e.key, e.value) for e in annotation.quant_parameter_tensor_names] == [("SCALE_TENSOR", "scale")]
    np.testing.assert_array_equal(ort_run(out, {"input": np.array([1, 2], np.float32)})["y"], [2, 4])


# ---------------------------------------------------------------- external data

def test_external_data_stays_where_it_is(tmp_path):
    case = tmp_path / "sub"
    shutil.copytree(passes_dir() / "resnet18_external", case)
    data = case / "model.onnx.data"
    before = sha1(data)
    # Beside the input: the same location.
    out = case / "edited.onnx"
    edit(case / "model.onnx", out, "--rename", "input=image", "--producer", "edited")
    locations = {e.value for t in onnx.load(str(out), load_external_data=False).graph.initializer
                 for e in t.external_data if e.key == "location"}
    assert locations == {"model.onnx.data"}
    # In the folder above: the location is rewritten to reach the same file.
    up = tmp_path / "edited_up.onnx"
    report = edit(case / "model.onnx", up, "--rename", "input=image")
    assert any(c["kind"] == "data_location" for c in report["changes"])
    locations = {e.value for t in onnx.load(str(up), load_external_data=False).graph.initializer
                 for e in t.external_data if e.key == "location"}
    assert locations == {"sub/model.onnx.data"}
    assert sha1(data) == before and sorted(p.name for p in case.iterdir()) == ["edited.onnx", "model.onnx", "model.onnx.data"]
    x = rand([1, 3, 64, 64])
    want = ort_run(passes_dir() / "resnet18_external" / "model.onnx", {"input": x})
    for path in (out, up):
        onnx.checker.check_model(str(path))
        got = ort_run(path, {"image": x})
        for k in want:
            np.testing.assert_array_equal(got[k], want[k])


# ---------------------------------------------------------------- metadata, producer, doc strings, outputs

def test_metadata_producer_and_doc_strings(tmp_path):
    model = passes_dir() / "if_expressions" / "model.onnx"
    m = onnx.load(str(model))
    m.doc_string = "model doc"
    m.graph.doc_string = "graph doc"
    m.graph.input[0].doc_string = "input doc"
    # Every node, those without attributes too (the tree reads their fields on demand).
    assert any(not node.attribute for node in m.graph.node)
    for node in m.graph.node:
        node.doc_string = "node doc"
        for a in node.attribute:
            for inner in a.g.node:
                inner.doc_string = "body node doc"
    m.metadata_props.add(key="keep", value="1")
    m.metadata_props.add(key="change", value="old")
    m.metadata_props.add(key="drop", value="x")
    source = tmp_path / "doc.onnx"
    onnx.save(m, str(source))
    out = tmp_path / "out.onnx"
    report = edit(source, out, "--strip-doc", "--metadata", "change=new=value", "--metadata", "added=2",
                  "--remove-metadata", "drop", "--producer", "surgeon:1.2")
    edited = check_valid(out)
    assert "doc_string" not in str(edited)
    assert [(p.key, p.value) for p in edited.metadata_props] == [("keep", "1"), ("change", "new=value"), ("added", "2")]
    assert (edited.producer_name, edited.producer_version) == ("surgeon", "1.2")
    assert {c["kind"] for c in report["changes"]} == {"strip_doc", "metadata", "remove_metadata", "producer"}
    # Nothing else changed: the graphs are the same once the doc strings are gone.
    for node in m.graph.node:
        node.ClearField("doc_string")
        for a in node.attribute:
            for inner in a.g.node:
                inner.ClearField("doc_string")
    m.graph.ClearField("doc_string")
    m.graph.input[0].ClearField("doc_string")
    assert edited.graph == m.graph


def test_add_and_remove_outputs(tmp_path):
    model = passes_dir() / "outer_scope" / "model.onnx"
    out = tmp_path / "out.onnx"
    report = edit(model, out, "--add-output", "c", "--add-output", "a", "--remove-output", "Y")
    edited = check_valid(out)
    assert [o.name for o in edited.graph.output] == ["c", "a"]
    assert all(o.type.tensor_type.elem_type == TensorProto.FLOAT for o in edited.graph.output)
    inputs = refcheck.make_inputs(model, 0)
    got, want = ort_run(out, inputs), ort_run(_with_outputs(model, tmp_path, ["c", "a"]), inputs)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])
    assert [c["kind"] for c in report["changes"]] == ["remove_output", "add_output", "add_output"]


def _with_outputs(model: Path, folder: Path, names: list[str]) -> Path:
    """The reference: python-onnx exposes the same tensors (types from its shape inference)."""
    m = onnx.shape_inference.infer_shapes(onnx.load(str(model)))
    known = {vi.name: vi for vi in m.graph.value_info}
    del m.graph.output[:]
    for n in names:
        m.graph.output.append(known.get(n) or helper.make_tensor_value_info(n, TensorProto.FLOAT, None))
    path = folder / "reference.onnx"
    onnx.save(m, str(path))
    return path


# ---------------------------------------------------------------- bad input

BAD = [
    (["--rename", "nothing=x"], "no input, initializer or node output"),
    (["--rename", "tmp=x"], "no input, initializer or node output"),  # only inside a body
    (["--rename", "X=Y"], "already a name"),
    (["--rename", "X=a", "--rename", "flag_init=a"], "two renames"),
    (["--rename", "X=flag_init", "--rename", "flag_init=X"], "another rename takes away"),
    (["--rename", "X"], "OLD=NEW"),
    (["--input-shape", "nothing=1,2"], "no graph input"),
    (["--input-shape", "X=1,2,3,4,5,6,7"], "dims, the input has"),
    (["--input-shape", "X"], "NAME=DIMS"),
    (["--input-shape", "X=1,,2"], "empty dim"),
    (["--input-shape", "X=-1,2"], "whole numbers"),
    (["--input-shape", "flag_init=1"], "no graph input"),
    (["--rename", "X=features", "--input-shape", "features=2,4"], "give 'X'"),  # names are the input's
    (["--add-output", "nothing"], "nothing in the main graph defines"),
    (["--add-output", "Y"], "already a graph output"),
    (["--remove-output", "X"], "no graph output"),
    (["--remove-output", "Y"], "every graph output"),
    (["--metadata", "novalue"], "KEY=VALUE"),
    (["--remove-metadata", "absent"], "no such key"),
    (["--producer", ":1.0"], "NAME[:VERSION]"),
    ([], "nothing to edit"),
]


@pytest.mark.parametrize("args,message", BAD, ids=[" ".join(a) or "nothing" for a, _ in BAD])
def test_bad_input_is_refused(tmp_path, args, message):
    model = tmp_path / "model.onnx"
    shutil.copy(passes_dir() / "if_expressions" / "model.onnx", model)
    before = sha1(model)
    out = tmp_path / "out.onnx"
    proc = run_cli(["edit", model, "-o", out, *args])
    assert proc.returncode == 2, describe(proc)
    assert "onnxstream: error:" in proc.stderr and message in proc.stderr, describe(proc)
    assert len(proc.stderr.strip().splitlines()) >= 2, describe(proc)  # a hint line
    assert not out.exists() and sha1(model) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx"]


def test_an_if_output_is_added_with_its_inferred_type(tmp_path):
    """An If's output has no value_info: its type comes from the inference of both branches,
    the one onnx.shape_inference gives."""
    model = tmp_path / "model.onnx"
    shutil.copy(passes_dir() / "if_expressions" / "model.onnx", model)
    out = tmp_path / "out.onnx"
    proc = run_cli(["edit", model, "-o", out, "--add-output", "out1"])
    assert proc.returncode == 0, describe(proc)
    added = {o.name: o for o in onnx.load(str(out)).graph.output}["out1"]
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(onnx.load(str(model))).graph.value_info}
    assert added.type.tensor_type.elem_type != 0
    if "out1" in inferred:
        assert added.type.tensor_type.elem_type == inferred["out1"].type.tensor_type.elem_type


def test_static_dim_cannot_change(tmp_path):
    model = passes_dir() / "resnet18" / "model.onnx"
    out = tmp_path / "out.onnx"
    proc = run_cli(["edit", model, "-o", out, "--input-shape", "input=1,3,32,64"])
    assert proc.returncode == 2 and "declares as 64" in proc.stderr, describe(proc)
    proc = run_cli(["edit", model, "-o", out, "--input-shape", "input=N,3,64,64"])
    assert proc.returncode == 2 and "declares as 1" in proc.stderr, describe(proc)
    assert not out.exists()


def test_one_symbol_two_values_is_refused(tmp_path):
    x = helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 2])
    y = helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 2])
    z = helper.make_tensor_value_info("c", TensorProto.FLOAT, ["N", 2])
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"])], "g", [x, y], [z])
    model = tmp_path / "two.onnx"
    onnx.save(helper.make_model(graph), str(model))
    out = tmp_path / "out.onnx"
    proc = run_cli(["edit", model, "-o", out, "--input-shape", "a=1,2", "--input-shape", "b=3,2"])
    assert proc.returncode == 2 and "another request fixed it to 1" in proc.stderr, describe(proc)
    assert not out.exists()
    edit(model, out, "--input-shape", "a=3,2")
    edited = check_valid(out)
    assert all(vi.type.tensor_type.shape.dim[0].dim_value == 3 for vi in [*edited.graph.input, *edited.graph.output])


def test_output_outside_the_data_folder_is_refused(tmp_path):
    case = tmp_path / "case"
    shutil.copytree(passes_dir() / "resnet18_external", case)
    other = tmp_path / "other"
    other.mkdir()
    proc = run_cli(["edit", case / "model.onnx", "-o", other / "out.onnx", "--batch", "1"])
    assert proc.returncode == 2 and "not inside the output's folder" in proc.stderr, describe(proc)
    assert list(other.iterdir()) == []


# ---------------------------------------------------------------- the corrupt catalogue

def test_corrupt_catalogue_never_crashes_edit(tmp_path):
    """Every model of the corrupt catalogue (tests/data/corrupt): edit exits 0 or 1, never by a
    signal; on an error it says so on stderr and writes nothing, and the inputs stay as they were."""
    import hostile_support as hs
    for index, entry in enumerate(e for e in hs.manifest()["entries"] if "cuts" not in e):
        root = tmp_path / str(index)
        root.mkdir()
        folder = hs.copy_entry(entry, hs.CATALOGUE, root)
        if hs.apply_setup(folder, entry["setup"]):
            continue
        before = hs.snapshot(root)
        out = root / "edited-out.onnx"
        proc = run_cli(["edit", folder / entry["model"], "-o", out, "--producer", "x", "--strip-doc"], timeout=60)
        assert proc.returncode in (0, 1), entry["name"] + describe(proc)
        if proc.returncode != 0:
            assert hs.error_lines(proc.stderr), entry["name"] + describe(proc)
            assert not out.exists(), entry["name"]
        out.unlink(missing_ok=True)
        hs.assert_unchanged(before, hs.snapshot(root), f"edit of {entry['name']}")


def test_a_large_compact_graph_costs_little_memory_a_node(tmp_path):
    """A chain of 200,000 Relu nodes (scripts/bench/models.py compact-graph, 21 bytes of .onnx
    a node). With every node's fields in the tree and every name the graph defines (and, for
    --rename, uses) in hash sets, the peak over the floor was about 185 bytes a node for
    --strip-doc and 295 for --rename and --add-output. A node without attributes now has its
    fields read on demand, as the other graph commands read them, and only the names the
    options ask about are kept: about 45 bytes a node for --strip-doc and --rename, 170 for
    --add-output (which infers types: the graph model)."""
    count = 200_000
    model = refcheck.write_compact_graph(tmp_path / "chain.onnx", count)
    floor = 12 << 20  # the process with a graph of a few nodes, and the writer's buffers
    for args, per_node in ((["--strip-doc"], 80), (["--rename", "0=zero"], 80), (["--add-output", "100"], 220)):
        out = tmp_path / "chain.edited.onnx"
        code, rss, err = refcheck.peak_rss(["edit", model, *args, "-o", out, "--quiet", "--force"])
        assert code == 0, err
        budget = floor + per_node * count
        assert rss < budget, f"edit {' '.join(args)}: peak RSS {rss >> 20} MiB for {count} nodes, over {budget >> 20} MiB"
        edited = onnx.load(str(out))
        assert len(edited.graph.node) == count
        if args[0] == "--rename":
            assert list(edited.graph.node[0].output) == ["zero"] and list(edited.graph.node[1].input) == ["zero"]
        if args[0] == "--add-output":
            assert [o.name for o in edited.graph.output][-1] == "100"
            assert edited.graph.output[-1].type.tensor_type.elem_type == TensorProto.FLOAT

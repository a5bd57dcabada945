"""`onnxstream diff`: equal across layout changes (per-tensor files, split, merged,
repacked, sharded, deduplicated), different for a value or graph change; exit 0/1/2 as cmp."""
from __future__ import annotations

import shutil
from pathlib import Path

import onnx
import pytest

import cases
from llm_support import LlmFixture, external_rows, flip_byte, llm, run_json, run_ok  # noqa: F401 (fixture)
from refcheck import describe, run_cli


@pytest.fixture(scope="module")
def layouts(llm: LlmFixture, tmp_path_factory) -> dict[str, Path]:
    """The LLM in several layouts, all made by onnxstream from the per-tensor original."""
    root = tmp_path_factory.mktemp("layouts")
    out = {"per_tensor": llm.model}

    def make(name: str, *args) -> Path:
        folder = root / name
        folder.mkdir()
        run_ok([*args[:2], "-o", folder / "m.onnx", *args[2:], "--quiet"])
        return folder / "m.onnx"

    out["repacked"] = make("repacked", "repack", llm.model)
    out["merged"] = make("merged", "merge", out["repacked"])   # one self-contained .onnx
    out["split"] = make("split", "split", out["merged"], "--align", "0")
    out["sharded"] = make("sharded", "repack", out["split"], "--shard-size", "5M", "--dedupe", "--write-checksums")
    return out


PAIRS = [("per_tensor", "merged"), ("per_tensor", "split"), ("per_tensor", "sharded"), ("merged", "split"),
         ("repacked", "sharded")]


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_layout_changes_are_equivalent(layouts, a, b):
    proc = run_cli(["diff", layouts[a], layouts[b]])
    assert proc.returncode == 0, describe(proc)
    assert "equivalent" in proc.stdout
    doc = run_json(["diff", layouts[b], layouts[a]])
    assert doc["ok"] is True and doc["equivalent"] is True and doc["byte_identical"] is False
    assert doc["differences"] == []


def test_byte_identical_copies(llm: LlmFixture, tmp_path):
    copy = llm.copy_to(tmp_path / "copy")
    doc = run_json(["diff", llm.model, copy])
    assert doc["equivalent"] and doc["byte_identical"]
    proc = run_cli(["diff", llm.model, copy])
    assert proc.returncode == 0 and "byte-identical" in proc.stdout


def test_a_flipped_value_is_a_difference(layouts, tmp_path):
    shutil.copytree(layouts["sharded"].parent, tmp_path / "c")
    model = tmp_path / "c" / "m.onnx"
    rows = [r for r in external_rows(model) if r["name"]]
    victim = rows[len(rows) // 2]
    sharing = [r["name"] for r in rows if (r["location"], r["offset"]) == (victim["location"], victim["offset"])]
    flip_byte(model.parent / victim["location"], victim["offset"] + 4)

    proc = run_cli(["diff", layouts["per_tensor"], model])
    assert proc.returncode == 1, describe(proc)
    assert victim["name"] in proc.stdout and "values differ" in proc.stdout
    doc = run_json(["diff", layouts["per_tensor"], model], expected_status=1)
    assert doc["ok"] is False and doc["equivalent"] is False
    assert doc["tensors"]["differing"] == len(sharing)
    assert sorted(d["name"] for d in doc["differences"]) == sorted(sharing)
    assert all(d["kind"] == "tensor" and d["detail"] == "values differ" for d in doc["differences"])


def test_a_graph_change_is_a_difference(llm: LlmFixture, tmp_path):
    model = llm.copy_to(tmp_path / "c")
    m = onnx.load(str(model), load_external_data=False)
    node = next(n for n in m.graph.node if n.op_type == "Softmax")
    node.op_type = "LogSoftmax"
    m.metadata_props.add(key="note", value="edited")
    model.write_bytes(m.SerializeToString())
    doc = run_json(["diff", llm.model, model], expected_status=1)
    assert doc["nodes"]["differing"] == 1 and doc["tensors"]["differing"] == 0
    (changed,) = [d for d in doc["differences"] if d["what"] == "node"]
    assert changed["name"] == (node.name or node.output[0])
    assert "'Softmax' vs 'LogSoftmax'" in changed["detail"]
    assert doc["other_differences"] == 1
    assert any(d["kind"] == "only_in_b" and d["name"] == "note" for d in doc["differences"])


@pytest.mark.parametrize("case_name", ["if_subgraph", "constant_nodes", "typed_fields", "fp16_uint8"])
def test_layout_changes_of_other_models(case_name, tmp_path):
    """Subgraphs, Constant nodes, typed fields and small types through split and merge."""
    case = cases.case_named(case_name)
    root = cases.copy_case(case, tmp_path)
    model = cases.model_path(case, root)
    split = tmp_path / "split.onnx"
    run_ok(["split", model, "-o", split, "--threshold", "0", *cases.data_args(case, root), "--quiet"])
    merged = tmp_path / "merged.onnx"
    run_ok(["merge", split, "-o", merged, "--quiet"])
    for a, b in ((model, split), (split, merged), (model, merged)):
        if case.get("needs_args") and a == model:
            continue   # diff finds data beside the model only
        proc = run_cli(["diff", a, b])
        assert proc.returncode == 0, describe(proc)


def test_trouble_is_exit_2(llm: LlmFixture, tmp_path):
    model = llm.copy_to(tmp_path / "c")
    (model.parent / llm.info["tied"][1]).unlink()
    for args in (["diff", llm.model, model], ["diff", llm.model, tmp_path / "nothing.onnx"], ["diff", llm.model],
                 ["diff", llm.model, llm.model, llm.model], ["diff", llm.model, llm.model, "--bogus"]):
        proc = run_cli(args)
        assert proc.returncode == 2, describe(proc)
    proc = run_cli(["diff", llm.model, model, "--json"])
    assert proc.returncode == 2
    assert '"ok":false' in proc.stdout.replace(" ", "")


def tiny_initializers_model(count: int) -> onnx.ModelProto:
    """`count` tiny float initializers summed by one node: the shape of the 1M-tensor benchmark."""
    import numpy as np
    from onnx import helper, numpy_helper

    inits = [numpy_helper.from_array(np.arange(4, dtype=np.float32) + i, name=f"t{i}") for i in range(count)]
    node = helper.make_node("Sum", [t.name for t in inits], ["y"], name="sum")
    out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4])
    return helper.make_model(helper.make_graph([node], "tiny", [], [out], inits))


def test_many_tiny_initializers_across_storage_and_edits(tmp_path):
    """Tiny raw tensors stored raw, typed (python-onnx float_data) and in one external file
    (python-onnx's writer) are equivalent; a flipped value, a renamed tensor and a changed
    dim among thousands are found and named as onnx itself sees them, whatever the order."""
    import numpy as np
    from onnx import numpy_helper

    count = 3000
    base = tiny_initializers_model(count)
    raw = tmp_path / "raw.onnx"
    onnx.save_model(base, str(raw))
    typed = onnx.ModelProto()
    typed.CopyFrom(base)
    for t in typed.graph.initializer[::2]:
        values = numpy_helper.to_array(t)
        t.ClearField("raw_data")
        t.float_data.extend(values.flatten().tolist())
    onnx.save_model(typed, str(tmp_path / "typed.onnx"))
    (tmp_path / "ext").mkdir()
    external = onnx.ModelProto()
    external.CopyFrom(base)  # the writer moves the values out of the proto it saves
    onnx.save_model(external, str(tmp_path / "ext" / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="w.bin", size_threshold=0)
    # Typed values are converted in memory, not counted as bytes hashed.
    for other, stored in ((tmp_path / "typed.onnx", count // 2), (tmp_path / "ext" / "m.onnx", count)):
        doc = run_json(["diff", raw, other])
        assert doc["equivalent"] is True and doc["byte_identical"] is False and doc["differences"] == []
        assert doc["tensors"]["a"] == count and doc["tensors"]["b"] == count
        assert doc["bytes_hashed"] == (count + stored) * 16

    edited = onnx.ModelProto()
    edited.CopyFrom(base)
    inits = list(edited.graph.initializer)
    flipped, renamed, reshaped = inits[10], inits[1500], inits[2999]
    flipped.raw_data = (numpy_helper.to_array(flipped) + np.float32(1)).tobytes()
    old_name = renamed.name
    renamed.name = "renamed"
    del reshaped.dims[:]
    reshaped.dims.extend([2, 2])
    del edited.graph.initializer[:]
    edited.graph.initializer.extend(reversed(inits))
    onnx.save_model(edited, str(tmp_path / "edited.onnx"))
    doc = run_json(["diff", raw, tmp_path / "edited.onnx"], expected_status=1)
    assert doc["tensors"]["differing"] == 4 and doc["nodes"]["differing"] == 0
    by_kind = {(d["kind"], d["name"]): d for d in doc["differences"]}
    assert by_kind[("tensor", flipped.name)]["detail"] == "values differ"
    assert by_kind[("tensor", reshaped.name)]["detail"] == "dims [4] vs [2, 2]"
    assert by_kind[("only_in_a", old_name)]["path"] == "graph.initializer[1500]"
    assert by_kind[("only_in_b", "renamed")]["path"] == f"graph.initializer[{count - 1 - 1500}]"
    text = run_cli(["diff", raw, tmp_path / "edited.onnx"])
    assert text.returncode == 1 and "4 tensors" in text.stdout, describe(text)


def test_a_type_difference_shows_the_types(tmp_path):
    """Issue 30.13: an input's type that differs was shown as "type <24 bytes> vs <24 bytes>"."""
    from onnx import TensorProto, helper

    def write(name: str, shape) -> Path:
        graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])])
        path = tmp_path / name
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
        return path

    proc = run_cli(["diff", write("a.onnx", [1, 3]), write("b.onnx", ["batch", 3])])
    assert proc.returncode == 1, describe(proc)
    assert "FLOAT[1, 3] vs FLOAT[batch, 3]" in proc.stdout, describe(proc)
    assert "bytes>" not in proc.stdout, describe(proc)

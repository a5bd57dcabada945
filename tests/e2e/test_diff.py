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

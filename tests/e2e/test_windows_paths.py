"""Non-ASCII file names: UTF-8 on the command line and in a model's `location` (issue 16).

Written for the Windows build under wine (scripts/test_windows.sh), where the arguments
come from the wide command line and every file is opened through the wide APIs; it runs
against the Linux build too, where the same names must work the same way. The model is
made by python-onnx and the outputs are read back by it.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import cases
import refcheck
from cases import merged_path, snapshot
from refcheck import describe, run_cli

MODEL = "modèle_日本.onnx"
DATA = "données_日本.bin"


def make_model(folder):
    """A MatMul whose weight lives in DATA, beside MODEL, as python-onnx writes it."""
    folder.mkdir(parents=True, exist_ok=True)
    weight = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 7
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
                              [numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = folder / MODEL
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location=DATA,
                    size_threshold=0)
    assert (folder / DATA).is_file()
    return path, {"w": weight}


def merge_ok(args):
    proc = run_cli(["merge", *map(str, args)])
    assert proc.returncode == 0, describe(proc)
    return proc


def test_merge_non_ascii_model_and_output(tmp_path):
    model, tensors = make_model(tmp_path / "entrée_日本")
    out = tmp_path / "sortie_é" / "合并_é.onnx"
    out.parent.mkdir()
    merge_ok([model, "-o", out])
    cases.assert_self_contained(out)
    refcheck.check_model(out)
    refcheck.assert_same_tensors(tensors, out)
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]


def test_merge_non_ascii_default_output_name(tmp_path):
    model, tensors = make_model(tmp_path)
    before = snapshot(tmp_path)
    merge_ok([model])
    out = merged_path(model)
    assert out.name == "modèle_日本.merged.onnx"
    created = sorted(set(snapshot(tmp_path)) - set(before))
    assert created == [out.name], f"files created besides the output: {created}"
    refcheck.assert_same_tensors(tensors, out)


def test_merge_non_ascii_data_flag(tmp_path):
    """--data with a non-ASCII path: the location no longer names a file, the flag does."""
    model, tensors = make_model(tmp_path / "m")
    elsewhere = tmp_path / "ailleurs_日本"
    elsewhere.mkdir()
    moved = elsewhere / "poids_é.bin"
    (model.parent / DATA).rename(moved)
    out = tmp_path / "m" / "fusionné.onnx"
    merge_ok([model, "--data", moved, "-o", out])
    refcheck.assert_same_tensors(tensors, out)


def test_split_non_ascii_names_its_data_file_after_the_output(tmp_path):
    model, tensors = make_model(tmp_path / "in")
    merged = tmp_path / "in" / "é.onnx"
    merge_ok([model, "-o", merged])
    out = tmp_path / "split_日本" / "découpé.onnx"
    out.parent.mkdir()
    proc = run_cli(["split", merged, "-o", out, "--threshold", "1024"])
    assert proc.returncode == 0, describe(proc)
    assert sorted(p.name for p in out.parent.iterdir()) == ["découpé.onnx", "découpé.onnx.data"]
    locations = {refcheck.external_entries(t).get("location") for _, t in
                 refcheck.iter_tensors(onnx.load(str(out), load_external_data=False)) if refcheck.is_external(t)}
    assert locations == {"découpé.onnx.data"}
    refcheck.assert_same_tensors(tensors, out)


def test_names_beyond_the_basic_multilingual_plane(tmp_path):
    """An emoji is two UTF-16 units on Windows (a surrogate pair): the model, its data
    file (a `location` in the model) and the output all carry one."""
    folder = tmp_path / "modèles_😀"
    folder.mkdir()
    weight = np.arange(32 * 32, dtype=np.float32).reshape(32, 32) / 3
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])],
                              [numpy_helper.from_array(weight, "w")])
    model = folder / "🚀_model.onnx"
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(model),
                    save_as_external_data=True, all_tensors_to_one_file=True, location="poids_🎉.bin",
                    size_threshold=0)
    out = tmp_path / "sortie_🌍" / "fusion_😀.onnx"
    out.parent.mkdir()
    merge_ok([model, "-o", out])
    refcheck.assert_same_tensors({"w": weight}, out)
    assert sorted(p.name for p in out.parent.iterdir()) == ["fusion_😀.onnx"]
    split = tmp_path / "sortie_🌍" / "découpe_🎉.onnx"
    proc = run_cli(["split", out, "-o", split, "--threshold", "1024"])
    assert proc.returncode == 0, describe(proc)
    assert sorted(p.name for p in split.parent.iterdir()) == ["découpe_🎉.onnx", "découpe_🎉.onnx.data", "fusion_😀.onnx"]
    refcheck.assert_same_tensors({"w": weight}, split)


def test_the_gui_of_a_build_without_it_gives_advice_for_this_system(tmp_path):
    """Issue 30 item 13: the Windows build's gui said to `apt-get install` a Debian package."""
    if not refcheck.windows_binary() and (refcheck.binary_path().parent / "onnxstream-gui.so").is_file():
        pytest.skip("this build has the gui")
    # A Windows build has it when cpp-httplib's header was there (tests/gui/test_gui_windows.py).
    if refcheck.windows_binary() and b"built without the gui" not in refcheck.binary_path().read_bytes():
        pytest.skip("this build has the gui")
    proc = run_cli(["gui", tmp_path, "--no-browser"], timeout=60)
    assert proc.returncode == 1, describe(proc)
    cases.assert_error_with_hint(proc)
    if refcheck.windows_binary():
        assert "apt-get" not in proc.stderr and "Windows build" in proc.stderr, describe(proc)

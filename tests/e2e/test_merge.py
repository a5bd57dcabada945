"""`onnxstream merge` against python-onnx and ONNX Runtime (DESIGN.md's contract)."""
from __future__ import annotations

import onnx
import pytest

import cases
import refcheck
from cases import copy_case, data_args, merged_path, model_path, snapshot
from refcheck import describe, run_cli


def merge_ok(args):
    proc = run_cli(["merge", *map(str, args)])
    assert proc.returncode == 0, describe(proc)
    return proc


def test_merge_good_case(good_case, workdir, onnxstream, ort):
    root = copy_case(good_case, workdir)
    model = model_path(good_case, root)
    before = snapshot(root)

    merge_ok([model, *data_args(good_case, root), *good_case["merge_args"]])

    out = merged_path(model)
    assert out.is_file(), f"no output at the default path {out}"
    after = snapshot(root)
    cases.assert_inputs_unchanged(before, after)
    created = sorted(set(after) - set(before))
    assert created == [out.relative_to(root).as_posix()], f"files created besides the output: {created}"
    cases.assert_self_contained(out)
    refcheck.check_model(out)
    refcheck.assert_same_tensors(cases.reference(good_case), out)
    cases.assert_same_model_as_original(good_case, out)
    if good_case["ort"]:
        cases.assert_same_ort_outputs(good_case, out)


def test_merge_without_external_data_is_byte_identical(embedded_case, workdir, onnxstream):
    root = copy_case(embedded_case, workdir)
    model = model_path(embedded_case, root)
    merge_ok([model])
    assert merged_path(model).read_bytes() == model.read_bytes()


def test_merge_needs_data_flags(needs_args_case, workdir, onnxstream):
    """Without --data/--data-dir nothing fits: exit 1, and the error names the flags."""
    root = copy_case(needs_args_case, workdir)
    model = model_path(needs_args_case, root)
    before = snapshot(root)
    proc = run_cli(["merge", model])
    assert proc.returncode == 1, describe(proc)
    cases.assert_error_with_hint(proc)
    assert "--data" in proc.stderr, "the error should say which flags would help" + describe(proc)
    cases.assert_unchanged(before, snapshot(root), "a failed merge")


SEVERAL = ["one_file", "per_tensor", "renamed", "embedded", "if_subgraph"]


def test_merge_several_models(workdir, onnxstream):
    models = []
    for name in SEVERAL:
        case = cases.case_named(name)
        copy_case(case, workdir)
        models.append((case, model_path(case, workdir)))
    merge_ok([m for _, m in models])
    for case, model in models:
        out = merged_path(model)
        assert out.is_file(), f"no output for {model}"
        cases.assert_self_contained(out)
        refcheck.assert_same_tensors(cases.reference(case), out)


def test_merge_several_models_with_o_is_usage_error(workdir, onnxstream):
    models = []
    for name in SEVERAL[:2]:
        case = cases.case_named(name)
        copy_case(case, workdir)
        models.append(model_path(case, workdir))
    before = snapshot(workdir)
    proc = run_cli(["merge", *models, "-o", workdir / "out.onnx"])
    assert proc.returncode == 2, describe(proc)
    cases.assert_unchanged(before, snapshot(workdir), "a usage error")


def test_merge_to_explicit_output(workdir, onnxstream):
    case = cases.case_named("one_file")
    root = copy_case(case, workdir)
    out = workdir / "elsewhere.onnx"
    merge_ok([model_path(case, root), "-o", out])
    assert out.is_file() and not merged_path(model_path(case, root)).exists()
    refcheck.assert_same_tensors(cases.reference(case), out)


def test_existing_output_refused_without_force(workdir, onnxstream):
    case = cases.case_named("one_file")
    root = copy_case(case, workdir)
    model = model_path(case, root)
    out = merged_path(model)
    out.write_bytes(b"precious")
    before = snapshot(root)

    proc = run_cli(["merge", model])
    assert proc.returncode == 1, describe(proc)
    cases.assert_error_with_hint(proc)
    cases.assert_unchanged(before, snapshot(root), "a refused merge")
    assert out.read_bytes() == b"precious"

    merge_ok([model, "--force"])
    refcheck.assert_same_tensors(cases.reference(case), out)


@pytest.mark.parametrize("target", ["model.onnx", "model.onnx.data"])
def test_output_equal_to_an_input_refused(target, workdir, onnxstream):
    """DESIGN: the output may never be one of the inputs (model or data), even with --force."""
    case = cases.case_named("one_file")
    root = copy_case(case, workdir)
    model = model_path(case, root)
    before = snapshot(root)
    proc = run_cli(["merge", model, "-o", model.parent / target, "--force"])
    assert proc.returncode in (1, 2), describe(proc)
    cases.assert_error_with_hint(proc)
    cases.assert_unchanged(before, snapshot(root), "a refused merge")


def test_merge_is_deterministic_across_thread_counts(workdir, onnxstream):
    case = cases.case_named("resnet18")
    root = copy_case(case, workdir)
    model = model_path(case, root)
    outputs = []
    for threads in (1, 4):
        out = workdir / f"threads{threads}.onnx"
        merge_ok([model, "-o", out, "--threads", threads])
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


def test_merge_quiet_prints_nothing(workdir, onnxstream):
    case = cases.case_named("one_file")
    root = copy_case(case, workdir)
    proc = merge_ok([model_path(case, root), "--quiet"])
    assert proc.stdout == "" and proc.stderr == "", describe(proc)


def test_merge_relative_model_path(workdir, onnxstream):
    """A bare file name, run from the model's folder: output and data resolve there."""
    case = cases.case_named("one_file")
    root = copy_case(case, workdir)
    model = model_path(case, root)
    proc = run_cli(["merge", model.name], cwd=model.parent)
    assert proc.returncode == 0, describe(proc)
    refcheck.assert_same_tensors(cases.reference(case), merged_path(model))


def test_merge_into_missing_folder_fails_cleanly(workdir, onnxstream):
    case = cases.case_named("one_file")
    root = copy_case(case, workdir)
    before = snapshot(workdir)
    proc = run_cli(["merge", model_path(case, root), "-o", workdir / "no" / "such" / "folder" / "out.onnx"])
    assert proc.returncode == 1, describe(proc)
    cases.assert_error_with_hint(proc)
    cases.assert_unchanged(before, snapshot(workdir), "a failed merge")


@pytest.mark.parametrize("command", ["merge", "inspect", "verify", "split"])
def test_weights_file_given_as_the_model(command, workdir, onnxstream):
    """Issue 30.11: x.onnx.data where a model goes got protobuf's "wire type 7" (and merge
    wrote the first output before failing on the second). Now: what the file is, and what
    to give instead, before anything is written."""
    case = cases.case_named("one_file")
    root = copy_case(case, workdir)
    model = model_path(case, root)
    data = model.with_name("model.onnx.data")
    before = snapshot(workdir)
    args = [command, model, data] if command == "merge" else [command, data]
    proc = run_cli(args)
    assert proc.returncode == 1, describe(proc)
    cases.assert_error_with_hint(proc)
    assert "wire type" not in proc.stderr, describe(proc)
    said = proc.stderr + (proc.stdout if command == "verify" else "")  # verify's report is on stdout
    assert f"{data} is the weights file (external data) of {model}" in said, describe(proc)
    assert "give model.onnx" in said, describe(proc)
    cases.assert_unchanged(before, snapshot(workdir), f"{command} of a weights file")


@pytest.mark.parametrize("second", ["missing", "text"])
def test_merge_in_out_like_cp_says_use_o(second, workdir, onnxstream):
    """`merge in.onnx out.onnx` (the cp/onnxsim habit) once merged in.onnx and then failed
    on out.onnx: a usage error naming -o, and nothing written."""
    case = cases.case_named("one_file")
    root = copy_case(case, workdir)
    model = model_path(case, root)
    out = workdir / "my output.onnx"
    if second == "text":
        out.write_text("not a model\n")
    before = snapshot(workdir)
    proc = run_cli(["merge", model, out])
    assert proc.returncode == 2, describe(proc)
    assert f"use -o '{out}'" in proc.stderr, describe(proc)
    cases.assert_unchanged(before, snapshot(workdir), "merge IN OUT")
    proc = run_cli(["merge", model, "-o", out, "--force"])
    assert proc.returncode == 0, describe(proc)


def test_merge_of_many_tiny_external_tensors_costs_little_memory_a_tensor(workdir, onnxstream):
    """200,000 external tensors of 16 bytes (docs/engineering.md, "Many small tensors"): the
    peak grows by the mapped .onnx (121 bytes a tensor here) and the edits, bindings and
    tables of each tensor. Before the inlined insertion (a 48-byte new_field and a 16-byte
    label a tensor) and the rows of body drops (8 bytes a drop, four a tensor) it was 316
    bytes a tensor over the floor, then 227 (167e84d); a merged tensor's edit as one 8-byte
    row, the planner's 4 bytes a message and 8-byte sites make it 192: the budget is 215."""
    count = 200_000
    data = bytes(range(256)) * (count * 16 // 256)
    model = refcheck.write_tiny_external_model(workdir / "tiny", data)
    out = workdir / "tiny.merged.onnx"
    refcheck.assert_peak_per_tensor(["merge", model, "-o", out, "--quiet"], count, 215)
    merged = onnx.load(str(out))
    tensors = merged.graph.initializer
    assert len(tensors) == count
    for i in (0, 1, count // 2, count - 1):
        assert tensors[i].raw_data == data[16 * i:16 * i + 16]
        assert not tensors[i].external_data

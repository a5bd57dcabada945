"""`onnxstream split` against python-onnx and ONNX Runtime (DESIGN.md's contract)."""
from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto

import cases
import refcheck
from cases import copy_case, merged_path, model_path, snapshot, split_path
from refcheck import describe, run_cli

MIB = 1 << 20
DEFAULT_THRESHOLD = 1024
DEFAULT_ALIGN = 4096   # for tensors >= 1 MiB


def run_split(args) -> None:
    proc = run_cli(["split", *map(str, args)])
    assert proc.returncode == 0, describe(proc)


def layout(model: Path) -> list[dict]:
    """Every tensor of the model: key, logical size, and where its bytes are."""
    m = onnx.load(str(model), load_external_data=False)
    rows = []
    for key, t in refcheck.iter_tensors(m):
        entries = refcheck.external_entries(t)
        rows.append({
            "key": key, "nbytes": refcheck.tensor_nbytes(t), "external": refcheck.is_external(t),
            "string": t.data_type == TensorProto.STRING, "entries": entries,
            "offset": int(entries.get("offset", 0)), "length": int(entries["length"]) if "length" in entries else None,
        })
    return rows


def check_layout(out: Path, data_name: str, threshold: int, align: int) -> list[dict]:
    """Threshold and alignment rules of DESIGN.md, checked on the split model's metadata."""
    data_file = out.parent / data_name
    assert data_file.is_file(), f"no data file {data_file}"
    size = data_file.stat().st_size
    rows = layout(out)
    problems = []
    for r in rows:
        should_be_external = not r["string"] and r["nbytes"] >= threshold
        if r["external"] != should_be_external:
            problems.append(f"{r['key']} ({r['nbytes']} B) external={r['external']}, threshold {threshold}")
            continue
        if not r["external"]:
            continue
        if r["entries"].get("location") != data_name:
            problems.append(f"{r['key']}: location {r['entries'].get('location')!r}, expected {data_name!r}")
        length = r["length"] if r["length"] is not None else size - r["offset"]
        if length != r["nbytes"]:
            problems.append(f"{r['key']}: length {length} != {r['nbytes']}")
        if r["offset"] + length > size:
            problems.append(f"{r['key']}: [{r['offset']}, +{length}) beyond {data_name} ({size} B)")
        if align and r["nbytes"] >= MIB and r["offset"] % align:
            problems.append(f"{r['key']}: {r['nbytes']} B at offset {r['offset']}, not aligned to {align}")
    spans = sorted((r["offset"], r["offset"] + r["nbytes"]) for r in rows if r["external"])
    for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
        if b0 < a1:
            problems.append(f"overlapping data ranges [{a0},{a1}) and [{b0},{b1})")
    assert not problems, f"{out}: " + "; ".join(problems[:20])
    return rows


def test_split_default(split_case, workdir, onnxstream, ort):
    root = copy_case(split_case, workdir)
    model = model_path(split_case, root)
    before = snapshot(root)

    run_split([model])

    out = split_path(model)
    data_name = out.name + ".data"
    assert out.is_file(), f"no output at the default path {out}"
    after = snapshot(root)
    cases.assert_inputs_unchanged(before, after)
    created = sorted(set(after) - set(before))
    expected = sorted(p.relative_to(root).as_posix() for p in (out, out.parent / data_name))
    assert created == expected, f"created {created}, expected {expected}"

    rows = check_layout(out, data_name, DEFAULT_THRESHOLD, DEFAULT_ALIGN)
    assert any(r["external"] for r in rows)
    refcheck.check_model(out)
    refcheck.assert_same_tensors(cases.reference(split_case), out)
    cases.assert_same_model_as_original(split_case, out)
    cases.assert_same_ort_outputs(split_case, out)

    # Round trip: merging the split model gives the original tensors back.
    proc = run_cli(["merge", out])
    assert proc.returncode == 0, describe(proc)
    merged = merged_path(out)
    cases.assert_self_contained(merged)
    refcheck.check_model(merged)
    refcheck.assert_same_tensors(cases.reference(split_case), merged)
    cases.assert_same_model_as_original(split_case, merged)
    cases.assert_same_ort_outputs(split_case, merged)


def test_split_align_0_is_dense(split_case, workdir, onnxstream):
    root = copy_case(split_case, workdir)
    model = model_path(split_case, root)
    run_split([model, "--align", "0"])
    out = split_path(model)
    data_name = out.name + ".data"
    rows = check_layout(out, data_name, DEFAULT_THRESHOLD, 0)
    spans = sorted((r["offset"], r["nbytes"]) for r in rows if r["external"])
    position = 0
    for offset, nbytes in spans:
        assert offset == position, f"gap or padding before offset {offset} (expected {position})"
        position += nbytes
    assert (out.parent / data_name).stat().st_size == position
    refcheck.assert_same_tensors(cases.reference(split_case), out)


@pytest.mark.parametrize("threshold, nbytes", [("64K", 64 * 1024), ("65536", 65536), ("1M", MIB)])
def test_split_threshold_and_size_suffix(threshold, nbytes, workdir, onnxstream, ort):
    """--threshold: only tensors of that many bytes and more go out (sizes take K/M)."""
    case = cases.case_named("resnet18_embedded")
    root = copy_case(case, workdir)
    model = model_path(case, root)
    run_split([model, "--threshold", threshold])
    out = split_path(model)
    rows = check_layout(out, out.name + ".data", nbytes, DEFAULT_ALIGN)
    assert any(not r["external"] and r["nbytes"] >= DEFAULT_THRESHOLD for r in rows), \
        "the fixture should have tensors between 1 KiB and the threshold"
    refcheck.assert_same_tensors(cases.reference(case), out)
    cases.assert_same_ort_outputs(case, out)


def test_split_custom_output_and_data_name(workdir, onnxstream, ort):
    case = cases.case_named("embedded")
    root = copy_case(case, workdir)
    model = model_path(case, root)
    out_dir = workdir / "out"
    out_dir.mkdir()
    out = out_dir / "custom.onnx"
    run_split([model, "-o", out, "--data-name", "weights.bin", "--align", "64K"])
    assert sorted(p.name for p in out_dir.iterdir()) == ["custom.onnx", "weights.bin"]
    check_layout(out, "weights.bin", DEFAULT_THRESHOLD, 64 * 1024)
    refcheck.assert_same_tensors(cases.reference(case), out)
    cases.assert_same_ort_outputs(case, out)


def test_split_data_name_with_a_folder_is_refused_with_the_flag_named(workdir, onnxstream):
    """The library's refusal names the change (remedy choose_data_name); the CLI words it
    as its flag. The page's wording of the same error: tests/gui/test_gui.py."""
    case = cases.case_named("embedded")
    root = copy_case(case, workdir)
    model = model_path(case, root)
    before = snapshot(root)
    proc = run_cli(["split", model, "--data-name", "sub/x.data"])
    assert proc.returncode == 2, describe(proc)
    assert "the data file's name must be a file name, not a path ('sub/x.data')" in proc.stderr, describe(proc)
    assert "give --data-name a plain file name" in proc.stderr, describe(proc)
    cases.assert_unchanged(before, snapshot(root), "a refused split")


def test_split_existing_output_refused_without_force(workdir, onnxstream):
    case = cases.case_named("embedded")
    root = copy_case(case, workdir)
    model = model_path(case, root)
    out = split_path(model)
    out.write_bytes(b"precious")
    before = snapshot(root)
    proc = run_cli(["split", model])
    assert proc.returncode == 1, describe(proc)
    cases.assert_error_with_hint(proc)
    cases.assert_unchanged(before, snapshot(root), "a refused split")
    run_split([model, "--force"])
    refcheck.assert_same_tensors(cases.reference(case), out)


def test_split_existing_data_file_refused_without_force(workdir, onnxstream):
    case = cases.case_named("embedded")
    root = copy_case(case, workdir)
    model = model_path(case, root)
    data = split_path(model).parent / (split_path(model).name + ".data")
    data.write_bytes(b"precious")
    before = snapshot(root)
    proc = run_cli(["split", model])
    assert proc.returncode == 1, describe(proc)
    cases.assert_unchanged(before, snapshot(root), "a refused split")

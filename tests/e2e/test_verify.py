"""`onnxstream verify`: exit 0 when whole, 1 with each problem named (tensor, file, what),
2 for usage errors. Damage is made with plain file operations and python-onnx."""
from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

import cases
from llm_support import LlmFixture, external_rows, flip_byte, llm, run_json, run_ok  # noqa: F401 (fixture)
from refcheck import describe, run_cli


@pytest.fixture(scope="module")
def checksummed(llm: LlmFixture, tmp_path_factory) -> Path:
    """The LLM repacked into three shards with SHA-1 checksums (never modified: copy it)."""
    folder = tmp_path_factory.mktemp("checksummed")
    run_ok(["repack", llm.model, "-o", folder / "m.onnx", "--write-checksums", "--shard-size", "12M", "--quiet"])
    return folder


def copy_of(folder: Path, dest: Path) -> Path:
    import shutil
    shutil.copytree(folder, dest)
    return dest / "m.onnx"


def problems(model: Path, *flags) -> list[dict]:
    doc = run_json(["verify", model, *flags], expected_status=1)
    assert doc["ok"] is False
    assert doc["problems"], doc
    return doc["problems"]


def test_clean_models_exit_0(llm: LlmFixture, checksummed: Path):
    before = cases.snapshot(llm.folder)
    proc = run_ok(["verify", llm.model])
    assert "OK" in proc.stdout
    cases.assert_inputs_unchanged(before, cases.snapshot(llm.folder))
    doc = run_json(["verify", llm.model])
    assert doc["ok"] is True and doc["problems"] == [] and doc["structure_ok"] is True
    assert doc["external_tensors"] == llm.info["files"]
    assert doc["checksums"] == 0

    rows = external_rows(checksummed / "m.onnx")
    doc = run_json(["verify", checksummed / "m.onnx"])
    assert doc["checksums"] == doc["checksums_matched"] == len(rows)
    assert len(doc["files"]) == len({r["location"] for r in rows})
    assert run_cli(["verify", checksummed / "m.onnx", "--quiet"]).stdout == ""


def test_flipped_byte_names_the_tensor(checksummed: Path, tmp_path):
    model = copy_of(checksummed, tmp_path / "c")
    rows = external_rows(model)
    victim = max(rows, key=lambda r: r["length"] if r["name"] else 0)  # a large, named tensor
    flip_byte(model.parent / victim["location"], victim["offset"] + victim["length"] // 2)
    found = problems(model)
    # Tensors sharing the victim's bytes (dedupe) would be named too; here there are none.
    assert [(p["check"], p["tensor"], p["location"]) for p in found] == \
           [("checksum", victim["name"], victim["location"])]
    assert found[0]["code"] == "checksum_mismatch"
    proc = run_cli(["verify", model])
    assert proc.returncode == 1
    assert victim["name"] in proc.stdout and victim["location"] in proc.stdout
    cases.assert_error_with_hint(proc)   # stderr still says the run did not pass


def test_truncated_file(checksummed: Path, tmp_path):
    model = copy_of(checksummed, tmp_path / "c")
    rows = external_rows(model)
    last = max(rows, key=lambda r: (r["location"], r["offset"]))
    path = model.parent / last["location"]
    cut = last["offset"] + 10
    with open(path, "r+b") as f:
        f.truncate(cut)
    found = problems(model)
    cut_off = {r["name"] for r in rows if r["location"] == last["location"] and r["offset"] + r["length"] > cut}
    named = {p["tensor"] for p in found if p["code"] == "truncated_data"}
    assert named == cut_off
    assert all(p["check"] == "data" and p["location"] == last["location"] for p in found)


def test_missing_file(checksummed: Path, tmp_path):
    model = copy_of(checksummed, tmp_path / "c")
    location = external_rows(model)[0]["location"]
    (model.parent / location).unlink()
    found = problems(model)
    assert [p["code"] for p in found] == ["missing_data"]
    assert found[0]["location"] == location
    proc = run_cli(["verify", model])
    assert proc.returncode == 1 and location in proc.stdout and "--data" in proc.stdout


def test_size_mismatch(llm: LlmFixture, tmp_path):
    model = llm.copy_to(tmp_path / "m")
    m = onnx.load(str(model), load_external_data=False)
    victim = next(t for t in m.graph.initializer if t.name == "transformer.wpe.weight")
    victim.dims[0] += 1   # now needs more bytes than its file holds
    model.write_bytes(m.SerializeToString())
    found = problems(model)
    assert [(p["check"], p["code"], p["tensor"]) for p in found] == [("size", "size_mismatch", "transformer.wpe.weight")]


def test_data_found_with_flags(checksummed: Path, tmp_path):
    model = copy_of(checksummed, tmp_path / "c")
    (tmp_path / "moved").mkdir()
    for p in list(model.parent.iterdir()):
        if p != model:
            p.rename(tmp_path / "moved" / p.name)
    assert run_cli(["verify", model]).returncode == 1
    run_ok(["verify", model, "--data-dir", tmp_path / "moved"])


def test_not_a_model_and_usage(tmp_path):
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x0a\xff\xff\xff\x0f")
    found = problems(junk)
    assert found[0]["check"] == "structure"
    proc = run_cli(["verify", tmp_path / "missing.onnx"])
    assert proc.returncode == 1 and "onnxstream: error:" in proc.stderr
    for args in (["verify"], ["verify", junk, junk], ["verify", junk, "--bogus"]):
        proc = run_cli(args)
        assert proc.returncode == 2, describe(proc)
    assert run_cli(["verify", "--help"]).returncode == 0


def test_json_is_alone_on_stdout(checksummed: Path, tmp_path):
    model = copy_of(checksummed, tmp_path / "c")
    flip_byte(model.parent / external_rows(model)[0]["location"], 0)
    proc = run_cli(["verify", model, "--json"])
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["ok"] is False


def test_fixture_catalogue(tmp_path):
    """The shared fixtures: good ones verify clean, damaged ones are caught."""
    for name in ("checksum_ok", "per_tensor", "one_file", "if_subgraph", "hf_cache"):
        case = cases.case_named(name)
        root = cases.copy_case(case, tmp_path / name)
        proc = run_cli(["verify", cases.model_path(case, root), *cases.data_args(case, root)])
        assert proc.returncode == 0, describe(proc)
    for name, needle in (("bad_checksum", "checked_weight"), ("bad_truncated_data", None),
                         ("bad_missing_data", None), ("bad_traversal", None), ("bad_size_mismatch", None),
                         ("bad_random_bytes", None), ("bad_truncated_model", None)):
        case = cases.case_named(name)
        root = cases.copy_case(case, tmp_path / name)
        proc = run_cli(["verify", cases.model_path(case, root), *cases.data_args(case, root)])
        assert proc.returncode == 1, describe(proc)
        assert proc.stdout.startswith("problem:") or "onnxstream: error:" in proc.stderr, describe(proc)
        if needle:
            assert needle in proc.stdout

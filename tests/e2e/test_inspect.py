"""`onnxstream inspect` (text and --json) against what python-onnx reports.

DESIGN.md fixes that --json exists and prints only a JSON document on stdout, not its key
names. The names this test expects are all in KEYS below (dotted paths into the document);
adjust them there when the engine settles on others.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import onnx
import pytest

import cases
import refcheck
from cases import copy_case, data_args, merged_path, model_path
from refcheck import describe, run_cli

KEYS = {
    "ir_version": "ir_version",            # int
    "opsets": "opsets",                    # {domain: version} or [{"domain", "version"}]
    "producer": "producer_name",           # "name [version]" string, or {"name", "version"}
    "inputs": "inputs",                    # [name] or [{"name", ...}]
    "outputs": "outputs",                  # [name] or [{"name", ...}]
    "op_counts": "op_types",               # {op_type: count} (main graph, or all graphs)
    "node_count": "nodes",                 # int: the sum of op_counts
    "tensor_count": "tensors",             # int (every tensor, or the main initializers)
    "tensor_bytes": "tensor_bytes",        # int: sum of product(dims) x element size
    "external_files": "external_data",     # [{"path", "found_by", "size"}]
    "file_path": "path",                   # keys inside one external_files entry
    "file_found_by": "found_by",
    "file_size": "size",
    "merged_size": "merged_size",          # int: the size `merge` would write
    "fits_2gb": "fits_2gb",                # bool
}
PROTOBUF_LIMIT = 2**31 - 1


def get(document: dict, key: str):
    """The value at KEYS[key]'s dotted path; fails with the document's top keys if absent."""
    value = document
    for part in KEYS[key].split("."):
        assert isinstance(value, dict) and part in value, (
            f"inspect --json has no {KEYS[key]!r} (KEYS[{key!r}]); top-level keys: {sorted(document)}")
        value = value[part]
    return value


def names(entries) -> list[str]:
    return [e if isinstance(e, str) else e["name"] for e in entries]


def opsets(value) -> dict[str, int]:
    """{domain: version}, the default domain spelled "ai.onnx" (its other name, "")."""
    pairs = value.items() if isinstance(value, dict) else ((e.get("domain", ""), e["version"]) for e in value)
    return {(domain or "ai.onnx"): int(version) for domain, version in pairs}


def inspect_json(model: Path, extra=()) -> dict:
    proc = run_cli(["inspect", model, *extra, "--json"])
    assert proc.returncode == 0, describe(proc)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise AssertionError(f"stdout is not one JSON document ({e})" + describe(proc)) from None


def all_tensor_stats(model: onnx.ModelProto) -> tuple[int, int]:
    sizes = [refcheck.tensor_nbytes(t) or 0 for _, t in refcheck.iter_tensors(model)]
    return len(sizes), sum(sizes)


def initializer_stats(model: onnx.ModelProto) -> tuple[int, int]:
    sizes = [refcheck.tensor_nbytes(t) or 0 for t in model.graph.initializer]
    return len(sizes), sum(sizes)


def test_inspect_text(good_case, workdir, onnxstream):
    root = copy_case(good_case, workdir)
    proc = run_cli(["inspect", model_path(good_case, root), *data_args(good_case, root)])
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.strip(), "inspect printed nothing" + describe(proc)
    assert not cases.error_lines(proc.stderr), describe(proc)


def test_inspect_json_matches_onnx(good_case, workdir, onnxstream):
    root = copy_case(good_case, workdir)
    model = model_path(good_case, root)
    doc = inspect_json(model, data_args(good_case, root))
    m = onnx.load(str(model), load_external_data=False)

    assert get(doc, "ir_version") == m.ir_version
    assert opsets(get(doc, "opsets")) == opsets({o.domain: o.version for o in m.opset_import})
    producer = get(doc, "producer")
    producer_text = producer if isinstance(producer, str) else " ".join(str(v) for v in producer.values())
    assert m.producer_name in producer_text
    assert names(get(doc, "inputs")) == [i.name for i in m.graph.input]
    assert names(get(doc, "outputs")) == [o.name for o in m.graph.output]

    op_counts = {k: int(v) for k, v in get(doc, "op_counts").items()}
    accepted = {f"{scope}{'/qualified' if q else ''}": refcheck.node_counts(m, scope, q)
                for scope in ("main", "graphs", "all") for q in (False, True)}
    assert op_counts in accepted.values(), f"op counts {op_counts}; onnx: {accepted}"
    assert get(doc, "node_count") == sum(op_counts.values())

    count_bytes = (get(doc, "tensor_count"), get(doc, "tensor_bytes"))
    assert count_bytes in (all_tensor_stats(m), initializer_stats(m)), (
        f"tensor count/bytes {count_bytes}; onnx: all tensors {all_tensor_stats(m)}, "
        f"initializers {initializer_stats(m)}")

    files = get(doc, "external_files")
    if isinstance(files, dict):  # tolerate {"files": [...]} shapes
        files = next(v for v in files.values() if isinstance(v, list))
    expected = {os.path.realpath(root / p): os.path.getsize(root / p) for p in good_case["data_files"]}
    reported = {}
    for entry in files:
        path = entry[KEYS["file_path"]]
        full = path if os.path.isabs(path) else os.path.join(model.parent, path)
        reported[os.path.realpath(full)] = entry[KEYS["file_size"]]
        assert entry[KEYS["file_found_by"]], f"no 'how found' for {path}"
    assert reported == expected, f"external files {reported}, expected {expected}"


def test_inspect_merged_size_is_exact(good_case, workdir, onnxstream):
    """inspect's merged size is the size merge then writes; fits_2gb agrees."""
    root = copy_case(good_case, workdir)
    model = model_path(good_case, root)
    doc = inspect_json(model, data_args(good_case, root))
    proc = run_cli(["merge", model, *data_args(good_case, root)])
    assert proc.returncode == 0, describe(proc)
    size = merged_path(model).stat().st_size
    assert get(doc, "merged_size") == size
    assert get(doc, "fits_2gb") is True


def test_inspect_over_2gb(workdir, onnxstream):
    case = cases.case_named("bad_over_2gb")
    root = copy_case(case, workdir)
    doc = inspect_json(model_path(case, root))
    assert get(doc, "merged_size") > PROTOBUF_LIMIT
    assert get(doc, "fits_2gb") is False


def test_inspect_text_names_the_data_file(workdir, onnxstream):
    """The text report says which data file was used (DESIGN: what was used is reported)."""
    case = cases.case_named("renamed")
    root = copy_case(case, workdir)
    proc = run_cli(["inspect", model_path(case, root)])
    assert proc.returncode == 0, describe(proc)
    assert "model.data" in proc.stdout + proc.stderr, describe(proc)


# How each data file was found: JSON carries the step's stable name and what it was given
# (onnx/how_found.hpp), the text words it as the flag that found it.
FOUND_CASES = [
    # case, found_by, the extra JSON field and its value (paths under the copy), the text in "found: PATH (...)"
    ("one_file", "model_folder", None, "next to the model"),
    ("only_data_flag", "data_flag", None, "--data {path}"),
    ("data_dir", "data_dir", ("data_dir", "data_dir/weights_dir"), "--data-dir {root}/data_dir/weights_dir"),
    ("data_dir_filename", "data_dir_file_name", ("data_dir", "data_dir_filename/weights_dir"),
     "file name under --data-dir {root}/data_dir_filename/weights_dir"),
    ("renamed", "common_name", ("common_name", "model.data"), "common name model.data"),
    ("only_data_like", "only_data_file", None, "the only data file in the model's folder"),
]


@pytest.mark.parametrize("name,step,extra,words", FOUND_CASES, ids=[c[0] for c in FOUND_CASES])
def test_found_by_is_a_stable_name_in_json_and_the_flag_in_text(name, step, extra, words, workdir, onnxstream):
    case = cases.case_named(name)
    root = copy_case(case, workdir)
    model = model_path(case, root)
    args = data_args(case, root)
    (entry,) = inspect_json(model, args)["external_data"]
    assert entry["found_by"] == step
    assert entry["guessed"] is (step in ("file_name_in_model_folder", "common_name", "only_data_file"))
    given = {k: entry[k] for k in ("data_dir", "common_name") if k in entry}
    if extra is None:
        assert given == {}
    else:
        key, value = extra
        assert given == {key: str(root / value) if key == "data_dir" else value}
    path = entry["path"]
    assert os.path.samefile(path, root / case["data_files"][0])

    expected = f"    found: {path} ({words.format(path=path, root=root)})\n"
    proc = run_cli(["inspect", model, *args])
    assert proc.returncode == 0, describe(proc)
    assert expected in proc.stdout, describe(proc)

    # merge says the same: the stable name in JSON, the flag in its text.
    proc = run_cli(["merge", model, *args, "--json", "-o", workdir / f"{name}.json.onnx"])
    assert proc.returncode == 0, describe(proc)
    (merged,) = json.loads(proc.stdout)["models"]
    (used,) = merged["data_files"]
    assert (used["found_by"], {k: used[k] for k in ("data_dir", "common_name") if k in used}) == (step, given)
    proc = run_cli(["merge", model, *args, "-o", workdir / f"{name}.text.onnx"])
    assert proc.returncode == 0, describe(proc)
    assert f"  from {path} ({words.format(path=path, root=root)}): " in proc.stdout, describe(proc)


def test_a_file_not_found_has_no_found_by(workdir, onnxstream):
    case = cases.case_named("bad_missing_data")
    root = copy_case(case, workdir)
    proc = run_cli(["inspect", model_path(case, root), "--json"])
    (entry,) = json.loads(proc.stdout)["external_data"]
    assert entry["path"] is None and entry["found_by"] is None, entry

"""The fixtures themselves, judged by the reference libraries alone (no onnxstream): when
these fail, the other tests' failures say nothing about the engine."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

import cases
import refcheck


def test_good_fixture_is_valid_onnx(good_case, fixtures_root):
    if not good_case["ort_direct"]:
        pytest.skip("onnx's checker cannot find this case's data by itself")
    onnx.checker.check_model(str(fixtures_root / good_case["model"]))


def test_good_fixture_matches_reference(good_case, fixtures_root):
    if not good_case["ort_direct"]:
        pytest.skip("onnx's loader cannot find this case's data by itself")
    refcheck.assert_same_tensors(fixtures_root / good_case["model"], cases.reference(good_case))


def test_good_fixture_runs_in_onnx_runtime(good_case, fixtures_root, ort):
    """The case (or, when ORT cannot find its data, its reference-embedded twin) runs."""
    if not good_case["ort"]:
        pytest.skip("not a model for ONNX Runtime")
    model = cases.baseline_model(good_case["name"])
    for variant in cases.ort_variants(good_case):
        inputs = refcheck.make_inputs(model, variant["seed"], variant["bool_value"])
        outputs = refcheck.run_ort(model, inputs)
        assert outputs, "no outputs"
        for name, value in outputs.items():
            assert value.size and np.all(np.isfinite(value.astype(np.float64))), name


def test_if_fixture_branches_differ(fixtures_root, ort):
    """Both branch values are exercised, and they give different results."""
    case = cases.case_named("if_subgraph")
    model = fixtures_root / case["model"]
    results = [refcheck.run_ort(model, refcheck.make_inputs(model, 0, flag)) for flag in (True, False)]
    assert not refcheck.same_array(results[0]["Y"], results[1]["Y"])


def test_ort_refuses_truncated_data(fixtures_root, ort):
    """The harness reports a session that fails to load (and ORT itself sees the damage)."""
    model = fixtures_root / cases.case_named("bad_truncated_data")["model"]
    with pytest.raises(refcheck.OrtError) as info:
        refcheck.run_ort(model, refcheck.make_inputs(model, 0))
    assert info.value.load_failed, str(info.value)


def test_manifest_paths_stay_in_their_case(fixtures_root):
    for case in cases.manifest()["cases"]:
        paths = [case["model"], *case["data"], *case["data_dirs"], *case.get("data_files", [])]
        for p in paths:
            assert p.split("/")[0] == case["name"], (case["name"], p)
            assert (fixtures_root / p).exists() or case["kind"] == "bad", (case["name"], p)

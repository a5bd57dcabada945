"""pytest wiring for the end-to-end tests.

Fixtures come from ONNXSTREAM_FIXTURES (default build/fixtures); they are generated with
scripts/make_fixtures.py when missing or stale. That happens while tests are collected,
because the manifest's cases parametrize the tests. The binary is ONNXSTREAM_BIN (default
build/onnxstream); ONNX Runtime is tests/e2e/node_modules (npm ci --ignore-scripts).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cases  # noqa: E402
import refcheck  # noqa: E402


def _good(c):
    return c["kind"] == "good"


# Test argument name -> which manifest cases it runs over.
SELECTIONS = {
    "good_case": _good,
    "external_case": lambda c: _good(c) and c["external"],
    "embedded_case": lambda c: _good(c) and not c["external"],
    "split_case": lambda c: _good(c) and c["split"],
    "needs_args_case": lambda c: _good(c) and c["needs_args"],
    "bad_case": lambda c: c["kind"] == "bad",
    "lenient_case": lambda c: c["kind"] == "bad" and c.get("lenient"),
}


def pytest_generate_tests(metafunc):
    for argument, select in SELECTIONS.items():
        if argument in metafunc.fixturenames:
            selected = cases.cases(select)
            metafunc.parametrize(argument, selected, ids=[c["name"] for c in selected])
    if "bad_run" in metafunc.fixturenames:
        runs = [(c, command) for c in cases.cases(SELECTIONS["bad_case"]) for command in c["commands"]]
        metafunc.parametrize("bad_run", runs, ids=[f"{c['name']}-{command}" for c, command in runs])


def pytest_collection_modifyitems(config, items):
    """ONNXSTREAM_SHARD=K/N keeps every Nth test from the Kth (1-based): ctest runs a slow
    suite as N tests that its jobs share (the sanitizer stage's test_corrupt)."""
    shard = os.environ.get("ONNXSTREAM_SHARD")
    if not shard:
        return
    k, n = (int(x) for x in shard.split("/"))
    if not 1 <= k <= n:
        raise pytest.UsageError(f"ONNXSTREAM_SHARD={shard}: want K/N with 1 <= K <= N")
    kept, dropped = [], []
    for i, item in enumerate(items):
        (kept if i % n == k - 1 else dropped).append(item)
    config.hook.pytest_deselected(items=dropped)
    items[:] = kept


@pytest.fixture(scope="session")
def fixtures_root() -> Path:
    cases.manifest()
    return cases.fixtures_dir()


@pytest.fixture(scope="session")
def onnxstream() -> Path:
    """The binary under test; fails (not skips) the tests that need it when it is absent."""
    path = refcheck.binary_path()
    if not path.is_file():
        pytest.fail(f"onnxstream binary not found at {path}: build it, or set ONNXSTREAM_BIN")
    return path


@pytest.fixture(scope="session")
def ort() -> None:
    """ONNX Runtime is needed; fails with the fix when it is not installed."""
    problem = refcheck.ort_problem()
    if problem:
        pytest.fail(problem)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A fresh folder for this test; copy cases into it with cases.copy_case."""
    return tmp_path / "root"

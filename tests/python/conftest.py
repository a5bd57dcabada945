"""pytest wiring for the Python package's suite (run by run_suite.sh, ctest's python_package).

The package under test is the one installed from the wheel into this interpreter's venv,
never python/ in the source tree. The references are the e2e suite's (tests/e2e/refcheck.py
and cases.py: python-onnx, ONNX Runtime through node) and the command line, ONNXSTREAM_BIN.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests" / "e2e"))

import cases  # noqa: E402
import refcheck  # noqa: E402


@pytest.fixture(scope="session")
def fixtures_root() -> Path:
    cases.manifest()
    return cases.fixtures_dir()


@pytest.fixture(scope="session")
def cli() -> Path:
    path = refcheck.binary_path()
    if not path.is_file():
        pytest.fail(f"onnxstream binary not found at {path}: build it, or set ONNXSTREAM_BIN")
    return path


@pytest.fixture(scope="session")
def ort() -> None:
    problem = refcheck.ort_problem()
    if problem:
        pytest.fail(problem)

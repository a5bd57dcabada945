"""Helpers for the LLM-scale end-to-end tests (repack, verify, diff).

The model is scripts/make_llm_fixture.py's small GPT (tied embedding, one file per tensor,
location-only references), generated once into ONNXSTREAM_FIXTURES/llm_gpt when missing or
made by another version of the script. Several pytest processes may start at once (ctest
-j), so generation holds a lock.

Everything here judges onnxstream with python-onnx, numpy, hashlib and ONNX Runtime
(through refcheck); nothing calls onnxstream except run_ok.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto

import cases
import refcheck
from refcheck import describe, run_cli

MAKE_LLM_FIXTURE = refcheck.REPO_ROOT / "scripts" / "make_llm_fixture.py"
LLM_CASE = "llm_gpt"
INFO_NAME = "llm_fixture.json"
MIB = 1 << 20
# The llm tests' outputs beside each model: `<stem>.repacked.onnx` and its data.
REPACKED = "model.repacked.onnx"


def _script_sha1() -> str:
    return hashlib.sha1(MAKE_LLM_FIXTURE.read_bytes()).hexdigest()


def llm_dir() -> Path:
    """The generated LLM fixture's folder (generated now if missing or stale)."""
    root = cases.fixtures_dir()
    root.mkdir(parents=True, exist_ok=True)
    folder = root / LLM_CASE
    with open(root / f".{LLM_CASE}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        info = folder / INFO_NAME
        current = json.loads(info.read_text()) if info.exists() else None
        if current is None or current.get("generator_sha1") != _script_sha1() or current.get("large"):
            subprocess.run([sys.executable, str(MAKE_LLM_FIXTURE), str(folder)], check=True,
                           stdout=subprocess.DEVNULL)
    return folder


@pytest.fixture(scope="session")
def llm() -> "LlmFixture":
    return LlmFixture(llm_dir())


class LlmFixture:
    """The fixture's paths, its description and the reference outputs (computed once)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.model = folder / "model.onnx"
        self.info = json.loads((folder / INFO_NAME).read_text())

    def copy_to(self, dest: Path) -> Path:
        """A private copy of the fixture's folder; returns the copy's model path."""
        shutil.copytree(self.folder, dest)
        return dest / "model.onnx"

    def inputs(self, seed: int = 7) -> dict[str, np.ndarray]:
        spec = self.info["input"]
        rng = np.random.default_rng(seed)
        return {spec["name"]: rng.integers(0, spec["high"], size=spec["shape"]).astype(np.int64)}

    @functools.cached_property
    def reference_outputs(self) -> dict[str, np.ndarray]:
        return refcheck.run_ort(self.model, self.inputs())

    @functools.cached_property
    def reference_tensors(self) -> dict[str, np.ndarray]:
        return refcheck.load_tensors(self.model)

    def assert_same_model(self, rewritten: Path) -> None:
        """python-onnx loads it (with its data) and checks it; the same tensors; the same
        ONNX Runtime outputs, bit for bit."""
        loaded = onnx.load(str(rewritten))  # reads every external tensor through onnx's loader
        assert len(loaded.graph.initializer) == len(onnx.load(str(self.model), load_external_data=False).graph.initializer)
        onnx.checker.check_model(str(rewritten))
        refcheck.assert_same_tensors(self.reference_tensors, rewritten)
        refcheck.assert_same_outputs(self.reference_outputs, refcheck.run_ort(rewritten, self.inputs()))


def run_ok(args) -> "subprocess.CompletedProcess":
    proc = run_cli([str(a) for a in args])
    assert proc.returncode == 0, describe(proc)
    return proc


def run_json(args, expected_status: int = 0) -> dict:
    proc = run_cli([*map(str, args), "--json"])
    assert proc.returncode == expected_status, describe(proc)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise AssertionError(f"stdout is not one JSON document ({e}){describe(proc)}")


def external_rows(model: Path) -> list[dict]:
    """Every external tensor: key, name, location, offset, length (filled in), size needed."""
    m = onnx.load(str(model), load_external_data=False)
    rows = []
    for key, t in refcheck.iter_tensors(m):
        if not refcheck.is_external(t):
            continue
        entries = refcheck.external_entries(t)
        path = model.parent / entries["location"]
        offset = int(entries.get("offset", 0))
        length = int(entries["length"]) if "length" in entries else path.stat().st_size - offset
        rows.append({"key": key, "name": t.name, "location": entries["location"], "offset": offset,
                     "length": length, "nbytes": refcheck.tensor_nbytes(t), "checksum": entries.get("checksum"),
                     "data_type": t.data_type})
    return rows


def read_range(folder: Path, row: dict) -> bytes:
    with open(folder / row["location"], "rb") as f:
        f.seek(row["offset"])
        return f.read(row["length"])


def flip_byte(path: Path, offset: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x01]))


def embedded_nbytes(model: Path) -> dict[str, int]:
    """Embedded tensors (raw or typed) of the model and their sizes."""
    m = onnx.load(str(model), load_external_data=False)
    return {key: refcheck.tensor_nbytes(t) or 0 for key, t in refcheck.iter_tensors(m)
            if not refcheck.is_external(t) and t.data_type != TensorProto.STRING}

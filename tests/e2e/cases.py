"""Helpers the end-to-end tests share: the fixture manifest, private copies of cases,
snapshots of folders, default output names (DESIGN.md) and cached ONNX Runtime results."""
from __future__ import annotations

import atexit
import fcntl
import functools
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

import refcheck

MAKE_FIXTURES = refcheck.REPO_ROOT / "scripts" / "make_fixtures.py"
ERROR_PREFIX = "onnxstream: error:"
BIG_FILE = 256 << 20   # snapshots compare larger (sparse) files by size and blocks, not bytes


def fixtures_dir() -> Path:
    """ONNXSTREAM_FIXTURES (relative to the current folder), else build/fixtures in the repo."""
    env = os.environ.get("ONNXSTREAM_FIXTURES")
    return Path(env).resolve() if env else refcheck.REPO_ROOT / "build" / "fixtures"


def _generator_sha1() -> str:
    spec = importlib.util.spec_from_file_location("make_fixtures", MAKE_FIXTURES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generator_sha1()


@functools.lru_cache(maxsize=None)
def manifest() -> dict:
    """The fixtures' manifest; (re)generates the fixtures when missing or made by another
    version of make_fixtures.py. A lock file keeps parallel test runs (ctest -j) from
    generating into the same folder at once."""
    root = fixtures_dir()
    root.mkdir(parents=True, exist_ok=True)
    path = root / "manifest.json"
    with open(root / ".generate.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        current = json.loads(path.read_text()) if path.exists() else None
        if current is None or current.get("generator_sha1") != _generator_sha1():
            subprocess.run([sys.executable, str(MAKE_FIXTURES), str(root)], check=True)
            current = json.loads(path.read_text())
    return current


def cases(select=lambda case: True) -> list[dict]:
    return [case for case in manifest()["cases"] if select(case)]


def case_named(name: str) -> dict:
    (case,) = cases(lambda c: c["name"] == name)
    return case


def copy_case(case: dict, dest_root: Path) -> Path:
    """Copies the case's folder to dest_root/<name> (symlinks kept, sparse files sparse);
    returns dest_root, under which all of the case's manifest paths are valid."""
    dest_root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", "--sparse=always", str(fixtures_dir() / case["name"]), str(dest_root)],
                   check=True)
    return dest_root


def model_path(case: dict, root: Path) -> Path:
    return root / case["model"]


def data_args(case: dict, root: Path) -> list[str]:
    """--data / --data-dir arguments the case needs, with paths under root."""
    args: list[str] = []
    for p in case["data"]:
        args += ["--data", str(root / p)]
    for p in case["data_dirs"]:
        args += ["--data-dir", str(root / p)]
    return args


def reference(case: dict) -> dict[str, np.ndarray]:
    return refcheck._as_tensors(fixtures_dir() / case["reference"])


def merged_path(model: Path) -> Path:
    """DESIGN.md: merge writes <dir>/<stem>.merged.onnx beside the input."""
    return model.with_name(f"{stem(model)}.merged.onnx")


def split_path(model: Path) -> Path:
    """DESIGN.md: split writes <dir>/<stem>.split.onnx, data <output file name>.data."""
    return model.with_name(f"{stem(model)}.split.onnx")


def stem(model: Path) -> str:
    return model.name[: -len(".onnx")] if model.name.endswith(".onnx") else model.stem


def snapshot(folder: Path) -> dict[str, tuple]:
    """Everything under folder: kind, size, mtime and content (links: their target)."""
    result = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            st = path.lstat()
            if path.is_symlink():
                result[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                result[rel] = ("dir",)
            elif st.st_size > BIG_FILE:
                result[rel] = ("file", st.st_size, st.st_mtime_ns, st.st_blocks)
            else:
                result[rel] = ("file", st.st_size, st.st_mtime_ns, hashlib.sha1(path.read_bytes()).hexdigest())
    return result


def assert_unchanged(before: dict, after: dict, what: str) -> None:
    created = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    assert not created and not removed and not changed, (
        f"{what}: created {created}, removed {removed}, changed {changed}")


def assert_inputs_unchanged(before: dict, after: dict) -> None:
    """Every entry of before is still there, with the same bytes and mtime."""
    changed = sorted(k for k in before if after.get(k) != before[k])
    assert not changed, f"inputs changed: {changed}"


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(ERROR_PREFIX)]


def assert_error_with_hint(proc) -> None:
    """DESIGN: an error is `onnxstream: error: <what>` on stderr plus a line saying what to do."""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    errors = [i for i, line in enumerate(lines) if line.startswith(ERROR_PREFIX)]
    assert errors, f"no line starting with {ERROR_PREFIX!r}" + refcheck.describe(proc)
    assert errors[0] + 1 < len(lines), (
        "the error is not followed by a line saying what to do" + refcheck.describe(proc))


def contains(text: str, needle: str) -> bool:
    return needle.lower() in text.lower()


def external_tensors(model: Path) -> list[tuple[str, onnx.TensorProto]]:
    m = onnx.load(str(model), load_external_data=False)
    return [(k, t) for k, t in refcheck.iter_tensors(m) if refcheck.is_external(t)]


def original_canonical(case: dict) -> onnx.ModelProto:
    """The case's model in canonical form (external bytes from its reference)."""
    model = fixtures_dir() / case["model"]
    values = reference(case) if case["external"] else None
    return refcheck.canonical_model(model, values)


def assert_same_model_as_original(case: dict, rewritten: Path) -> None:
    """The rewritten model is the case's model, but for where tensors are stored."""
    refcheck.assert_same_model(original_canonical(case), refcheck.canonical_model(rewritten), str(rewritten))


def assert_self_contained(model: Path) -> None:
    m = onnx.load(str(model), load_external_data=False)
    left = [k for k, t in refcheck.iter_tensors(m) if refcheck.is_external(t) or len(t.external_data)]
    assert not left, f"{model} still has external tensors: {left[:10]}"


# ---------------------------------------------------------------------------------------
# ONNX Runtime

def ort_variants(case: dict) -> list[dict]:
    """Input settings to run a case with: both branch values when it has bool inputs."""
    if case.get("bool_inputs"):
        return [{"seed": 0, "bool_value": True}, {"seed": 0, "bool_value": False}]
    return [{"seed": 0, "bool_value": None}]


@functools.lru_cache(maxsize=None)
def _scratch() -> Path:
    path = Path(tempfile.mkdtemp(prefix="onnxstream-e2e-baseline-"))
    atexit.register(shutil.rmtree, path, True)
    return path


@functools.lru_cache(maxsize=None)
def baseline_model(name: str) -> Path:
    """A model ONNX Runtime can run as the case's original: the fixture itself when ORT
    finds its data (ort_direct), else one python-onnx writes with the reference tensors
    embedded (ORT does not know --data, --data-dir or <stem>.data)."""
    case = case_named(name)
    original = fixtures_dir() / case["model"]
    if case["ort_direct"]:
        return original
    model = onnx.load(str(original), load_external_data=False)
    values = reference(case)
    for key, tensor in refcheck.iter_tensors(model):
        if refcheck.is_external(tensor):
            embedded = numpy_helper.from_array(values[key], tensor.name)
            del tensor.external_data[:]
            tensor.data_location = TensorProto.DEFAULT
            tensor.raw_data = embedded.raw_data
    path = _scratch() / f"{name}.onnx"
    onnx.save_model(model, str(path))
    return path


@functools.lru_cache(maxsize=None)
def _original_outputs(model: str, seed: int, bool_value) -> tuple[dict, dict]:
    inputs = refcheck.make_inputs(model, seed, bool_value)
    return inputs, refcheck.run_ort(model, inputs)


def assert_same_ort_outputs(case: dict, rewritten: Path) -> None:
    """ONNX Runtime gives the rewritten model the same outputs, bit for bit, as the
    case's original model (see baseline_model; cached for the session)."""
    original = baseline_model(case["name"])
    for variant in ort_variants(case):
        inputs, expected = _original_outputs(str(original), variant["seed"], variant["bool_value"])
        got = refcheck.run_ort(rewritten, inputs)
        refcheck.assert_same_outputs(expected, got)

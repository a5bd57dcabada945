"""The catalogue of corrupt inputs (tests/data/corrupt/, made by scripts/make_corrupt.py)
through inspect, merge and split.

For every entry and command: the exit status and message the manifest names, never a
signal, an `onnxstream: error:` line when it fails, nothing left behind (no output, no
temporary file) and the inputs unchanged, bytes and mtimes. Entries marked `ok` (the base
model, the Hugging Face layout) must succeed and still leave their inputs alone.

Also here: the big entries (make_corrupt.py --large: millions of tiny fields, nesting
200,000 deep, 50,000 missing files) under a time and memory budget, and input files that
change size while onnxstream reads them.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import hostile_support as hs
import refcheck

MANIFEST = hs.manifest()
COMMANDS = MANIFEST["commands"]
ENTRIES = [e for e in MANIFEST["entries"] if "cuts" not in e]
CUT_ENTRIES = [e for e in MANIFEST["entries"] if "cuts" in e]

# An entry runs through every command, or through the ones it names (an exporter's).
RUNS = [(e, command) for e in ENTRIES for command in e.get("commands", COMMANDS)]
CUTS = [(e, offset, what, command) for e in CUT_ENTRIES for offset, what in e["cuts"] for command in COMMANDS]


def check_run(run: hs.Run, entry: dict, command: str, expected: dict) -> None:
    assert run.returncode >= 0, f"killed by signal {-run.returncode}" + run.describe()
    assert run.returncode == expected["exit"], f"{entry['name']}: {entry['description']}" + run.describe()
    text = (run.stdout + run.stderr).lower()
    for needle in expected["message"]:
        assert needle.lower() in text, f"output lacks {needle!r}" + run.describe()
    if run.returncode != 0:
        assert hs.error_lines(run.stderr), f"no line starting with {hs.ERROR_PREFIX!r}" + run.describe()


def run_entry(entry: dict, command: str, tmp_path: Path, model_bytes: bytes | None = None,
              catalogue: Path = hs.CATALOGUE, timeout: float = 60) -> hs.Run:
    folder = hs.copy_entry(entry, catalogue, tmp_path)
    reason = hs.apply_setup(folder, entry["setup"])
    if reason:
        pytest.skip(reason)
    model = folder / entry["model"]
    if model_bytes is not None:
        model.write_bytes(model_bytes)
    before = hs.snapshot(tmp_path)
    run = hs.run_measured([command, model, *entry["args"].get(command, [])], timeout=timeout)
    check_run(run, entry, command, entry["expect"][command])
    after = hs.snapshot(tmp_path)
    if entry["ok"] and command != "inspect":
        outputs = hs.output_paths(command, model)
        for output in outputs[:1]:
            assert output.is_file(), f"{output} was not written" + run.describe()
        hs.assert_inputs_unchanged(before, after, f"{command} of {entry['name']}")
        for output in outputs:
            output.unlink(missing_ok=True)
        after = hs.snapshot(tmp_path)
    hs.assert_unchanged(before, after, f"{command} of {entry['name']}")
    return run


@pytest.mark.parametrize("entry,command", RUNS, ids=[f"{e['name']}-{c}" for e, c in RUNS])
def test_catalogue(entry, command, tmp_path, onnxstream):
    run_entry(entry, command, tmp_path)


@pytest.mark.parametrize("entry,offset,what,command", CUTS,
                         ids=[f"{e['name']}-{offset:05d}-{c}" for e, offset, _, c in CUTS])
def test_truncated(entry, offset, what, command, tmp_path, onnxstream):
    base = (hs.CATALOGUE / entry["folder"] / entry["model"]).read_bytes()
    run_entry(entry, command, tmp_path, model_bytes=base[:offset])


def test_catalogue_is_current(tmp_path):
    """tests/data/corrupt/ is what scripts/make_corrupt.py writes (regenerate and commit)."""
    subprocess.run([sys.executable, str(hs.MAKE_CORRUPT), str(tmp_path / "corrupt")], check=True,
                   stdout=subprocess.DEVNULL)
    def files(folder):  # git keeps no folders, only what is in them
        return {k: v for k, v in hs.snapshot_contents(folder).items() if v != ("dir",)}

    assert files(tmp_path / "corrupt") == files(hs.CATALOGUE), (
        "tests/data/corrupt is stale: run /usr/bin/python3 scripts/make_corrupt.py")


# ---------------------------------------------------------------------------------------
# The big entries: time and memory must stay linear in the input.

@pytest.fixture(scope="module")
def large_catalogue(tmp_path_factory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("large") / "corrupt"
    return folder, hs.generate_large(folder)


LARGE_NAMES = ["large_many_fields", "large_many_nodes", "large_deep_nesting", "large_many_missing_files",
               "large_many_truncated"]
LARGE_RUNS = [(name, command) for name in LARGE_NAMES for command in ("inspect", "merge", "split")]
# Budgets far above what a linear implementation needs on a slow CI machine, far below what
# a quadratic one takes (minutes) or a copy per field costs (gigabytes).
# Under AddressSanitizer everything is slower and every allocation bigger.
SLOWER = 5 if hs.sanitized() else 1
LARGE_SECONDS = 60 * SLOWER
LARGE_RSS_BYTES_PER_INPUT_BYTE = 120 * SLOWER
LARGE_RSS_BASE = 64 << 20


@pytest.mark.parametrize("name,command", LARGE_RUNS, ids=[f"{n}-{c}" for n, c in LARGE_RUNS])
def test_large(name, command, large_catalogue, tmp_path, onnxstream):
    folder, manifest = large_catalogue
    (entry,) = [e for e in manifest["entries"] if e["name"] == name]
    run = run_entry(entry, command, tmp_path, catalogue=folder, timeout=LARGE_SECONDS * 3)
    size = (folder / entry["folder"] / entry["model"]).stat().st_size
    assert run.seconds < LARGE_SECONDS, f"{name}: {run.seconds:.1f} s" + run.describe()
    budget = LARGE_RSS_BASE + LARGE_RSS_BYTES_PER_INPUT_BYTE * size
    assert run.max_rss_kb * 1024 < budget, (
        f"{name}: peak RSS {run.max_rss_kb >> 10} MiB for a {size >> 20} MiB model (budget {budget >> 20} MiB)"
        + run.describe())


# ---------------------------------------------------------------------------------------
# Inputs that change size while they are read.

SPARSE_DATA_BYTES = 1 << 30


def sparse_external_model(folder: Path, data_bytes: int, tensors: int = 16) -> Path:
    """A model whose `tensors` float tensors fill a sparse data file of data_bytes."""
    import onnx
    from onnx import TensorProto, helper

    folder.mkdir(parents=True, exist_ok=True)
    per = data_bytes // tensors // 4
    inits = []
    for i in range(tensors):
        t = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[per])
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", "model.onnx.data"), ("offset", str(i * per * 4)), ("length", str(per * 4))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        inits.append(t)
    nodes = [helper.make_node("Identity", [f"w{i}"], [f"y{i}"]) for i in range(tensors)]
    graph = helper.make_graph(nodes, "sparse", [], [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [per])
                                                    for i in range(tensors)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = folder / "model.onnx"
    path.write_bytes(model.SerializeToString())
    with open(folder / "model.onnx.data", "wb") as f:
        f.truncate(per * 4 * tensors)
    return path


def wait_for_temporary(folder: Path, proc: subprocess.Popen, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if hs.writing_into(folder, proc.pid):
            return True
        time.sleep(0.0005)
    return False


@pytest.mark.parametrize("writer", ["portable", "auto"])
@pytest.mark.parametrize("command", ["merge", "split"])
def test_data_file_shrinks_while_copied(command, writer, tmp_path, onnxstream):
    """The data file is cut to a quarter once the output exists: a clean failure (or, if
    the copy had already finished, a complete output), never a signal, nothing left."""
    model = sparse_external_model(tmp_path / "m", SPARSE_DATA_BYTES)
    data = model.with_name("model.onnx.data")
    env = dict(os.environ, ONNXSTREAM_WRITER=writer)
    args = [str(refcheck.binary_path()), command, str(model), "--writer", writer, "--quiet"]
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            text=True)
    wait_for_temporary(model.parent, proc)
    os.truncate(data, SPARSE_DATA_BYTES // 4)
    stdout, stderr = proc.communicate(timeout=300)
    describe = f"\nexit {proc.returncode}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}" + describe
    assert hs.temporaries(model.parent) == [], describe
    if proc.returncode == 0:
        return   # the copy was done before the cut: the output is whole
    assert proc.returncode == 1, describe
    assert hs.error_lines(stderr), describe
    assert any(w in stderr for w in ("while being copied", "changed", "ended at byte")), describe
    leftovers = [p.name for p in model.parent.iterdir() if p.name not in ("model.onnx", "model.onnx.data")]
    assert leftovers == [], f"left behind: {leftovers}" + describe


def metadata_heavy_model(path: Path, nodes: int) -> None:
    """A model of `nodes` Identity nodes (tens of MB of metadata, all read through the
    mapping) and a few small embedded tensors."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np

    node_list = [helper.make_node("Identity", [f"v{i}"], [f"v{i + 1}"], name=f"identity_node_{i:08d}")
                 for i in range(nodes)]
    inits = [numpy_helper.from_array(np.full(300, i, dtype=np.float32), f"c{i}") for i in range(64)]
    graph = helper.make_graph(node_list, "heavy", [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info(f"v{nodes}", TensorProto.FLOAT, [1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())


@pytest.mark.parametrize("command", ["inspect", "merge", "split"])
def test_model_file_shrinks_while_read(command, tmp_path, onnxstream):
    """The model file is cut short while onnxstream reads it through its mapping: without
    care that is a SIGBUS. Every run must end with 0 or 1, never a signal, and leave no
    temporary file; at least one cut must land while the model is being read."""
    original = tmp_path / "original.onnx"
    metadata_heavy_model(original, 300_000)
    work = tmp_path / "work"
    work.mkdir()
    model = work / "model.onnx"
    model.write_bytes(original.read_bytes())
    untouched = hs.run_measured([command, model, "--quiet"], timeout=120)
    assert untouched.returncode == 0, untouched.describe()
    for output in hs.output_paths(command, model):
        output.unlink(missing_ok=True)

    caught = 0
    outcomes = []
    attempts = 12
    for attempt in range(attempts):
        model.write_bytes(original.read_bytes())
        delay = untouched.seconds * (attempt + 0.5) / attempts
        proc = subprocess.Popen([str(refcheck.binary_path()), command, str(model), "--quiet"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        timer = threading.Timer(delay, os.truncate, (model, 4096))
        timer.start()
        stdout, stderr = proc.communicate(timeout=300)
        timer.join()
        describe = f"\nattempt {attempt} (cut after {delay:.3f} s): exit {proc.returncode}\n--- stderr\n{stderr}"
        assert proc.returncode >= 0, f"killed by signal {-proc.returncode}" + describe
        assert proc.returncode in (0, 1), describe
        assert hs.temporaries(work) == [], describe
        if proc.returncode == 1:
            assert hs.error_lines(stderr), describe
            if "changed" in stderr or "while being" in stderr or "while it was" in stderr:
                caught += 1
        for output in hs.output_paths(command, model):
            output.unlink(missing_ok=True)
        outcomes.append(proc.returncode)
    assert caught > 0, f"no cut landed while the model was read (exits {outcomes}); the test needs a bigger model"

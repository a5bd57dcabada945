"""Reference checks for onnxstream's end-to-end tests.

Everything here judges onnxstream's output with software nobody on the project wrote:
Debian's python3-onnx (1.12) and numpy read models and tensors, ONNX Runtime (the npm
package onnxruntime-node, driven through ort_run.js) runs them. Run with /usr/bin/python3.

Functions:
  iter_tensors(model)            every TensorProto anywhere in a ModelProto, with a stable key
  load_tensors(model_path)       {key: ndarray} for every tensor, external data loaded by onnx
  assert_same_tensors(a, b)      same keys, dtypes, shapes and bytes (paths or dicts)
  canonical_model(model_path)    the model with all tensors embedded as raw_data, for
                                 comparing everything else (assert_same_model)
  make_inputs(model_path, seed)  seeded random values for the graph inputs
  run_ort(model_path, inputs)    {output name: ndarray} from ONNX Runtime on CPU
  run_cli(args)                  CompletedProcess of the onnxstream binary
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path, PureWindowsPath
from typing import Iterator, Mapping, Optional, Sequence, Union

import numpy as np
import onnx
import onnx.external_data_helper
from onnx import TensorProto, numpy_helper

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
ORT_RUN_JS = HERE / "ort_run.js"

PathLike = Union[str, os.PathLike]

# Bits per element of each TensorProto.DataType (None: variable size, i.e. strings).
# Numbers rather than enum names: onnx 1.12 does not know the fp8 and 4-bit types.
ELEMENT_BITS = {
    1: 32,   # FLOAT
    2: 8,    # UINT8
    3: 8,    # INT8
    4: 16,   # UINT16
    5: 16,   # INT16
    6: 32,   # INT32
    7: 64,   # INT64
    8: None, # STRING
    9: 8,    # BOOL
    10: 16,  # FLOAT16
    11: 64,  # DOUBLE
    12: 32,  # UINT32
    13: 64,  # UINT64
    14: 64,  # COMPLEX64
    15: 128, # COMPLEX128
    16: 16,  # BFLOAT16
    17: 8, 18: 8, 19: 8, 20: 8,  # FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ
    21: 4,   # UINT4
    22: 4,   # INT4
}


# ---------------------------------------------------------------------------------------
# Walking a model

def iter_tensors(model: onnx.ModelProto) -> Iterator[tuple[str, TensorProto]]:
    """Yields (key, tensor) for every TensorProto in the model, in a fixed order.

    Covered: graph initializers and sparse initializers, node attributes (t, tensors,
    sparse_tensor, sparse_tensors) e.g. Constant nodes, subgraphs (g, graphs) at any depth,
    FunctionProto nodes, and both graphs of every TrainingInfoProto. A sparse tensor yields
    its values and indices as "<name>.values" / "<name>.indices".

    The key is the tensor's name when it is non-empty and unused so far; otherwise
    "<node output or name>:<attribute name>" (deduplicated with "#N"). Two models with the
    same structure (an input and its rewrite) get the same keys.
    """
    used: set[str] = set()

    def unique(key: str) -> str:
        if key not in used:
            used.add(key)
            return key
        n = 2
        while f"{key}#{n}" in used:
            n += 1
        used.add(f"{key}#{n}")
        return f"{key}#{n}"

    def tensor_key(tensor: TensorProto, fallback: str) -> str:
        return unique(tensor.name if tensor.name else fallback)

    def sparse(sp: onnx.SparseTensorProto, fallback: str):
        base = sp.values.name or fallback
        yield unique(base + ".values"), sp.values
        yield unique(base + ".indices"), sp.indices

    def nodes(node_list, where: str):
        for index, node in enumerate(node_list):
            label = (node.output[0] if len(node.output) and node.output[0]
                     else node.name or f"{where}.node[{index}]")
            for attr in node.attribute:
                fallback = f"{label}:{attr.name}"
                if attr.HasField("t"):
                    yield tensor_key(attr.t, fallback), attr.t
                for i, t in enumerate(attr.tensors):
                    yield tensor_key(t, f"{fallback}[{i}]"), t
                if attr.HasField("sparse_tensor"):
                    yield from sparse(attr.sparse_tensor, fallback)
                for i, sp in enumerate(attr.sparse_tensors):
                    yield from sparse(sp, f"{fallback}[{i}]")
                if attr.HasField("g"):
                    yield from graph(attr.g, fallback)
                for i, g in enumerate(attr.graphs):
                    yield from graph(g, f"{fallback}[{i}]")

    def graph(g: onnx.GraphProto, where: str):
        for i, t in enumerate(g.initializer):
            yield tensor_key(t, f"{where}.initializer[{i}]"), t
        for i, sp in enumerate(g.sparse_initializer):
            yield from sparse(sp, f"{where}.sparse_initializer[{i}]")
        yield from nodes(g.node, where)

    yield from graph(model.graph, "graph")
    for function in model.functions:
        yield from nodes(function.node, f"function:{function.domain}:{function.name}")
    for i, info in enumerate(model.training_info):
        yield from graph(info.initialization, f"training_info[{i}].initialization")
        yield from graph(info.algorithm, f"training_info[{i}].algorithm")


def is_external(tensor: TensorProto) -> bool:
    return tensor.HasField("data_location") and tensor.data_location == TensorProto.EXTERNAL


def external_entries(tensor: TensorProto) -> dict[str, str]:
    """The tensor's external_data key/value pairs as a dict."""
    return {entry.key: entry.value for entry in tensor.external_data}


def tensor_nbytes(tensor: TensorProto) -> int | None:
    """product(dims) × element size, the size the data must have; None for strings."""
    bits = ELEMENT_BITS.get(tensor.data_type)
    if bits is None:
        return None
    count = 1
    for d in tensor.dims:
        count *= d
    return (count * bits + 7) // 8


def node_counts(model: onnx.ModelProto, scope: str, qualified: bool) -> dict[str, int]:
    """Number of nodes per op type.

    scope: "main" (the main graph), "graphs" (plus subgraphs at any depth) or "all" (plus
    FunctionProto bodies and TrainingInfoProto graphs). qualified: ops of a domain other
    than the default one count as "domain:op_type" instead of "op_type".
    """
    counts: dict[str, int] = {}

    def count(node_list):
        for node in node_list:
            default = node.domain in ("", "ai.onnx")
            key = node.op_type if default or not qualified else f"{node.domain}:{node.op_type}"
            counts[key] = counts.get(key, 0) + 1
            if scope != "main":
                for attr in node.attribute:
                    if attr.HasField("g"):
                        count(attr.g.node)
                    for sub in attr.graphs:
                        count(sub.node)

    count(model.graph.node)
    if scope == "all":
        for function in model.functions:
            count(function.node)
        for info in model.training_info:
            count(info.initialization.node)
            count(info.algorithm.node)
    return counts


def check_model(model_path: PathLike) -> None:
    """onnx.checker on the file; when onnx 1.12 cannot read an external sparse tensor
    ("Cannot parse data from external tensors"), on its canonical (embedded) form."""
    try:
        onnx.checker.check_model(str(model_path))
    except onnx.shape_inference.InferenceError as e:
        model = onnx.load(str(model_path), load_external_data=False)
        sparse_external = any(is_external(t) and key.endswith((".values", ".indices"))
                              for key, t in iter_tensors(model))
        if "Cannot parse data from external tensors" not in str(e) or not sparse_external:
            raise
        onnx.checker.check_model(canonical_model(model_path))


# ---------------------------------------------------------------------------------------
# Tensors' values

def load_tensors(model_path: PathLike) -> dict[str, np.ndarray]:
    """{key: ndarray} for every tensor in the model (see iter_tensors).

    External data is read by onnx's own loader (onnx.numpy_helper.to_array with the model's
    folder as base_dir), so a wrong offset/length written by onnxstream shows up here.
    """
    model_path = Path(model_path)
    model = onnx.load(str(model_path), load_external_data=False)
    base_dir = str(model_path.parent)
    return {key: numpy_helper.to_array(tensor, base_dir) for key, tensor in iter_tensors(model)}


def _as_tensors(x: Union[PathLike, Mapping[str, np.ndarray]]) -> Mapping[str, np.ndarray]:
    if isinstance(x, Mapping):
        return x
    path = Path(x)
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    return load_tensors(path)


def same_array(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and bytes (so NaN payloads and -0.0 count too)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == object or a.dtype.kind in "US":
        return bool(np.array_equal(a, b))
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def assert_same_tensors(a: Union[PathLike, Mapping[str, np.ndarray]],
                        b: Union[PathLike, Mapping[str, np.ndarray]]) -> None:
    """Fails unless a and b (model paths, .npz paths or dicts) hold the same tensors."""
    ta, tb = _as_tensors(a), _as_tensors(b)
    name_a = "the reference" if isinstance(a, Mapping) else str(a)
    name_b = "the reference" if isinstance(b, Mapping) else str(b)
    missing, extra = sorted(set(ta) - set(tb)), sorted(set(tb) - set(ta))
    assert not missing and not extra, (
        f"tensor keys differ: only in {name_a}: {missing[:10]}, only in {name_b}: {extra[:10]}")
    bad = []
    for key in ta:
        x, y = ta[key], tb[key]
        if not same_array(x, y):
            detail = ""
            if x.shape == y.shape and x.dtype == y.dtype and x.dtype.kind not in "OUS":
                differing = np.flatnonzero(x.reshape(-1).view(np.uint8) != y.reshape(-1).view(np.uint8))
                detail = f", {differing.size} bytes differ, first at byte {differing[0]}"
            bad.append(f"{key}: {x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}{detail}")
    assert not bad, f"{len(bad)} tensors differ between {name_a} and {name_b}: {bad[:10]}"


TYPED_FIELDS = ("float_data", "int32_data", "int64_data", "double_data", "uint64_data")


def canonical_model(model_path: PathLike, values: Mapping[str, np.ndarray] | None = None) -> onnx.ModelProto:
    """The model with every tensor's bytes in embedded raw_data and nothing else changed.

    External tensors get their bytes from values (keys as iter_tensors) when given, else
    from onnx's loader; typed fields become little-endian raw_data; data_location and
    external_data go. Two models that differ only in where and how their tensors are stored
    (a model and its merge or split) have equal canonical forms.
    """
    model_path = Path(model_path)
    model = onnx.load(str(model_path), load_external_data=False)
    for key, tensor in iter_tensors(model):
        if tensor.data_type == TensorProto.STRING:
            continue
        raw = None
        if is_external(tensor):
            if values is not None:
                raw = np.ascontiguousarray(values[key]).tobytes()
            else:
                loaded = TensorProto()
                loaded.CopyFrom(tensor)
                onnx.external_data_helper.load_external_data_for_tensor(loaded, str(model_path.parent))
                raw = loaded.raw_data
        elif not tensor.HasField("raw_data") and any(len(getattr(tensor, f)) for f in TYPED_FIELDS):
            array = numpy_helper.to_array(tensor)
            raw = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        if raw is not None:
            for field in (*TYPED_FIELDS, "raw_data"):
                tensor.ClearField(field)
            tensor.raw_data = raw
        del tensor.external_data[:]
        tensor.ClearField("data_location")
    return model


def assert_same_model(expected: onnx.ModelProto, got: onnx.ModelProto, what: str) -> None:
    """Equal canonical models; on a difference, shows where (tensor bytes left out)."""
    if expected.SerializeToString() == got.SerializeToString():
        return

    def text(model: onnx.ModelProto) -> list[str]:
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        for _, tensor in iter_tensors(copy):
            if tensor.HasField("raw_data"):
                tensor.raw_data = hashlib.sha1(tensor.raw_data).hexdigest().encode()
        return str(copy).splitlines()

    import difflib
    diff = list(difflib.unified_diff(text(expected), text(got), "expected", what, n=2, lineterm=""))
    raise AssertionError(f"{what} differs from the expected model beyond tensor storage:\n"
                         + "\n".join(diff[:60]))


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def write_compact_graph(path: Path, nodes: int) -> Path:
    """A chain of `nodes` Relu nodes with short names (scripts/bench/models.py compact-graph,
    about 21 bytes of .onnx a node): the bench's compact graph, for the memory tests."""
    subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "bench" / "models.py"), "compact-graph", str(path),
                    str(nodes)], check=True)
    return path


def write_tiny_external_model(folder: Path, data: bytes) -> Path:
    """A model of len(data) / 16 float32 initializers of four values each, external in
    folder/model.onnx.data (which holds `data`), named as an LLM's are
    (/model/layers.L/block.B/attention.query.weight): the shape of a million-tensor export,
    written byte by byte (onnx.save of 200,000 tensors takes minutes). Returns model.onnx."""
    assert len(data) % 16 == 0
    folder.mkdir(parents=True)
    (folder / "model.onnx.data").write_bytes(data)
    location = _field(13, _field(1, b"location") + _field(2, b"model.onnx.data"))
    length = _field(13, _field(1, b"length") + _field(2, b"16"))
    initializers = []
    for i in range(len(data) // 16):
        offset = _field(13, _field(1, b"offset") + _field(2, str(16 * i).encode()))
        name = _field(8, f"/model/layers.{i // 64}/block.{i % 64}/attention.query.weight".encode())
        # dims [4], data_type FLOAT, name, external_data x 3, data_location EXTERNAL
        tensor = b"\x08\x04\x10\x01" + name + location + offset + length + b"\x70\x01"
        initializers.append(_field(5, tensor))
    graph = _field(2, b"tiny") + b"".join(initializers)
    model = b"\x08\x08" + _field(8, _field(2, b"\x11")) + _field(7, graph)  # ir_version 8, opset 17
    (folder / "model.onnx").write_bytes(model)
    return folder / "model.onnx"


# ---------------------------------------------------------------------------------------
# Inputs and ONNX Runtime

def _input_dims(value_info: onnx.ValueInfoProto) -> list[int]:
    shape = value_info.type.tensor_type.shape
    return [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1 for d in shape.dim]


def make_inputs(model_path: PathLike, seed: int, bool_value: bool | None = None) -> dict[str, np.ndarray]:
    """Seeded random values for each graph input that is not an initializer.

    Symbolic or unknown dims become 1. Floats are standard normal, integers small
    (0..3, safe as indices), bools random (or all bool_value when given).
    """
    model = onnx.load(str(model_path), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(seed)
    inputs: dict[str, np.ndarray] = {}
    for vi in model.graph.input:
        if vi.name in initializers:
            continue
        elem_type = vi.type.tensor_type.elem_type
        dtype = np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[elem_type])
        dims = _input_dims(vi)
        if dtype == np.bool_:
            value = (np.full(dims, bool_value, dtype=np.bool_) if bool_value is not None
                     else rng.random(dims) < 0.5)
        elif dtype.kind == "f":
            value = rng.standard_normal(dims).astype(dtype)
        elif dtype.kind in "iu":
            value = rng.integers(0, 4, size=dims).astype(dtype)
        else:
            raise ValueError(f"{model_path}: input {vi.name} has unsupported type {dtype}")
        inputs[vi.name] = np.asarray(value)
    return inputs


class OrtError(RuntimeError):
    """ONNX Runtime refused the model (load_failed) or failed while running it."""

    def __init__(self, message: str, load_failed: bool):
        super().__init__(message)
        self.load_failed = load_failed


def ort_problem() -> str | None:
    """Why run_ort cannot work here, or None when it can."""
    if shutil.which("node") is None:
        return "node is not on PATH"
    if not (HERE / "node_modules" / "onnxruntime-node").is_dir():
        return f"onnxruntime-node is not installed: run `npm ci --ignore-scripts` in {HERE}"
    return None


def _write_tensor_dir(folder: Path, tensors: Mapping[str, np.ndarray]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for index, (name, value) in enumerate(tensors.items()):
        value = np.asarray(value)
        file = f"t{index}.bin"
        value.astype(value.dtype.newbyteorder("<"), copy=False).tofile(folder / file)
        entries.append({"name": name, "dtype": value.dtype.name, "dims": list(value.shape), "file": file})
    (folder / "manifest.json").write_text(json.dumps(entries, indent=1))


def _read_tensor_dir(folder: Path) -> dict[str, np.ndarray]:
    entries = json.loads((folder / "manifest.json").read_text())
    out = {}
    for e in entries:
        dtype = np.dtype(e["dtype"]).newbyteorder("<")
        out[e["name"]] = np.fromfile(folder / e["file"], dtype=dtype).reshape(e["dims"])
    return out


def run_ort(model_path: PathLike, inputs: Mapping[str, np.ndarray], timeout: float = 600) -> dict[str, np.ndarray]:
    """Runs the model on CPU with ONNX Runtime (one thread) and returns its outputs."""
    problem = ort_problem()
    if problem:
        raise RuntimeError(problem)
    with tempfile.TemporaryDirectory(prefix="onnxstream-ort-") as tmp:
        in_dir, out_dir = Path(tmp) / "in", Path(tmp) / "out"
        _write_tensor_dir(in_dir, inputs)
        proc = subprocess.run(
            [shutil.which("node"), str(ORT_RUN_JS), str(model_path), str(in_dir), str(out_dir)],
            capture_output=True, text=True, errors="replace", timeout=timeout,
            stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            raise OrtError(f"ONNX Runtime failed on {model_path} (exit {proc.returncode}): "
                           f"{proc.stderr.strip()}", load_failed=proc.returncode == 3)
        return _read_tensor_dir(out_dir)


def assert_same_outputs(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray]) -> None:
    assert list(a) == list(b), f"output names differ: {list(a)} vs {list(b)}"
    for name in a:
        assert same_array(a[name], b[name]), (
            f"output {name} differs: {a[name].dtype}{list(a[name].shape)} vs "
            f"{b[name].dtype}{list(b[name].shape)}")


# ---------------------------------------------------------------------------------------
# The binary under test

def binary_path() -> Path:
    """ONNXSTREAM_BIN (relative to the current folder), else build/onnxstream in the repo."""
    env = os.environ.get("ONNXSTREAM_BIN")
    return Path(env).resolve() if env else REPO_ROOT / "build" / "onnxstream"


# Runs a program for measured_run: forks and execs it, waits with a deadline (killing it
# past the deadline) and writes "exit-code seconds max-rss-kib" (or "timeout") to the file
# named first. A small interpreter of its own: a program forked from the test's process would
# count the test's pages (Linux keeps the peak across exec).
_MEASURE_PROBE = """
import os, sys, time
result, timeout, argv = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
started = time.monotonic()
pid = os.fork()
if pid == 0:
    try:
        os.execv(argv[0], argv)
    finally:
        os._exit(127)
while True:
    got, status, usage = os.wait4(pid, os.WNOHANG)
    if got:
        break
    if time.monotonic() - started > timeout:
        os.kill(pid, 9)
        os.wait4(pid, 0)
        with open(result, "w") as f:
            f.write("timeout")
        sys.exit(0)
    time.sleep(0.005)
seconds = time.monotonic() - started
with open(result, "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {seconds} {usage.ru_maxrss}")
"""


def measured_run(args: Sequence[Union[str, os.PathLike]], timeout: float, stdout, stderr,
                 env: Optional[dict] = None) -> tuple[int, float, int]:
    """(exit status, wall seconds, peak RSS in KiB) of the binary run with `args`, its output
    into the files `stdout` and `stderr`, measured by _MEASURE_PROBE; an AssertionError after
    `timeout` seconds (the binary killed)."""
    with tempfile.TemporaryDirectory() as scratch:
        result = Path(scratch) / "result"
        subprocess.run([sys.executable, "-c", _MEASURE_PROBE, str(result), str(timeout), str(binary_path()),
                        *(str(a) for a in args)], stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=env,
                       check=True, timeout=timeout + 60)
        measured = result.read_text().split()
    if measured == ["timeout"]:
        raise AssertionError(f"onnxstream {' '.join(str(a) for a in args)} still running after {timeout} s")
    return int(measured[0]), float(measured[1]), int(measured[2])


def peak_rss(args: Sequence[Union[str, os.PathLike]], timeout: float = 600) -> tuple[int, int, str]:
    """(exit status, peak RSS in bytes, stderr) of the binary run with `args` (measured_run).
    The Windows build runs under wine, whose peak is wine's own: such a test is skipped there
    (the Linux build's run of it holds the budget)."""
    if windows_binary():
        import pytest  # only the tests call this; refcheck itself serves scripts too
        pytest.skip("peak RSS is measured on the Linux build: under wine it would be wine's")
    with tempfile.TemporaryFile() as err:
        code, _, maxrss = measured_run(args, timeout, subprocess.DEVNULL, err)
        err.seek(0)
        return code, maxrss * 1024, err.read().decode(errors="replace")


def assert_peak_per_tensor(args: Sequence[Union[str, os.PathLike]], count: int, bytes_per_tensor: int) -> None:
    """Runs the binary with `args` (it must succeed) and holds its peak RSS under a floor
    of 12 MiB (the process with a model of a few tensors, and the writer's buffers) plus
    `bytes_per_tensor` for each of `count` tensors."""
    code, rss, err = peak_rss(args)
    assert code == 0, err
    budget = (12 << 20) + bytes_per_tensor * count
    assert rss < budget, f"peak RSS {rss >> 20} MiB for {count} tiny tensors, over {budget >> 20} MiB"


def command_prefix() -> list[str]:
    """What runs the binary: ONNXSTREAM_WRAPPER (e.g. `wine`, for the Windows build), else nothing."""
    return os.environ.get("ONNXSTREAM_WRAPPER", "").split()


def windows_binary() -> bool:
    """True when the binary under test is the Windows build (run under wine)."""
    return binary_path().suffix.lower() == ".exe"


def sanitized() -> bool:
    """True when the binary under test is built with ASan + UBSan (ONNXSTREAM_SANITIZED=1,
    set by the build for its suites): a few cases meet the sanitizers' own limits, not
    onnxstream's (docs/ci.md, "test_security under the sanitizers")."""
    return os.environ.get("ONNXSTREAM_SANITIZED") == "1"


def reported_name(path_text: str) -> str:
    """The file name of a path the binary printed, split by the binary's own rules: the
    Windows build joins a folder and a name with `\\` (`/tmp/out\\m.onnx.data` under wine),
    which a Linux Path would take as one name."""
    return PureWindowsPath(path_text).name if windows_binary() else Path(path_text).name


def run_cli(args: Sequence[PathLike], timeout: float = 600, cwd: PathLike | None = None) -> subprocess.CompletedProcess:
    """Runs onnxstream with args (stdin closed, stdout/stderr captured as text).

    Fails when the process dies by a signal: DESIGN.md forbids that on any input.
    """
    cmd = [*command_prefix(), str(binary_path()), *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                          timeout=timeout, stdin=subprocess.DEVNULL, cwd=cwd)
    assert proc.returncode >= 0, (
        f"onnxstream died by signal {-proc.returncode}: {' '.join(cmd)}\nstderr:\n{proc.stderr}")
    return proc


def describe(proc: subprocess.CompletedProcess) -> str:
    """The command, exit status and output of a run, for assertion messages."""
    return (f"\n$ {' '.join(map(str, proc.args))}\nexit {proc.returncode}\n"
            f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}")

"""Issue 9: model semantics, text output, limits and options, against python-onnx and ONNX Runtime.

- item 6: a singular field written twice (protobuf merges messages, keeps the last
  scalar): python-onnx reads the merge; onnxstream refuses with exit 1 and writes nothing.
- item 12: control characters, OSC/CSI sequences, bidi overrides and invalid UTF-8 in a
  model's strings never reach stdout or stderr raw, in any command's text or errors.
- item 15: split/repack --threshold 0 keep what ONNX Runtime reads while loading
  (Resize scales, Range bounds, Pad pads and value...): the result loads and computes the
  same outputs.
- item 16: verify flags a .onnx over protobuf's 2 GiB - 1.
- item 17: --align-threshold; --data/--data-dir for analyze, optimize, diff; analyze's
  total counts each removable node once (checked against what optimize removes).
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import refcheck
from refcheck import describe, run_cli

OPSET = [helper.make_opsetid("", 13)]


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    return varint((number << 3) | 2) + varint(len(payload)) + payload


def save(model: onnx.ModelProto, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def files_in(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


# ---------------------------------------------------------------------------------------
# item 6: singular fields written twice

def split_graph_model() -> tuple[bytes, onnx.ModelProto]:
    """Y = Neg(Relu(X)), with the graph written as two `graph` fields: Relu in the first,
    Neg and the output in the second. protobuf merges them into one graph."""
    first = helper.make_graph([helper.make_node("Relu", ["X"], ["t"], name="relu")], "g",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4])], [])
    second = onnx.GraphProto()
    second.node.extend([helper.make_node("Neg", ["t"], ["Y"], name="neg")])
    second.output.extend([helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4])])
    model = helper.make_model(first, opset_imports=OPSET)
    model.ir_version = 8
    data = model.SerializeToString() + field(7, second.SerializeToString())
    merged = onnx.ModelProto()
    merged.ParseFromString(data)
    return data, merged


def split_constant_model() -> tuple[bytes, onnx.ModelProto]:
    """Y = X + C, where the Constant's `value` tensor is written as two `t` fields
    (dims and type in the first, raw_data in the second)."""
    value = numpy_helper.from_array(np.arange(4, dtype=np.float32), "c")
    head = onnx.TensorProto()
    head.CopyFrom(value)
    head.ClearField("raw_data")
    tail = onnx.TensorProto()
    tail.raw_data = value.raw_data
    attribute = helper.make_attribute("value", head).SerializeToString() + field(5, tail.SerializeToString())
    constant = helper.make_node("Constant", [], ["C"]).SerializeToString() + field(5, attribute)
    add = helper.make_node("Add", ["X", "C"], ["Y"]).SerializeToString()
    graph = helper.make_graph([], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4])])
    graph_bytes = field(1, constant) + field(1, add) + graph.SerializeToString()
    model = helper.make_model(onnx.GraphProto(), opset_imports=OPSET)
    model.ir_version = 8
    model.ClearField("graph")
    data = model.SerializeToString() + field(7, graph_bytes)
    merged = onnx.ModelProto()
    merged.ParseFromString(data)
    return data, merged


@pytest.mark.parametrize("make", [split_graph_model, split_constant_model], ids=["graph", "attribute_t"])
def test_singular_field_twice_is_refused_by_every_command(make, tmp_path, onnxstream):
    data, merged = make()
    # python-onnx (protobuf) reads one merged message: the model is valid to it.
    onnx.checker.check_model(merged)
    if make is split_graph_model:
        assert [n.op_type for n in merged.graph.node] == ["Relu", "Neg"]
    else:
        assert numpy_helper.to_array(merged.graph.node[0].attribute[0].t).tolist() == [0, 1, 2, 3]
    folder = tmp_path / "m"
    folder.mkdir()
    model = folder / "model.onnx"
    model.write_bytes(data)
    before = files_in(folder)
    runs = [["inspect", model], ["verify", model], ["analyze", model], ["optimize", model],
            ["optimize", model, "--dry-run"], ["merge", model], ["split", model, "--threshold", "0"],
            ["repack", model, "--threshold", "0"], ["diff", model, model]]
    for args in runs:
        proc = run_cli(args)
        expected = 2 if args[0] == "diff" else 1
        assert proc.returncode == expected, describe(proc)
        assert "appears more than once" in proc.stdout + proc.stderr, describe(proc)
        assert files_in(folder) == before, f"{args[0]} wrote {files_in(folder) - before}"
    assert model.read_bytes() == data


# ---------------------------------------------------------------------------------------
# item 12: hostile strings in text output

HOSTILE = ["\x1b[2J\x1b[H", "\x1b]0;owned\x07", "\x07bell", "\x9b31m", "rtl\u202eexe.txt", "nul\x00byte",
           "del\x7f", "cr\rline", "new\nline"]
INVALID_UTF8 = b"\xff\xfe\xc0\x80h"   # as long as "graph"


def hostile_model(folder: Path) -> Path:
    """A model whose names, producer, doc strings, op type, domain and external location
    hold every kind of hostile text; its data file is missing, so commands warn and fail."""
    names = [f"n{i}_{h}" for i, h in enumerate(HOSTILE)]
    weight = numpy_helper.from_array(np.ones(300, dtype=np.float32), "W" + HOSTILE[1])
    onnx.external_data_helper.set_external_data(weight, location="data" + HOSTILE[0] + ".bin", offset=0, length=1200)
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    nodes = [helper.make_node("Add", ["X", weight.name], [names[0]], name=HOSTILE[4], doc_string=HOSTILE[0])]
    for a, b in zip(names, names[1:]):
        nodes.append(helper.make_node("Identity", [a], [b], name=b))
    nodes.append(helper.make_node("Custom" + HOSTILE[1], [names[-1]], ["Y" + HOSTILE[2]], domain="x" + HOSTILE[0]))
    graph = helper.make_graph(nodes, "graph" + HOSTILE[0] + HOSTILE[1],
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [300])],
                              [helper.make_tensor_value_info("Y" + HOSTILE[2], TensorProto.FLOAT, [300])],
                              [weight], doc_string="\n".join(HOSTILE))
    model = helper.make_model(graph, producer_name="prod" + HOSTILE[0] + HOSTILE[3], producer_version=HOSTILE[1],
                              doc_string=HOSTILE[4],
                              opset_imports=OPSET + [helper.make_opsetid("x" + HOSTILE[0], 1)])
    model.ir_version = 8
    data = model.SerializeToString()
    # Invalid UTF-8 cannot go through protobuf's Python strings: patch a same-length name.
    data = data.replace(b"graph\x1b[2J", INVALID_UTF8 + b"\x1b[2J", 1)
    assert INVALID_UTF8 in data
    path = folder / "model.onnx"
    path.write_bytes(data)
    return path


def unsafe_in(raw: bytes) -> list[str]:
    """Bytes a terminal would act on: invalid UTF-8, C0 controls but newline and tab, DEL,
    C1 controls, and the invisible reordering characters (U+200B-U+200F, U+202A-U+202E,
    U+2066-U+2069)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return [f"invalid UTF-8 at byte {e.start}: {raw[max(0, e.start - 20):e.start + 10]!r}"]
    bad = []
    for i, ch in enumerate(text):
        code = ord(ch)
        if (code < 0x20 and ch not in "\n\t") or 0x7F <= code <= 0x9F or 0x200B <= code <= 0x200F \
                or 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069:
            bad.append(f"U+{code:04X} at {i}: {text[max(0, i - 20):i + 10]!r}")
    return bad


def test_hostile_strings_never_reach_the_terminal_raw(tmp_path, onnxstream):
    folder = tmp_path / "m"
    folder.mkdir()
    model = hostile_model(folder)
    data_file = folder / "hostile.bin"
    data_file.write_bytes(np.ones(300, dtype=np.float32).tobytes())
    other = tmp_path / "other" / "model.onnx"   # node names differ: diff lists them
    other.parent.mkdir()
    other.write_bytes(model.read_bytes().replace(b"n1_", b"m1_"))
    (other.parent / "hostile.bin").write_bytes(data_file.read_bytes())
    runs = [["inspect", model], ["verify", model], ["analyze", model], ["optimize", model, "--dry-run"],
            ["optimize", model, "-o", tmp_path / "o.onnx"], ["merge", model], ["split", model],
            ["repack", model], ["diff", model, model],
            # with the data given: the commands get further and print names and findings
            ["inspect", model, "--data", data_file], ["verify", model, "--data", data_file],
            ["analyze", model, "--data", data_file], ["optimize", model, "--dry-run", "--data", data_file],
            ["merge", model, "--data", data_file, "-o", tmp_path / "merged.onnx"],
            ["split", model, "--data", data_file, "-o", tmp_path / "split.onnx"],
            ["repack", model, "--data", data_file, "-o", tmp_path / "repacked.onnx"],
            ["diff", model, other, "--data", data_file],
            ["inspect", folder / ("missing" + HOSTILE[0] + HOSTILE[1] + ".onnx")],
            ["inspect", model, "--bogus" + HOSTILE[1]],
            ["no-such-command" + HOSTILE[0]]]
    problems = []
    for args in runs:
        proc = subprocess.run([str(onnxstream), *map(os.fsencode, map(str, args))], capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=120)
        assert proc.returncode >= 0, f"{args[0]} died by signal {-proc.returncode}"
        for stream, raw in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            for bad in unsafe_in(raw):
                problems.append(f"{' '.join(map(str, args[:1]))} {stream}: {bad}")
    assert not problems, "\n".join(problems[:40])


def test_hostile_strings_stay_readable_as_escapes(tmp_path, onnxstream):
    folder = tmp_path / "m"
    folder.mkdir()
    model = hostile_model(folder)
    proc = run_cli(["inspect", model])
    assert proc.returncode == 0, describe(proc)
    assert "prod\\x1b[2J\\x1b[H\\u009b31m" in proc.stdout, describe(proc)
    assert "external data 'data\\x1b[2J\\x1b[H.bin'" in proc.stdout, describe(proc)
    assert "\\xff\\xfe\\xc0\\x80" in proc.stdout, describe(proc)
    j = run_cli(["inspect", model, "--json"])
    doc = json.loads(j.stdout)
    assert doc["producer_name"] == "prod" + HOSTILE[0] + HOSTILE[3]   # JSON escapes, the value is intact
    assert not unsafe_in(j.stdout.encode())


# ---------------------------------------------------------------------------------------
# item 15: tensors ONNX Runtime reads while loading stay embedded

LOAD_TIME_MODELS = ["resize", "range", "pad", "upsample"]


def load_time_model(folder: Path, which: str) -> Path:
    """Models whose float (and int) load-time inputs are initializers."""
    rng = np.random.default_rng(9)
    x4 = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 2, 4, 4])
    def y(*dims):
        return helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(dims))
    graphs = {
        "resize": (helper.make_graph(
            [helper.make_node("Resize", ["X", "roi", "scales"], ["Y"], mode="nearest")], "resize", [x4], [y(1, 2, 8, 12)],
            [numpy_helper.from_array(np.array([], dtype=np.float32), "roi"),
             numpy_helper.from_array(np.array([1, 1, 2, 3], dtype=np.float32), "scales")]), 13),
        "range": (helper.make_graph(
            [helper.make_node("Range", ["start", "limit", "delta"], ["R"]), helper.make_node("Add", ["R", "X"], ["Y"])],
            "range", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1])], [y(9)],
            [numpy_helper.from_array(np.array(0.5, dtype=np.float32), "start"),
             numpy_helper.from_array(np.array(7.0, dtype=np.float32), "limit"),
             numpy_helper.from_array(np.array(0.75, dtype=np.float32), "delta")]), 13),
        "pad": (helper.make_graph(
            [helper.make_node("Pad", ["X", "pads", "value"], ["P"], mode="constant"),
             helper.make_node("Reshape", ["P", "shape"], ["R"]), helper.make_node("Mul", ["R", "W"], ["Y"])],
            "pad", [x4], [y(2, 8, 7)],
            [numpy_helper.from_array(np.array([0, 0, 1, 2, 0, 0, 3, 1], dtype=np.int64), "pads"),
             numpy_helper.from_array(np.array(1.5, dtype=np.float32), "value"),
             numpy_helper.from_array(np.array([2, 8, 7], dtype=np.int64), "shape"),
             numpy_helper.from_array(rng.standard_normal((2, 8, 7)).astype(np.float32), "W")]), 13),
        # Upsample is gone at opset 10+: its scales input is opset 9's.
        "upsample": (helper.make_graph(
            [helper.make_node("Upsample", ["X", "up"], ["Y"], mode="nearest")], "upsample", [x4], [y(1, 2, 8, 12)],
            [numpy_helper.from_array(np.array([1, 1, 2, 3], dtype=np.float32), "up")]), 9),
    }
    graph, opset = graphs[which]
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return save(model, folder / which / "model.onnx")


@pytest.mark.parametrize("which", LOAD_TIME_MODELS)
@pytest.mark.parametrize("command", ["split", "repack"])
def test_threshold_0_keeps_load_time_tensors_embedded(command, which, tmp_path, onnxstream, ort):
    rng = np.random.default_rng(3)
    for model in [load_time_model(tmp_path / "in", which)]:
        m = onnx.load(str(model))
        inputs = {}
        for i in m.graph.input:
            dims = [d.dim_value for d in i.type.tensor_type.shape.dim]
            inputs[i.name] = rng.standard_normal(dims).astype(np.float32)
        expected = refcheck.run_ort(model, inputs)
        out = tmp_path / "out" / model.parent.name / "model.onnx"
        out.parent.mkdir(parents=True)
        proc = run_cli([command, model, "-o", out, "--threshold", "0"])
        assert proc.returncode == 0, describe(proc)
        got = refcheck.run_ort(out, inputs)   # failed to load before the fix
        refcheck.assert_same_outputs(expected, got)
        kept = {t.name for t in onnx.load(str(out), load_external_data=False).graph.initializer
                if t.data_location != TensorProto.EXTERNAL}
        assert kept >= {"roi", "scales", "start", "limit", "delta", "pads", "value", "shape", "up"} & \
            {t.name for t in m.graph.initializer}, (model.parent.name, kept)
        if "W" in {t.name for t in m.graph.initializer}:
            assert "W" not in kept   # threshold 0 still moves the ordinary weights


# ---------------------------------------------------------------------------------------
# item 16: protobuf's limit on the .onnx itself

def test_verify_flags_an_onnx_over_2_gib(tmp_path, onnxstream):
    """A 2 GiB + 64 B tensor embedded as raw_data: protobuf cannot parse the file. The file
    is sparse, so it costs no disk."""
    count = (1 << 29) + 16
    tensor_head = varint((1 << 3) | 0) + varint(count) + varint((2 << 3) | 0) + varint(1) + field(8, b"big")
    raw_length = count * 4
    tensor_len = len(tensor_head) + len(varint((9 << 3) | 2)) + len(varint(raw_length)) + raw_length
    initializer_prefix = varint((5 << 3) | 2) + varint(tensor_len) + tensor_head + varint((9 << 3) | 2) + varint(raw_length)
    graph_len = len(initializer_prefix) + raw_length
    head = varint((1 << 3) | 0) + varint(8) + varint((7 << 3) | 2) + varint(graph_len) + initializer_prefix
    path = tmp_path / "big.onnx"
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(len(head) + raw_length)
    assert path.stat().st_size > (1 << 31) - 1
    proc = run_cli(["verify", path])
    assert proc.returncode == 1, describe(proc)
    assert "over protobuf's limit of 2 GiB - 1" in proc.stdout + proc.stderr, describe(proc)
    j = run_cli(["verify", path, "--json"])
    doc = json.loads(j.stdout)
    assert not doc["ok"]
    assert any(p["check"] == "structure" for p in doc["problems"]), doc


# ---------------------------------------------------------------------------------------
# item 17: options

def many_small_tensors(folder: Path) -> Path:
    rng = np.random.default_rng(17)
    weights = [numpy_helper.from_array(rng.standard_normal(300).astype(np.float32), f"w{i}") for i in range(40)]
    nodes, last = [], "X"
    for i, w in enumerate(weights):
        nodes.append(helper.make_node("Add", [last, w.name], [f"a{i}"]))
        last = f"a{i}"
    big = numpy_helper.from_array(rng.standard_normal(300 * 1024).astype(np.float32), "big")  # 1.2 MB
    nodes.append(helper.make_node("Mul", [last, "big_slice"], ["Y"]))
    nodes.insert(0, helper.make_node("Slice", ["big", "s0", "s1"], ["big_slice"]))
    graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [300])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [300])],
                              weights + [big, numpy_helper.from_array(np.array([0], dtype=np.int64), "s0"),
                                         numpy_helper.from_array(np.array([300], dtype=np.int64), "s1")])
    model = helper.make_model(graph, opset_imports=OPSET)
    model.ir_version = 8
    return save(model, folder / "model.onnx")


def external_offsets(model: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for t in onnx.load(str(model), load_external_data=False).graph.initializer:
        if t.data_location == TensorProto.EXTERNAL:
            e = {x.key: x.value for x in t.external_data}
            out[t.name] = (int(e.get("offset", 0)), int(e["length"]))
    return out


@pytest.mark.parametrize("command", ["split", "repack"])
def test_align_pads_only_tensors_over_the_align_threshold(command, tmp_path, onnxstream, ort):
    model = many_small_tensors(tmp_path / "in")
    dense_bytes = 40 * 1200 + 300 * 1024 * 4
    inputs = {"X": np.linspace(-1, 1, 300, dtype=np.float32)}
    expected = refcheck.run_ort(model, inputs)
    for args, aligned_names, max_size in [
            (["--align", "64K"], {"big"}, dense_bytes + 65536),   # was 40 x 64 KiB of padding
            (["--align", "64K", "--align-threshold", "1K"], None, None),
            (["--align", "4096", "--align-threshold", "2M"], set(), dense_bytes)]:
        out = tmp_path / ("o" + "_".join(a.strip("-") for a in args)) / "m.onnx"
        out.parent.mkdir()
        proc = run_cli([command, model, "-o", out, *args])
        assert proc.returncode == 0, describe(proc)
        offsets = external_offsets(out)
        assert len(offsets) == 41
        align = 65536 if "64K" in args else 4096
        threshold = {"1K": 1024, "2M": 2 << 20}.get(args[-1], 1 << 20)
        for name, (offset, length) in offsets.items():
            if length >= threshold:
                assert offset % align == 0, (args, name, offset)
        if aligned_names is not None:
            misaligned_small = [n for n, (o, l) in offsets.items() if l < threshold and o % align == 0 and o > 0]
            assert len(misaligned_small) < 5, (args, "small tensors were padded", misaligned_small)
        data = out.parent / "m.onnx.data"
        if max_size is not None:
            assert data.stat().st_size <= max_size, (args, data.stat().st_size)
        refcheck.assert_same_outputs(expected, refcheck.run_ort(out, inputs))


def test_help_documents_align_threshold_and_shard_rule(onnxstream):
    for command in ("split", "repack"):
        proc = run_cli([command, "--help"])
        assert "--align-threshold BYTES" in proc.stdout
    # The help is wrapped to the terminal's width: the rule is read with its words rejoined.
    assert "a tensor larger than BYTES gets a shard of its own" in " ".join(run_cli(["repack", "--help"]).stdout.split())


def test_analyze_optimize_diff_take_data_and_data_dir(tmp_path, onnxstream):
    model = many_small_tensors(tmp_path / "in")
    split = tmp_path / "split" / "m.onnx"
    split.parent.mkdir()
    assert run_cli(["split", model, "-o", split]).returncode == 0
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    (split.parent / "m.onnx.data").rename(moved / "m.onnx.data")
    for args in (["analyze", split], ["optimize", split, "--dry-run"], ["diff", model, split]):
        for extra in (["--data", moved / "m.onnx.data"], ["--data-dir", moved]):
            proc = run_cli([*args, *extra])
            assert proc.returncode == 0, describe(proc)
            assert "warning" not in proc.stderr, describe(proc)
    # Without them the data is not found: diff has trouble, analyze warns.
    assert run_cli(["diff", model, split]).returncode == 2
    assert "warning" in run_cli(["analyze", split]).stderr


def test_analyze_total_counts_each_removable_node_once(tmp_path, onnxstream):
    """Dead Identity nodes are found by dce (dead) and by identity (an Identity); an
    isolated component's nodes by the component check and by dce. The total must be the
    nodes optimize really removes, as python-onnx counts them."""
    nodes = [helper.make_node("Relu", ["X"], ["r"]), helper.make_node("Identity", ["r"], ["Y"]),
             helper.make_node("Identity", ["X"], ["dead1"]), helper.make_node("Identity", ["dead1"], ["dead2"]),
             helper.make_node("Neg", ["c"], ["iso1"]), helper.make_node("Identity", ["iso1"], ["iso2"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4])],
                              [numpy_helper.from_array(np.ones(4, dtype=np.float32), "c")])
    model = save(helper.make_model(graph, opset_imports=OPSET), tmp_path / "m.onnx")
    proc = run_cli(["analyze", model, "--json"])
    assert proc.returncode == 0, describe(proc)
    doc = json.loads(proc.stdout)
    per_category = sum(v["nodes"] for v in doc["summary"].values() if isinstance(v, dict))
    out = tmp_path / "o.onnx"
    assert run_cli(["optimize", model, "-o", out]).returncode == 0
    removed = len(onnx.load(str(model)).graph.node) - len(onnx.load(str(out)).graph.node)
    assert removed == 5
    assert per_category > removed          # the categories overlap
    assert doc["summary"]["removable_nodes"] == removed
    text = run_cli(["analyze", model]).stdout
    assert f"{removed} nodes removable in all (each counted once)" in text, text


# ---------------------------------------------------------------------------------------
# single static assignment: a graph defines each name once

def ssa_model(case: str) -> onnx.ModelProto:
    """A graph where a node writes a name its own graph already defines ("two_nodes",
    "input", "initializer", "two_outputs", "in_branch"), or one read as ONNX Runtime reads
    it ("initializer_twice": the last one wins)."""
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])
    w = [numpy_helper.from_array(np.full(2, 3, np.float32), "W")]
    node = helper.make_node
    if case == "two_nodes":
        nodes, inits = [node("Relu", ["X"], ["r"], name="a"), node("Neg", ["X"], ["r"], name="b"),
                        node("Abs", ["r"], ["Y"], name="c")], []
    elif case == "input":
        nodes, inits = [node("Relu", ["X"], ["X"], name="a"), node("Neg", ["X"], ["Y"], name="b")], []
    elif case == "initializer":
        nodes, inits = [node("Relu", ["X"], ["W"], name="a"), node("Add", ["X", "W"], ["Y"], name="b")], w
    elif case == "two_outputs":
        nodes, inits = [node("TopK", ["X", "K"], ["t", "t"], name="a"), node("Neg", ["t"], ["Y"], name="b")], \
            [numpy_helper.from_array(np.array([2], np.int64), "K")]
    elif case == "in_branch":
        branch = helper.make_graph([node("Neg", ["X"], ["b"], name="n1"), node("Abs", ["X"], ["b"], name="n2")], "br", [],
                                   [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])])
        nodes, inits = [node("ReduceSum", ["X"], ["s"], keepdims=0), node("Cast", ["s"], ["c"], to=TensorProto.BOOL),
                        node("If", ["c"], ["Y"], name="if", then_branch=branch, else_branch=branch)], []
    else:
        assert case == "initializer_twice"
        nodes, inits = [node("Add", ["X", "W"], ["Y"], name="a")], \
            w + [numpy_helper.from_array(np.full(2, 5, np.float32), "W")]
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits), opset_imports=OPSET)


GRAPH_COMMANDS = [["analyze"], ["optimize"], ["optimize", "--dry-run"], ["infer-shapes"],
                  ["extract", "--inputs", "X", "--outputs", "Y"], ["convert", "--dtype", "fp16"],
                  ["quantize", "--weights", "int8"], ["export", "--to", "caffe"]]


@pytest.mark.parametrize("case", ["two_nodes", "input", "initializer", "two_outputs", "in_branch"])
def test_a_name_defined_twice_is_refused_by_every_graph_command(case, tmp_path, onnxstream, ort):
    """onnx.checker and ONNX Runtime refuse these graphs; every command that reads the
    graph's values refuses them too, naming the value and both definitions (the passes
    would otherwise reason about one value where the model has two: cse looped forever on
    one). Those that edit fields or copy bytes pass the graph through as it is."""
    m = ssa_model(case)
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(m)
    model = save(m, tmp_path / "m" / "model.onnx")
    with pytest.raises(refcheck.OrtError) as refused:
        refcheck.run_ort(model, {"X": np.array([1, -2], np.float32)})
    assert refused.value.load_failed, str(refused.value)
    data = model.read_bytes()
    before = files_in(model.parent)
    name = {"two_nodes": "r", "input": "X", "initializer": "W", "two_outputs": "t", "in_branch": "b"}[case]
    for args in GRAPH_COMMANDS:
        proc = run_cli([args[0], model, *args[1:]])
        assert proc.returncode == 1, describe(proc)
        assert f"'{name}' is defined twice in" in proc.stderr, describe(proc)
        assert "single static assignment" in proc.stderr, describe(proc)
        assert files_in(model.parent) == before, f"{args} wrote {files_in(model.parent) - before}"
    if case == "two_nodes":  # edit needs inference for a type nothing declares: it says why it cannot
        proc = run_cli(["edit", model, "--add-output", "r", "-o", tmp_path / "added.onnx"])
        assert proc.returncode == 1, describe(proc)
        assert "inference cannot read the graph: 'r' is defined twice in" in proc.stderr, describe(proc)
        assert not (tmp_path / "added.onnx").exists()
    assert model.read_bytes() == data
    for args in (["inspect", model], ["verify", model], ["merge", model, "-o", tmp_path / "merged.onnx"],
                 ["edit", model, "--batch", "1", "-o", tmp_path / "edited.onnx"]):
        proc = run_cli(args)
        assert proc.returncode == 0, describe(proc)
    assert onnx.load(str(tmp_path / "edited.onnx")).graph.node == m.graph.node


def test_an_initializer_given_twice_is_read_as_onnx_runtime_reads_it(tmp_path, onnxstream, ort):
    """onnx.checker refuses two initializers of one name, ONNX Runtime takes the last; the
    graph commands read it as ONNX Runtime does, and optimize's output computes the same."""
    m = ssa_model("initializer_twice")
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(m)
    model = save(m, tmp_path / "model.onnx")
    x = {"X": np.array([1, -2], np.float32)}
    want = refcheck.run_ort(model, x)
    np.testing.assert_array_equal(want["Y"], [6, 3])
    out = tmp_path / "o.onnx"
    proc = run_cli(["optimize", model, "-o", out])
    assert proc.returncode == 0, describe(proc)
    refcheck.assert_same_outputs(refcheck.run_ort(out, x), want)
    assert run_cli(["analyze", model]).returncode == 0


def test_edit_batch_leaves_unknown_output_dims_of_a_graph_inference_refuses(tmp_path, onnxstream):
    """edit --batch fills a graph output's unknown dims from inference where it can; on a
    graph that defines a name twice inference cannot read the graph, so the edit is made
    and the output's dims stay unknown (builds before e7ff80c guessed them from one of the
    two writers)."""
    node = helper.make_node
    graph = helper.make_graph(
        [node("Relu", ["X"], ["r"], name="a"), node("Neg", ["X"], ["r"], name="b"), node("Abs", ["r"], ["Y"], name="c")],
        "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 2])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, None])])
    model = save(helper.make_model(graph, opset_imports=OPSET), tmp_path / "m.onnx")
    out = tmp_path / "edited.onnx"
    proc = run_cli(["edit", model, "--batch", "1", "-o", out])
    assert proc.returncode == 0, describe(proc)
    edited = onnx.load(str(out))
    dims = lambda v: [(d.dim_value, d.dim_param) for d in v.type.tensor_type.shape.dim]
    assert dims(edited.graph.input[0]) == [(1, ""), (2, "")]
    assert dims(edited.graph.output[0]) == [(0, ""), (0, "")]

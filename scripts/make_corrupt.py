#!/usr/bin/python3
"""Writes the catalogue of corrupt inputs: tests/data/corrupt/ and its manifest.json.

Every entry is a model (plus, where it matters, data files) that is wrong in one way, the
stage of onnxstream that must catch it, and what each command must then do: its exit
status and a substring of what it prints. tests/e2e/test_corrupt.py runs every entry
through inspect, merge and split; the fuzz targets replay the files as seeds.

    /usr/bin/python3 scripts/make_corrupt.py [OUT]          # OUT: tests/data/corrupt
    /usr/bin/python3 scripts/make_corrupt.py --large OUT    # the big entries (test time only)

The committed catalogue stays small; the entries that are big by nature (millions of tiny
fields, nesting a hundred thousand levels deep, tens of thousands of tensors) are written
with --large into a scratch folder when the tests run. Output is deterministic: running the
script twice gives the same bytes.

The truncation entry is one model and the list of its structural boundaries ("cuts");
the test writes the model cut at each of them.

Things the filesystem cannot carry in git (FIFOs, device nodes, symlinks) are described in
an entry's "setup" and made by the test: {"fifo": PATH}, {"device": PATH} (a character
device like /dev/zero), {"symlink": PATH, "target": TARGET}, {"mkdir": PATH}.

The base model is built with the Debian python3-onnx (1.12) and checked with its checker;
the damage is done at the byte level with the small protobuf encoder below.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "tests" / "data" / "corrupt"
FORMAT = 1
DATA_NAME = "weights.data"
DEPTH_LIMIT = 96          # tree_options::max_depth
COMMANDS = ("inspect", "merge", "split")

# ---------------------------------------------------------------------------------------
# A protobuf encoder small enough to read: the catalogue needs bytes no library will write.

VARINT, FIXED64, LENGTH, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def tag(number: int, wire: int) -> bytes:
    return varint((number << 3) | wire)


def field_varint(number: int, value: int) -> bytes:
    return tag(number, VARINT) + varint(value)


def field_bytes(number: int, payload: bytes) -> bytes:
    return tag(number, LENGTH) + varint(len(payload)) + payload


def string_entry(key: str | bytes, value: str | bytes) -> bytes:
    k = key.encode() if isinstance(key, str) else key
    v = value.encode() if isinstance(value, str) else value
    return field_bytes(1, k) + field_bytes(2, v)


# Where ONNX nests messages (onnx.proto): (message, field number) -> message.
CHILDREN = {
    ("model", 7): "graph", ("model", 8): "opset", ("model", 14): "entry", ("model", 20): "training",
    ("model", 25): "function",
    ("graph", 1): "node", ("graph", 5): "tensor", ("graph", 15): "sparse", ("graph", 11): "value",
    ("graph", 12): "value", ("graph", 13): "value",
    ("node", 5): "attribute",
    ("attribute", 5): "tensor", ("attribute", 10): "tensor", ("attribute", 6): "graph", ("attribute", 11): "graph",
    ("attribute", 22): "sparse", ("attribute", 23): "sparse",
    ("tensor", 13): "entry",
    ("sparse", 1): "tensor", ("sparse", 2): "tensor",
    ("training", 1): "graph", ("training", 2): "graph",
    ("function", 7): "node", ("function", 11): "attribute", ("function", 9): "opset",
}


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        shift += 7
        if byte < 0x80:
            return value, pos


def boundaries(data: bytes, begin: int = 0, end: int | None = None, kind: str = "model", depth: int = 0):
    """Yields (offset, depth, what) for every structural boundary of a valid model: the
    start of each tag, of each length prefix, of each payload, inside multi-byte varints,
    and the last byte of each payload."""
    end = len(data) if end is None else end
    pos = begin
    while pos < end:
        yield pos, depth, f"{kind} tag"
        key, after_tag = read_varint(data, pos)
        if after_tag - pos > 1:
            yield pos + 1, depth, f"{kind} inside a tag"
        number, wire = key >> 3, key & 7
        if wire == VARINT:
            _, nxt = read_varint(data, after_tag)
            yield after_tag, depth, f"{kind}.{number} value"
            if nxt - after_tag > 1:
                yield after_tag + 1, depth, f"{kind}.{number} inside a varint"
        elif wire in (FIXED32, FIXED64):
            nxt = after_tag + (4 if wire == FIXED32 else 8)
            yield after_tag, depth, f"{kind}.{number} fixed value"
            yield nxt - 1, depth, f"{kind}.{number} inside a fixed value"
        elif wire == LENGTH:
            length, payload = read_varint(data, after_tag)
            yield after_tag, depth, f"{kind}.{number} length"
            if payload - after_tag > 1:
                yield after_tag + 1, depth, f"{kind}.{number} inside a length"
            nxt = payload + length
            if length:
                yield payload, depth, f"{kind}.{number} payload"
                yield nxt - 1, depth, f"{kind}.{number} last payload byte"
            child = CHILDREN.get((kind, number))
            if child:
                yield from boundaries(data, payload, nxt, child, depth + 1)
        else:
            raise ValueError(f"wire type {wire} in a valid model")
        pos = nxt


# ---------------------------------------------------------------------------------------
# The base model: small, valid, and touching every place onnxstream descends into.

def tensor_bytes(values: np.ndarray) -> bytes:
    return values.astype("<f4").tobytes()


WEIGHT = np.arange(8, dtype=np.float32) * 0.5   # 32 bytes in weights.data at offset 0
BIAS = np.arange(8, dtype=np.float32) + 1.0     # 32 bytes in weights.data at offset 32
LOCATION = ("location", DATA_NAME)


def data_file_bytes() -> bytes:
    return tensor_bytes(WEIGHT) + tensor_bytes(BIAS)


def external_tensor(name: str, dims: list[int], entries: list[tuple], data_type: int = TensorProto.FLOAT,
                    data_location: int | None = 1) -> bytes:
    """A TensorProto, by hand: name, dims, type, the external_data entries as given (in
    order, duplicates allowed) and data_location."""
    out = b"".join(field_varint(1, d) for d in dims)
    out += field_varint(2, data_type) + field_bytes(8, name.encode())
    for key, value in entries:
        out += field_bytes(13, string_entry(key, value))
    if data_location is not None:
        out += field_varint(14, data_location)
    return out


def embedded_tensor(name: str, values: np.ndarray) -> bytes:
    return field_varint(1, values.size) + field_varint(2, TensorProto.FLOAT) + field_bytes(8, name.encode()) + \
        field_bytes(9, tensor_bytes(values))


def base_model(weight_entries: list[tuple] | None = None, weight_dims=(8,), weight_type=TensorProto.FLOAT,
               weight_location: int | None = 1, extra_graph: bytes = b"", extra_weight: bytes = b"",
               embedded: bool = False) -> bytes:
    """Y = If(cond, X + W + then_B, X), Z = X + C + B + S, with W external (weights.data
    [0:32]), B external (weights.data[32:64]), C a Constant node's tensor, S a sparse
    initializer and then_B an initializer of the If body. weight_entries replaces W's
    external_data entries; `embedded` stores W and B as raw_data instead."""
    then_graph = helper.make_graph(
        [helper.make_node("Add", ["X", "W"], ["t0"]), helper.make_node("Add", ["t0", "then_B"], ["then_Y"])],
        "then", [], [helper.make_tensor_value_info("then_Y", TensorProto.FLOAT, [8])],
        [numpy_helper.from_array(np.full(8, 0.25, dtype=np.float32), "then_B")])
    else_graph = helper.make_graph(
        [helper.make_node("Identity", ["X"], ["else_Y"])], "else", [],
        [helper.make_tensor_value_info("else_Y", TensorProto.FLOAT, [8])])
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([1.5, 2.5], dtype=np.float32), "S"),
        numpy_helper.from_array(np.array([1, 5], dtype=np.int64), "S_indices"), [8])
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["C"], value=numpy_helper.from_array(np.ones(8, dtype=np.float32), "C_value")),
         helper.make_node("Add", ["C", "B"], ["CB"]),
         helper.make_node("Add", ["CB", "S"], ["CBS"]),
         helper.make_node("Add", ["X", "CBS"], ["Z"]),
         helper.make_node("If", ["cond"], ["Y"], then_branch=then_graph, else_branch=else_graph)],
        "catalogue",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [8]),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [8]),
         helper.make_tensor_value_info("Z", TensorProto.FLOAT, [8])],
        [numpy_helper.from_array(WEIGHT, "W"), numpy_helper.from_array(BIAS, "B")],
        sparse_initializer=[sparse])
    model = helper.make_model(graph, producer_name="make_corrupt", opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    # W and B are then replaced by hand-made initializers, so that their external_data
    # entries can be anything.
    del model.graph.initializer[:]
    body = model.SerializeToString()
    if embedded:
        w = embedded_tensor("W", WEIGHT)
        b = embedded_tensor("B", BIAS)
    else:
        if weight_entries is None:
            weight_entries = [LOCATION, ("offset", "0"), ("length", "32")]
        w = external_tensor("W", list(weight_dims), weight_entries, weight_type, weight_location)
        b = external_tensor("B", [8], [LOCATION, ("offset", "32"), ("length", "32")])
    return splice_graph(body, field_bytes(5, w + extra_weight) + field_bytes(5, b) + extra_graph)


def splice_graph(model: bytes, extra: bytes) -> bytes:
    """Appends fields to the model's graph (re-encoding its length prefix)."""
    out = bytearray()
    pos = 0
    while pos < len(model):
        key, after = read_varint(model, pos)
        number, wire = key >> 3, key & 7
        if wire == VARINT:
            _, nxt = read_varint(model, after)
            out += model[pos:nxt]
        elif wire == LENGTH:
            length, payload = read_varint(model, after)
            nxt = payload + length
            out += field_bytes(7, model[payload:nxt] + extra) if number == 7 else model[pos:nxt]
        else:
            raise ValueError("unexpected wire type at the top level")
        pos = nxt
    return bytes(out)


# ---------------------------------------------------------------------------------------
# The catalogue.

def expect(exit_code: int, message: str | list[str]) -> dict:
    return {"exit": exit_code, "message": [message] if isinstance(message, str) else message}


def same(exit_code: int, message: str | list[str]) -> dict:
    return {command: expect(exit_code, message) for command in COMMANDS}


def data_problem(message: str | list[str], inspect_message: str | list[str] | None = None) -> dict:
    """A problem with external data: inspect reports it (exit 0), merge and split refuse."""
    return {"inspect": expect(0, inspect_message if inspect_message is not None else message),
            "merge": expect(1, message), "split": expect(1, message)}


class Catalogue:
    def __init__(self, out: Path):
        self.out = out
        self.entries: list[dict] = []

    def add(self, name: str, stage: str, description: str, model: bytes | None, expected: dict, *,
            files: dict[str, bytes] | None = None, setup: list[dict] | None = None, folder: str | None = None,
            model_name: str = "model.onnx", args: dict[str, list[str]] | None = None, data: bool = True,
            ok: bool = False, cuts: list | None = None, commands: tuple[str, ...] = COMMANDS) -> None:
        """One entry. The model goes to <folder or name>/<model_name>, with weights.data
        beside it unless data=False; `files` adds others (relative to the folder). With
        `cuts` ([offset, what] pairs) the entry stands for the model cut at each offset.
        `commands` replaces the three commands every entry runs through (an exporter's
        entries run only through it)."""
        base = self.out / (folder or name)
        base.mkdir(parents=True, exist_ok=True)
        if model is not None:
            (base / model_name).parent.mkdir(parents=True, exist_ok=True)
            (base / model_name).write_bytes(model)
        if data:
            (base / Path(model_name).parent / DATA_NAME).write_bytes(data_file_bytes())
        for rel, content in (files or {}).items():
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / rel).write_bytes(content)
        assert set(expected) == set(commands), name
        entry = {
            "name": name, "stage": stage, "description": description,
            "folder": folder or name, "model": model_name, "setup": setup or [],
            "args": args or {}, "ok": ok, "expect": expected,
        }
        if cuts is not None:
            entry["cuts"] = cuts
        if commands != COMMANDS:
            entry["commands"] = list(commands)
        self.entries.append(entry)


def write_catalogue(c: Catalogue) -> None:
    good = base_model()
    c.add("valid_base", "none", "the base model every entry damages: must inspect, merge and split cleanly",
          good, {"inspect": expect(0, "weights.data"), "merge": expect(0, "inlined"), "split": expect(0, "")}, ok=True)

    # -- tokenizer: bytes that are not protobuf --------------------------------------------
    whole = base_model(embedded=True)
    top_level = set()
    pos = 0
    while pos < len(whole):
        top_level.add(pos)
        key, after = read_varint(whole, pos)
        if key & 7 == VARINT:
            _, pos = read_varint(whole, after)
        else:
            length, payload = read_varint(whole, after)
            pos = payload + length
    cuts = {}
    for offset, depth, what in boundaries(whole):
        if offset in top_level or offset in cuts:
            continue   # a cut between top-level fields is a valid (shorter) message
        cuts[offset] = f"{what} (depth {depth})"
    c.add("truncated", "tokenizer",
          f"the embedded base model ({len(whole)} bytes) cut at each of its {len(cuts)} structural boundaries "
          "inside a message: tags, varints, length prefixes, payloads (the test makes each cut)",
          whole, same(1, "not a valid protobuf message"), model_name="base.onnx", data=False,
          cuts=[[offset, cuts[offset]] for offset in sorted(cuts)])
    c.add("empty_file", "message_tree", "a file of 0 bytes", b"", same(1, "the file is empty"), data=False)

    ir = field_varint(1, 8)
    c.add("varint_11_bytes", "tokenizer", "a varint value of 11 bytes (the limit is 10)",
          ir + tag(2, VARINT) + b"\xff" * 10 + b"\x01", same(1, "does not end within 10 bytes"), data=False)
    c.add("varint_over_64_bits", "tokenizer", "a 10-byte varint whose last byte carries more than the 64th bit",
          ir + tag(2, VARINT) + b"\xff" * 9 + b"\x7f", same(1, "does not end within 10 bytes"), data=False)
    c.add("tag_11_bytes", "tokenizer", "a field tag of 11 bytes",
          ir + b"\xff" * 10 + b"\x01", same(1, "field tag does not end"), data=False)
    c.add("length_prefix_11_bytes", "tokenizer", "a length prefix of 11 bytes",
          ir + tag(7, LENGTH) + b"\x80" * 10 + b"\x01", same(1, "length prefix does not end"), data=False)
    graph_payload = field_bytes(2, b"g")
    c.add("length_prefix_past_end", "tokenizer", "the graph's length prefix claims 100 bytes more than the file has",
          ir + tag(7, LENGTH) + varint(len(graph_payload) + 100) + graph_payload, same(1, "claims"), data=False)
    c.add("length_over_2gb", "tokenizer", "raw_data claims 2^31 + 5 bytes in a file of a few hundred",
          splice_graph(good, tag(5, LENGTH) + varint(20) + field_bytes(8, b"huge") + tag(9, LENGTH) + varint((1 << 31) + 5)),
          same(1, "claims"), data=True)
    c.add("length_2_pow_64", "tokenizer", "a length prefix of 2^64 - 1",
          ir + tag(7, LENGTH) + varint((1 << 64) - 1) + b"x", same(1, "claims 18446744073709551615"), data=False)
    c.add("field_number_zero", "tokenizer", "a field numbered 0",
          ir + tag(0, VARINT) + varint(1), same(1, "field number 0"), data=False)
    c.add("group_wire_type", "tokenizer", "a field with wire type 3 (start group)",
          ir + tag(3, START_GROUP), same(1, "groups are not used"), data=False)
    c.add("reserved_wire_type", "tokenizer", "a field with wire type 7",
          ir + bytes([(3 << 3) | 7]), same(1, "reserved"), data=False)
    c.add("fixed64_past_end", "tokenizer", "a fixed64 field with 3 of its 8 bytes",
          ir + tag(9, FIXED64) + b"abc", same(1, "fixed-width field runs past the end"), data=False)

    # -- message_tree: protobuf that is not a model --------------------------------------
    c.add("no_ir_version", "message_tree", "valid protobuf without ir_version (a data file, say)",
          field_bytes(2, b"producer"), same(1, "no ir_version"), data=False)
    c.add("graph_wrong_wire_type", "message_tree", "ModelProto.graph sent as a varint",
          ir + field_varint(7, 5), same(1, "should hold a message but has wire type 0"), data=False)
    c.add("initializer_wrong_wire_type", "message_tree", "GraphProto.initializer sent as fixed32",
          splice_graph(good, tag(5, FIXED32) + b"\0\0\0\0"), same(1, "should hold a message but has wire type 5"))
    c.add("external_data_wrong_wire_type", "message_tree", "TensorProto.external_data sent as a varint",
          base_model(extra_weight=field_varint(13, 1)), same(1, "'external_data' should hold a message"))
    # Singular fields written twice (issue 9, item 6): protobuf merges the messages and
    # keeps the last scalar; onnxstream refuses rather than read one copy.
    graph_a = field_bytes(1, field_bytes(1, b"X") + field_bytes(2, b"t") + field_bytes(4, b"Relu")) + field_bytes(2, b"g")
    graph_b = field_bytes(1, field_bytes(1, b"t") + field_bytes(2, b"Y") + field_bytes(4, b"Neg"))
    c.add("duplicate_graph", "message_tree", "ModelProto.graph written twice: protobuf merges them into one graph",
          ir + field_bytes(7, graph_a) + field_bytes(7, graph_b), same(1, "field 'graph' appears more than once"),
          data=False)
    c.add("duplicate_op_type", "message_tree", "a node with two op_type fields (protobuf keeps the last)",
          ir + field_bytes(7, field_bytes(1, field_bytes(1, b"X") + field_bytes(2, b"Y") + field_bytes(4, b"Relu") +
                                          field_bytes(4, b"Identity"))),
          same(1, "field 'op_type' appears more than once"), data=False)
    c.add("duplicate_tensor_name", "message_tree", "W with two name fields, naming different values",
          base_model(extra_weight=field_bytes(8, b"B")), same(1, "field 'name' appears more than once"))
    nested = b""
    for level in range(40):
        nested = field_bytes(1, field_bytes(5, field_bytes(6, nested)))   # node -> attribute -> g
    c.add("nesting_over_limit", "message_tree",
          f"If bodies nested 40 deep (120 message levels; the limit is {DEPTH_LIMIT})",
          ir + field_bytes(7, nested), same(1, f"nested deeper than {DEPTH_LIMIT} levels"), data=False)

    # -- tensor_info: values a tensor cannot have ----------------------------------------
    def weight(entries, **kwargs):
        return base_model(entries, **kwargs)

    loc = LOCATION
    c.add("offset_negative", "tensor_info", "offset '-1'",
          weight([loc, ("offset", "-1"), ("length", "32")]), same(1, "offset '-1' is not a non-negative whole number"))
    c.add("length_negative", "tensor_info", "length '-32'",
          weight([loc, ("offset", "0"), ("length", "-32")]), same(1, "length '-32' is not a non-negative whole number"))
    c.add("offset_over_64_bits", "tensor_info", "offset 2^64 (one past the largest 64-bit number)",
          weight([loc, ("offset", str(1 << 64)), ("length", "32")]), same(1, "is not a non-negative whole number"))
    c.add("offset_not_a_number", "tensor_info", "offset '0x10'",
          weight([loc, ("offset", "0x10"), ("length", "32")]), same(1, "offset '0x10'"))
    c.add("dims_negative", "tensor_info", "W has dims [-8]",
          weight(None, weight_dims=(-8,)), same(1, "negative dimension -8"))
    c.add("dims_product_overflow", "tensor_info", "W has dims [2^32, 2^32]: 2^64 elements",
          weight(None, weight_dims=(1 << 32, 1 << 32)), same(1, "product overflows 64 bits"))
    c.add("dims_bytes_overflow", "tensor_info", "W has dims [2^62] of FLOAT: the element count fits, the bytes do not",
          weight(None, weight_dims=(1 << 62,)), same(1, "overflows 64 bits"))
    c.add("dims_zero_then_overflow", "tensor_info",
          "W has dims [0, 2^62, 2^62]: refused as [2^62, 2^62, 0] is, whatever the zero's place",
          weight(None, weight_dims=(0, 1 << 62, 1 << 62)), same(1, "product overflows 64 bits"))
    c.add("missing_location", "tensor_info", "W is marked EXTERNAL with offset and length but no location",
          weight([("offset", "0"), ("length", "32")]), same(1, "no location"))
    c.add("empty_location", "tensor_info", "W's location is the empty string",
          weight([("location", ""), ("offset", "0"), ("length", "32")]), same(1, "no location"))
    c.add("duplicate_location", "tensor_info", "W has two location entries (naming different files)",
          weight([loc, ("location", "other.data"), ("offset", "0"), ("length", "32")]),
          same(1, "key 'location' appears more than once"))
    c.add("duplicate_offset", "tensor_info", "W has two offset entries",
          weight([loc, ("offset", "0"), ("offset", "32"), ("length", "32")]), same(1, "key 'offset' appears more than once"))
    c.add("duplicate_length", "tensor_info", "W has two length entries, the same value twice",
          weight([loc, ("offset", "0"), ("length", "32"), ("length", "32")]), same(1, "key 'length' appears more than once"))
    c.add("location_nul_byte", "tensor_info", "W's location is 'weights.data\\0.txt'",
          weight([("location", b"weights.data\0.txt"), ("offset", "0"), ("length", "32")]), same(1, "NUL byte"))
    c.add("data_location_wrong_wire_type", "tensor_info", "W's data_location sent as a string",
          weight(None, weight_location=None, extra_weight=field_bytes(14, b"\x01")), same(1, "data_location has wire type 2"))
    c.add("data_type_wrong_wire_type", "tensor_info", "W's data_type sent as fixed32, after the real one",
          weight(None, extra_weight=tag(2, FIXED32) + b"\x01\0\0\0"), same(1, "data_type has wire type 5"))

    # -- data_resolver: locations that point where they must not -------------------------
    secret = b"outside the model's folder\n"
    outside = {"outside/secret.data": secret}
    c.add("location_absolute", "data_resolver", "location /etc/passwd",
          weight([("location", "/etc/passwd"), ("offset", "0"), ("length", "32")]),
          data_problem("it is an absolute path"), data=True)
    c.add("location_dev_zero", "data_resolver", "location /dev/zero",
          weight([("location", "/dev/zero"), ("offset", "0"), ("length", "32")]),
          data_problem("it is an absolute path"))
    c.add("location_dotdot", "data_resolver", "location ../outside/secret.data (the file exists there)",
          weight([("location", "../outside/secret.data"), ("offset", "0"), ("length", "32")]),
          data_problem("leaves the model's folder"), folder="location_dotdot", model_name="model/model.onnx", files=outside)
    c.add("location_dotdot_inner", "data_resolver", "location sub/../../outside/secret.data",
          weight([("location", "sub/../../outside/secret.data"), ("offset", "0"), ("length", "32")]),
          data_problem("leaves the model's folder"), model_name="model/model.onnx", files=outside)
    c.add("location_symlink_escape", "data_resolver",
          "location link.data, a symlink to ../outside/secret.data",
          weight([("location", "link.data"), ("offset", "0"), ("length", "16")]),
          data_problem(["outside the model's folder", "link.data"]), model_name="model/model.onnx", files=outside,
          setup=[{"symlink": "model/link.data", "target": "../outside/secret.data"}])
    c.add("location_symlinked_folder", "data_resolver",
          "location linkdir/secret.data, where linkdir is a symlink to ../outside",
          weight([("location", "linkdir/secret.data"), ("offset", "0"), ("length", "16")]),
          data_problem("outside the model's folder"), model_name="model/model.onnx", files=outside,
          setup=[{"symlink": "model/linkdir", "target": "../outside"}])
    c.add("location_symlink_absolute_target", "data_resolver",
          "location passwd.data, a symlink to /etc/passwd",
          weight([("location", "passwd.data"), ("offset", "0"), ("length", "16")]),
          data_problem("outside the model's folder"), setup=[{"symlink": "passwd.data", "target": "/etc/passwd"}])
    hf = "repo/snapshots/0123abcd"
    c.add("hf_cache_layout", "data_resolver",
          "the Hugging Face cache layout: snapshots/<rev>/weights.data links into <repo>/blobs/ (must work)",
          good, {"inspect": expect(0, "weights.data"), "merge": expect(0, "inlined"), "split": expect(0, "")},
          model_name=f"{hf}/model.onnx", data=False, files={"repo/blobs/5f3c0a1b": data_file_bytes()},
          setup=[{"symlink": f"{hf}/weights.data", "target": "../../blobs/5f3c0a1b"}], ok=True)
    c.add("hf_cache_escape", "data_resolver",
          "the Hugging Face layout with weights.data linking outside the repository",
          good, data_problem("outside the model's folder"), model_name=f"{hf}/model.onnx", data=False,
          files={"outside/secret.data": data_file_bytes()},
          setup=[{"symlink": f"{hf}/weights.data", "target": "../../../outside/secret.data"}])

    # -- source_file: things that are not regular files -----------------------------------
    c.add("location_directory", "source_file", "location dir.data names a folder",
          weight([("location", "dir.data"), ("offset", "0"), ("length", "32")]),
          data_problem("is a directory"), setup=[{"mkdir": "dir.data"}])
    c.add("location_fifo", "source_file", "location fifo.data names a FIFO (must not hang)",
          weight([("location", "fifo.data"), ("offset", "0"), ("length", "32")]),
          data_problem("not a regular file"), setup=[{"fifo": "fifo.data"}])
    c.add("location_device", "source_file", "location zero.data is a character device (like /dev/zero)",
          weight([("location", "zero.data"), ("offset", "0"), ("length", "32")]),
          data_problem("not a regular file"), setup=[{"device": "zero.data"}])
    c.add("data_flag_device", "source_file", "--data /dev/zero (a path the user gives is trusted, but must be a file)",
          good, data_problem("not a regular file"), data=False,
          args={command: ["--data", "/dev/zero"] for command in COMMANDS})
    c.add("model_is_fifo", "source_file", "the model itself is a FIFO (must not hang)",
          None, same(1, "not a regular file"), data=False, setup=[{"fifo": "model.onnx"}])

    # -- external_data: references the data file cannot satisfy --------------------------
    size = len(data_file_bytes())
    c.add("offset_past_end", "external_data", f"offset 99999999999 in a {size}-byte file",
          weight([loc, ("offset", "99999999999"), ("length", "32")]), data_problem("probably incomplete", "starts at byte 99999999999"))
    c.add("offset_plus_length_overflow", "external_data", "offset 16, length 2^64 - 1: the end overflows 64 bits",
          weight([loc, ("offset", "16"), ("length", str((1 << 64) - 1))]),
          data_problem("probably incomplete", ["needs bytes 16 to", "stored external 2 tensors, 32 B"]))
    c.add("length_past_end", "external_data", f"offset 0, length {size + 1} in a {size}-byte file",
          weight([loc, ("offset", "0"), ("length", str(size + 1))]), data_problem("probably incomplete", "needs bytes 0 to"))
    c.add("size_mismatch", "external_data", "W is 8 floats (32 bytes) but its length says 28",
          weight([loc, ("offset", "0"), ("length", "28")]), data_problem("need 32", "need 32"))
    c.add("data_file_missing", "data_resolver", "location nowhere.data does not exist",
          weight([("location", "nowhere.data"), ("offset", "0"), ("length", "32")]),
          data_problem(["cannot find the external data file 'nowhere.data'", "--data"]), data=False,
          files={"unrelated.txt": b"not data\n"})
    write_caffe_entries(c)


def caffe_model(nodes: list, input_dims: list[int], initializers: list | None = None, output: str = "Y") -> bytes:
    """A small float model for the Caffe exporter: input X of `input_dims`, `nodes`, output
    `output`. Built without the checker: the entries are hostile on purpose."""
    graph = helper.make_graph(nodes, "hostile", [helper.make_tensor_value_info("X", TensorProto.FLOAT, input_dims)],
                              [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)], initializers or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def write_caffe_entries(c: Catalogue) -> None:
    """export --to caffe of models whose sizes are hostile: a clear refusal, exit 1, nothing
    written, never a signal (issue 29 items 1 and 11). Under ASan in scripts/test.sh."""
    export = ("export",)
    to_caffe = ["--to", "caffe"]
    weight = numpy_helper.from_array(np.ones((4, 3, 1, 1), dtype=np.float32), "W")
    empty_weight = numpy_helper.from_array(np.ones((0, 3, 3, 3), dtype=np.float32), "W")

    def entry(name, description, model, message, args=to_caffe):
        c.add(name, "caffe_export", description, model, {"export": expect(1, message)}, data=False, commands=export,
              args={"export": list(args)})

    relu = [helper.make_node("Relu", ["X"], ["Y"], name="relu")]
    one_by_one = [helper.make_node("Conv", ["X", "W"], ["Y"], name="conv", kernel_shape=[1, 1])]
    entry("caffe_input_dims_2_62", "input dims [1,3,2^62,4]: --check indexed past its tensors (segfault)",
          caffe_model(one_by_one, [1, 3, 1 << 62, 4], [weight]), ["cannot be a caffe blob", "2^31 - 1"],
          to_caffe + ["--check"])
    entry("caffe_input_count_overflow", "input dims [2^32,2^32,2^32]: the element count wraps 64 bits to 0",
          caffe_model(relu, [1 << 32, 1 << 32, 1 << 32]), "cannot be a caffe blob")
    entry("caffe_check_past_limit", "input 1x1x16384x16384: a Caffe blob, but past what --check may allocate",
          caffe_model(relu, [1, 1, 16384, 16384]), "elements the check's reference evaluation may hold",
          to_caffe + ["--check"])
    conv = helper.make_node("Conv", ["X", "W"], ["Y"], name="conv\x1b[31m", kernel_shape=[1, 1], pads=[1 << 40] * 4)
    entry("caffe_conv_pads_2_40", "Conv pads of 2^40 were written as pad_h: 1099511627776",
          caffe_model([conv], [1, 3, 8, 8], [weight]), ["pads past 2^31 - 1", "conv\\x1b[31m"])
    conv = helper.make_node("Conv", ["X", "W"], ["Y"], name="empty_conv", kernel_shape=[3, 3])
    entry("caffe_conv_zero_channels", "a Conv with 0 output channels was written as num_output: 0",
          caffe_model([conv], [1, 3, 8, 8], [empty_weight]), ["num_output 0 is below 1", "empty_conv"])
    conv = helper.make_node("Conv", ["X", "W"], ["Y"], name="huge_stride", kernel_shape=[1, 1], strides=[1 << 33, 1])
    entry("caffe_conv_stride_2_33", "a Conv stride of 2^33 (past Caffe's uint32 stride_h)",
          caffe_model([conv], [1, 3, 8, 8], [weight]), "past 2^31 - 1")
    transpose = helper.make_node("Transpose", ["X"], ["Y"], name="bad_perm", perm=[0, 1, 2, 7])
    entry("caffe_transpose_perm_out_of_range", "Transpose perm [0,1,2,7] on a 4-D input: read past the shape",
          caffe_model([transpose], [1, 3, 8, 8]), "not a permutation")
    unsqueeze = helper.make_node("Unsqueeze", ["X", "axes"], ["Y"], name="twice")
    axes = numpy_helper.from_array(np.array([1, 1], dtype=np.int64), "axes")
    entry("caffe_unsqueeze_repeated_axes", "Unsqueeze with axes [1,1]: read past the input's shape",
          caffe_model([unsqueeze], [1, 3, 8, 8], [axes]), "repeated")
    concat = helper.make_node("Concat", ["X", "X"], ["Y"], name="far_axis", axis=9)
    entry("caffe_concat_axis_out_of_range", "Concat axis 9 on 4-D inputs: written past the shape",
          caffe_model([concat], [1, 3, 8, 8]), "axis is out of range")
    flatten = helper.make_node("Flatten", ["X"], ["F"], name="flatten")
    reshape = helper.make_node("Reshape", ["F", "shape"], ["Y"], name="overflowing_reshape")
    shape = numpy_helper.from_array(np.array([1 << 40, 1 << 40, -1], dtype=np.int64), "shape")
    entry("caffe_reshape_overflow", "Reshape to [2^40, 2^40, -1]: the known product overflows 64 bits",
          caffe_model([flatten, reshape], [1, 3, 8, 8], [shape]), "out of range")


def write_large(c: Catalogue) -> None:
    """Entries too big to commit; generated when the tests run."""
    ir = field_varint(1, 8)
    # 3 million fields of 2 bytes inside the graph (an unknown field number, kept verbatim).
    many = tag(30, VARINT) + b"\x00"
    c.add("large_many_fields", "message_tree", "3 million 2-byte fields in the graph: time and memory stay linear",
          ir + field_bytes(7, many * 3_000_000),
          {"inspect": expect(0, "0 nodes"), "merge": expect(0, ""), "split": expect(0, "")}, data=False, ok=True)
    # 1 million empty nodes: a million messages.
    c.add("large_many_nodes", "message_tree", "a million empty NodeProtos",
          ir + field_bytes(7, field_bytes(1, b"") * 1_000_000),
          {"inspect": expect(0, "1000000 nodes"), "merge": expect(0, ""), "split": expect(0, "")}, data=False, ok=True)
    # Nesting 200,000 levels deep: a naive recursive parser would overflow its stack.
    nested = b""
    for _ in range(200_000 // 3):
        nested = field_bytes(1, field_bytes(5, field_bytes(6, nested)))
    c.add("large_deep_nesting", "message_tree", "If bodies nested 200,000 message levels deep",
          ir + field_bytes(7, nested), same(1, f"nested deeper than {DEPTH_LIMIT} levels"), data=False)
    # 50,000 external tensors, each naming a different missing file.
    tensors = b"".join(
        field_bytes(5, external_tensor(f"t{i}", [1], [("location", f"missing_{i}.data"), ("offset", "0"), ("length", "4")]))
        for i in range(50_000))
    c.add("large_many_missing_files", "external_data",
          "50,000 external tensors, each in its own missing file: reported in linear time",
          ir + field_bytes(7, tensors), data_problem("cannot find the external data file"), data=False)
    # 50,000 external tensors in one file, every one past its end.
    tensors = b"".join(
        field_bytes(5, external_tensor(f"t{i}", [1], [LOCATION, ("offset", str(1000 + i)), ("length", "4")]))
        for i in range(50_000))
    c.add("large_many_truncated", "external_data", "50,000 external tensors past the end of one data file",
          ir + field_bytes(7, tensors), data_problem("probably incomplete", "starts at byte"))


def write(out: Path, large: bool) -> Catalogue:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    c = Catalogue(out)
    (write_large if large else write_catalogue)(c)
    manifest = {"format": FORMAT, "generator": "scripts/make_corrupt.py", "data_name": DATA_NAME,
                "commands": list(COMMANDS), "entries": c.entries}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return c


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--large", action="store_true", help="write the big entries (for a scratch folder)")
    args = parser.parse_args()
    c = write(args.out.resolve(), args.large)
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"make_corrupt: {len(c.entries)} entries, {size} bytes in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

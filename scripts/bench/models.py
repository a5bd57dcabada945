#!/usr/bin/python3
"""Writes the models scripts/bench.sh measures. Needs Debian's python3-onnx and numpy
(run it as /usr/bin/python3: the first python3 on PATH may lack them).

    models.py external DIR BYTES [--tensor-size N]   DIR/model.onnx + DIR/model.onnx.data
    models.py embedded FILE BYTES [--tensor-size N]  one self-contained .onnx (< 2 GiB)
    models.py graph FILE NODES                       a metadata-heavy graph, tiny weights
    models.py tiny FILE COUNT                        COUNT initializers of 16 bytes each
    models.py tiny-external DIR COUNT                the same, their bytes in DIR/model.onnx.data
    models.py int64 FILE BYTES                       one INT64 initializer: BYTES of packed int64_data
    models.py dims FILE BYTES                        initializers holding BYTES of dims (all 1)
    models.py unknown FILE BYTES                     a tiny model with an unknown ModelProto field
                                                     of BYTES (sparse zeros: no disk used)
    models.py sparse-external DIR BYTES [--tensor-size N]  the external model's layout with its
                                                     data file a hole (a 27 GB 7B-class model on no disk)
    models.py compact-graph FILE NODES               a chain of NODES nodes with short names
                                                     (about 25 bytes each: the compact 1M-node case)
    models.py gemm-external DIR BYTES                one Gemm whose float32 weight (BYTES) is external
    models.py matmul-external DIR BYTES              one MatMul whose float32 weight [1024, N] (BYTES) is
                                                     external: quantize's blocks along axis 0

The weight models are a chain y = x + w0 + w1 + ... over float32 vectors, one initializer
per tensor-size bytes (default 16 MiB), filled with seeded random bytes. The external one
is built with onnx's own helpers (external_data entries, offsets aligned to 4096). The embedded one is too large to build in memory comfortably, so its
protobuf is streamed: the model and graph skeletons are serialized by onnx, then the
initializers (each a TensorProto serialized by onnx, followed by its raw_data field) are
appended as further graph fields, which protobuf parsers accept in any order. The
external one is checked with onnx.checker; the embedded one too when it is small.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

SEED = 20240611
ALIGN = 4096


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def length_field(number: int, payload_length: int) -> bytes:
    return varint((number << 3) | 2) + varint(payload_length)


def tensor_sizes(total: int, tensor_size: int) -> list[int]:
    """Tensor byte counts (multiples of 4) adding up to about `total`."""
    count = max(1, total // tensor_size)
    sizes = [tensor_size] * count
    rest = (total - count * tensor_size) // 4 * 4
    if rest >= 4:
        sizes.append(rest)
    return sizes


def chain_graph(sizes: list[int], name: str) -> onnx.GraphProto:
    """y = x + sum(w0) + sum(w1) + ...: every weight a float32 vector, reduced to one value
    (ReduceSum, keepdims) and added to the running [1] vector, so the model runs."""
    nodes = []
    previous = "x"
    for i, size in enumerate(sizes):
        nodes.append(helper.make_node("ReduceSum", [f"w{i}"], [f"s{i}"], name=f"reduce_{i}", keepdims=1))
        nodes.append(helper.make_node("Add", [previous, f"s{i}"], [f"y{i}"], name=f"add_{i}"))
        previous = f"y{i}"
    nodes.append(helper.make_node("Identity", [previous], ["y"], name="out"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    return helper.make_graph(nodes, name, [x], [y])


def model_of(graph: onnx.GraphProto) -> onnx.ModelProto:
    model = helper.make_model(graph, producer_name="onnxstream-bench", opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    return model


def random_chunks(rng: np.random.Generator, length: int, chunk: int = 16 << 20):
    done = 0
    while done < length:
        piece = min(chunk, length - done)
        yield rng.bytes(piece)
        done += piece


def write_external(folder: Path, total: int, tensor_size: int, sparse: bool = False) -> None:
    """With `sparse`, the data file is one hole of the same length: commands that only read
    the metadata and check the data's extent (inspect, verify) see a model of `total` bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    sizes = tensor_sizes(total, tensor_size)
    graph = chain_graph(sizes, "external_chain")
    rng = np.random.default_rng(SEED)
    data_name = "model.onnx.data"
    offset = 0
    with open(folder / data_name, "wb") as data:
        for i, size in enumerate(sizes):
            pad = (-offset) % ALIGN
            if pad:
                data.write(b"\0" * pad)
                offset += pad
            if sparse:
                data.seek(size, os.SEEK_CUR)
            else:
                for piece in random_chunks(rng, size):
                    data.write(piece)
            tensor = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[size // 4])
            tensor.data_location = TensorProto.EXTERNAL
            for key, value in (("location", data_name), ("offset", str(offset)), ("length", str(size))):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
            graph.initializer.append(tensor)
            offset += size
        data.truncate(offset)
    model = model_of(graph)
    (folder / "model.onnx").write_bytes(model.SerializeToString())
    onnx.checker.check_model(str(folder / "model.onnx"))  # by path: it finds the data file


def write_embedded(path: Path, total: int, tensor_size: int) -> None:
    sizes = tensor_sizes(total, tensor_size)
    graph = chain_graph(sizes, "embedded_chain")
    heads = []
    for i, size in enumerate(sizes):
        head = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[size // 4]).SerializeToString()
        heads.append(head + length_field(9, size))  # TensorProto.raw_data = 9
    graph_bytes = graph.SerializeToString()
    initializers = [length_field(5, len(h) + s) for h, s in zip(heads, sizes)]  # GraphProto.initializer = 5
    graph_length = len(graph_bytes) + sum(len(i) + len(h) + s for i, h, s in zip(initializers, heads, sizes))
    skeleton = model_of(onnx.GraphProto())
    skeleton.ClearField("graph")
    head = skeleton.SerializeToString() + length_field(7, graph_length)  # ModelProto.graph = 7
    if len(head) + graph_length >= 2**31 - 1:
        sys.exit(f"models.py: {path} would pass protobuf's 2 GiB limit")
    rng = np.random.default_rng(SEED)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        out.write(head)
        out.write(graph_bytes)
        for field, tensor_head, size in zip(initializers, heads, sizes):
            out.write(field)
            out.write(tensor_head)
            for piece in random_chunks(rng, size):
                out.write(piece)
    if total <= 64 << 20:  # small enough to load and check whole
        onnx.checker.check_model(onnx.load(str(path)))


def write_graph(path: Path, nodes: int) -> None:
    """A chain of `nodes` small nodes (Relu/Neg/Identity with attributes-free bodies and
    long-ish names), like the metadata of a large exported network."""
    ops = ("Relu", "Neg", "Identity", "Abs")
    graph = onnx.GraphProto(name="metadata_chain")
    previous = "x"
    for i in range(nodes):
        output = f"/block_{i // 16}/layer_{i % 16}/{ops[i % 4].lower()}_output_0"
        node = graph.node.add()
        node.op_type = ops[i % 4]
        node.name = f"/block_{i // 16}/layer_{i % 16}/{ops[i % 4]}"
        node.input.append(previous)
        node.output.append(output)
        previous = output
    graph.node.add(op_type="Identity", name="out", input=[previous], output=["y"])
    graph.input.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64]))
    graph.output.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64]))
    model = model_of(graph)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model.SerializeToString())


def write_graph_fields(path: Path, graph: onnx.GraphProto, fields: list[bytes], trailer: bytes = b"") -> None:
    """A model whose graph is `graph` followed by the already encoded GraphProto `fields`
    (protobuf parsers accept fields in any order); `trailer` is appended to the ModelProto
    after the graph field."""
    graph_bytes = graph.SerializeToString()
    graph_length = len(graph_bytes) + sum(len(f) for f in fields)
    skeleton = model_of(onnx.GraphProto())
    skeleton.ClearField("graph")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        out.write(skeleton.SerializeToString() + length_field(7, graph_length))  # ModelProto.graph = 7
        out.write(graph_bytes)
        for f in fields:
            out.write(f)
        out.write(trailer)


def identity_graph(name: str) -> onnx.GraphProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    return helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="out")], name, [x], [y])


def initializer_field(tensor: bytes) -> bytes:
    return length_field(5, len(tensor)) + tensor  # GraphProto.initializer = 5


def write_tiny(path: Path, count: int) -> None:
    """`count` float32 initializers of 4 values each (16 bytes of raw_data), named like the
    layers of a big exported network: about 73 bytes of metadata per tensor."""
    rng = np.random.default_rng(SEED)
    raw = rng.bytes(16 * count)
    fields = []
    for i in range(count):
        tensor = TensorProto(name=f"/model/layers.{i // 64}/block.{i % 64}/attention.query.weight", data_type=TensorProto.FLOAT,
                             dims=[4], raw_data=raw[16 * i:16 * i + 16])
        fields.append(initializer_field(tensor.SerializeToString()))
    write_graph_fields(path, identity_graph("tiny_initializers"), fields)


def write_tiny_external(folder: Path, count: int) -> None:
    """write_tiny's tensors with their bytes in DIR/model.onnx.data (16 bytes each, packed,
    no alignment), as a split of the embedded model writes them: the metadata of a million
    external tensors (each with its location, offset and length entries)."""
    rng = np.random.default_rng(SEED)
    raw = rng.bytes(16 * count)
    folder.mkdir(parents=True, exist_ok=True)
    data_name = "model.onnx.data"
    (folder / data_name).write_bytes(raw)
    fields = []
    for i in range(count):
        tensor = TensorProto(name=f"/model/layers.{i // 64}/block.{i % 64}/attention.query.weight", data_type=TensorProto.FLOAT,
                             dims=[4])
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", data_name), ("offset", str(16 * i)), ("length", "16")):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        fields.append(initializer_field(tensor.SerializeToString()))
    write_graph_fields(folder / "model.onnx", identity_graph("tiny_external_initializers"), fields)


def write_compact_graph(path: Path, nodes: int) -> None:
    """A chain of `nodes` Relu nodes named by their index in hex, without node names: about
    25 bytes of .onnx per node, the per-node cost with as little text as a graph can have.
    The nodes are encoded here (NodeProto: input = 1, output = 2, op_type = 4), not through
    onnx's objects, so a million take seconds to write."""
    skeleton = onnx.GraphProto(name="compact_chain")
    skeleton.input.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64]))
    skeleton.output.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64]))
    fields = []
    previous = b"x"
    for i in range(nodes):
        output = b"y" if i == nodes - 1 else f"{i:x}".encode()
        node = length_field(1, len(previous)) + previous + length_field(2, len(output)) + output + b"\x22\x04Relu"
        fields.append(length_field(1, len(node)) + node)  # GraphProto.node = 1
        previous = output
    write_graph_fields(path, skeleton, fields)


def external_weight(folder: Path, rows: int, columns: int) -> TensorProto:
    """W float32 [rows, columns] of seeded normal values in DIR/model.onnx.data."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    with open(folder / "model.onnx.data", "wb") as data:
        for start in range(0, rows, 4096):
            data.write(rng.standard_normal((min(4096, rows - start), columns), dtype=np.float32).tobytes())
    weight = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[rows, columns])
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "model.onnx.data"), ("offset", "0"), ("length", str(4 * rows * columns))):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    return weight


def write_gemm_external(folder: Path, total: int) -> None:
    """y = Gemm(x, W, b) with W float32 [N, 1024] (about `total` bytes, seeded normal values)
    in DIR/model.onnx.data: a model Caffe's InnerProduct expresses, its weight streamed."""
    k = 1024
    n = max(1, total // (4 * k))
    weight = external_weight(folder, n, k)
    bias = helper.make_tensor("b", TensorProto.FLOAT, [n], np.zeros(n, dtype=np.float32).tolist())
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "W", "b"], ["y"], name="fc", transB=1)], "gemm_external",
                              [x], [y], [weight, bias])
    (folder / "model.onnx").write_bytes(model_of(graph).SerializeToString())


def write_matmul_external(folder: Path, total: int) -> None:
    """y = MatMul(x, W) with W float32 [1024, N] (about `total` bytes) in DIR/model.onnx.data:
    quantize's blocks run down its columns (axis 0), where gemm-external's run along rows."""
    k = 1024
    n = max(1, total // (4 * k))
    weight = external_weight(folder, k, n)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"], name="fc")], "matmul_external", [x], [y],
                              [weight])
    (folder / "model.onnx").write_bytes(model_of(graph).SerializeToString())


def write_int64(path: Path, payload_bytes: int) -> None:
    """One INT64 initializer whose values sit in a packed int64_data field of about
    `payload_bytes`: every value in [2^28, 2^35), so each takes 5 varint bytes and 8 bytes
    once split converts it to raw_data."""
    count = max(1, payload_bytes // 5)
    rng = np.random.default_rng(SEED)
    values = rng.integers(1 << 28, 1 << 35, size=count, dtype=np.int64)
    encoded = np.empty((count, 5), dtype=np.uint8)
    for k in range(4):
        encoded[:, k] = ((values >> (7 * k)) & 0x7F) | 0x80
    encoded[:, 4] = values >> 28
    head = TensorProto(name="packed_int64", data_type=TensorProto.INT64, dims=[count]).SerializeToString()
    data = encoded.tobytes()
    tensor = head + length_field(7, len(data)) + data  # TensorProto.int64_data = 7
    write_graph_fields(path, identity_graph("packed_int64"), [initializer_field(tensor)])


def write_dims(path: Path, dims_bytes: int, tensors: int = 100) -> None:
    """`tensors` float32 initializers of one value each whose dims (all 1, one byte each,
    packed) add up to `dims_bytes`."""
    per_tensor = max(1, dims_bytes // tensors)
    dims = b"\x01" * per_tensor
    fields = []
    for i in range(tensors):
        head = TensorProto(name=f"many_dims_{i}", data_type=TensorProto.FLOAT,
                           raw_data=np.float32(i).tobytes()).SerializeToString()
        fields.append(initializer_field(head + length_field(1, len(dims)) + dims))  # TensorProto.dims = 1
    write_graph_fields(path, identity_graph("many_dims"), fields)


def write_unknown(path: Path, payload_bytes: int) -> None:
    """The identity model with a ModelProto field no ONNX version defines (number 1000),
    holding `payload_bytes` of zeros written as a hole: the file takes no disk space."""
    write_graph_fields(path, identity_graph("unknown_field"), [])
    with open(path, "r+b") as out:
        out.seek(0, os.SEEK_END)
        out.write(length_field(1000, payload_bytes))
        out.truncate(out.tell() + payload_bytes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=("external", "embedded", "graph", "tiny", "tiny-external", "int64", "dims",
                                                      "unknown", "sparse-external", "compact-graph", "gemm-external",
                                                      "matmul-external"))
    parser.add_argument("path", type=Path)
    parser.add_argument("amount", type=int, help="bytes of weights, nodes for 'graph', tensors for 'tiny'")
    parser.add_argument("--tensor-size", type=int, default=16 << 20)
    args = parser.parse_args()
    if args.kind == "external":
        write_external(args.path, args.amount, args.tensor_size)
    elif args.kind == "embedded":
        write_embedded(args.path, args.amount, args.tensor_size)
    elif args.kind == "sparse-external":
        write_external(args.path, args.amount, args.tensor_size, sparse=True)
    elif args.kind == "graph":
        write_graph(args.path, args.amount)
    elif args.kind == "compact-graph":
        write_compact_graph(args.path, args.amount)
    elif args.kind == "gemm-external":
        write_gemm_external(args.path, args.amount)
    elif args.kind == "matmul-external":
        write_matmul_external(args.path, args.amount)
    else:
        {"tiny": write_tiny, "tiny-external": write_tiny_external, "int64": write_int64, "dims": write_dims, "unknown": write_unknown}[args.kind](args.path, args.amount)


if __name__ == "__main__":
    main()

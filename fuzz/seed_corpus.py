#!/usr/bin/python3
"""Writes the seed inputs of the fuzz targets into fuzz/corpus/<target>/seed-*.

    /usr/bin/python3 fuzz/seed_corpus.py [FIXTURES]      # FIXTURES: build/fixtures

Seeds are small on purpose (the corpus is committed): the small models of the test
fixtures (scripts/make_fixtures.py), the catalogue's base model (scripts/make_corrupt.py)
and, for the targets whose input is not a whole model, inputs in their own format:

    external_data  one byte choosing the layout (0 plain folder, 1 Hugging Face cache,
                   2 --data-dir, 3 --data), then one TensorProto
    model_ops      models whose external data live in model.onnx.data / weights.data,
                   the two 4 KiB files the target puts beside them
    graph          the fixtures that hold a graph worth rewriting: the passes' cases, the
                   Caffe exporter's, subgraphs, constants, small real architectures

Files other than seed-* (crash-*, regression-*, what a fuzzing session added) are left
alone. Running it twice gives the same files.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CORPUS = REPO_ROOT / "fuzz" / "corpus"
MAX_SEED = 16 << 10

spec = importlib.util.spec_from_file_location("make_corrupt", REPO_ROOT / "scripts" / "make_corrupt.py")
mc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mc)


def external_tensor(name: str, entries: list[tuple], dims=(8,), data_type: int = 1, location: int | None = 1) -> bytes:
    return mc.external_tensor(name, list(dims), entries, data_type, location)


def external_data_seeds() -> dict[str, bytes]:
    seeds = {}
    locations = ["weights.data", "model.onnx.data", "sub/w.bin", "empty.data", "dir.data", "fifo.data",
                 "inside.data", "escape.data", "linkdir/secret.data", "../outside/secret.data", "/etc/passwd",
                 "sub/../weights.data", "nowhere.data", "weights.data\0x", "./weights.data", "given.data"]
    for layout in range(4):
        for i, location in enumerate(locations):
            entries = [("location", location.encode()), ("offset", "0"), ("length", "32")]
            seeds[f"layout{layout}-{i:02d}"] = bytes([layout]) + external_tensor("w", entries)
    variants = {
        "offset_end": [("location", "weights.data"), ("offset", "4064"), ("length", "32")],
        "offset_past": [("location", "weights.data"), ("offset", "4097")],
        "no_length": [("location", "weights.data"), ("offset", "4000")],
        "overflow": [("location", "weights.data"), ("offset", "16"), ("length", str((1 << 64) - 1))],
        "negative": [("location", "weights.data"), ("offset", "-1")],
        "duplicate": [("location", "weights.data"), ("location", "model.onnx.data")],
        "checksum": [("location", "weights.data"), ("length", "32"), ("checksum", "0" * 40)],
        "no_location": [("offset", "0"), ("length", "32")],
    }
    for name, entries in variants.items():
        seeds[f"entries-{name}"] = bytes([0]) + external_tensor("w", entries)
    seeds["no_data_location"] = bytes([0]) + external_tensor("w", [("location", "weights.data")], location=None)
    seeds["text-location"] = bytes([1]) + b"model.onnx.data"
    seeds["text-number"] = bytes([0]) + b"18446744073709551615"
    return seeds


def model_ops_seeds() -> dict[str, bytes]:
    seeds = {"catalogue-base": mc.base_model(), "catalogue-embedded": mc.base_model(embedded=True)}
    for name, entries in {
        "model_data": [("location", "model.onnx.data"), ("offset", "0"), ("length", "32")],
        "weights_tail": [("location", "weights.data"), ("offset", "4064"), ("length", "32")],
        "no_length": [("location", "model.onnx.data"), ("offset", "4064")],
        "checksum": [("location", "weights.data"), ("offset", "0"), ("length", "32"),
                     ("checksum", hashlib.sha1(bytes((i * 13 + 1) & 0xFF for i in range(32))).hexdigest())],
    }.items():
        seeds[f"external-{name}"] = mc.base_model(entries)
    return seeds


def fixture_models(fixtures: Path) -> dict[str, bytes]:
    seeds = {}
    if not fixtures.is_dir():
        print(f"seed_corpus: no fixtures in {fixtures} (run scripts/make_fixtures.py); skipping them", file=sys.stderr)
        return seeds
    for path in sorted(fixtures.rglob("*.onnx")):
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_SEED:
            continue
        rel = path.relative_to(fixtures)
        seeds["fixture-" + "-".join(rel.with_suffix("").parts)] = path.read_bytes()
    return seeds


def hostile_graphs() -> dict[str, bytes]:
    """Graphs no exporter writes, which a hostile model may: cycles (through Identity,
    arithmetic, Shape/Reshape, constants, Conv/BatchNormalization, Transposes), a node
    reading its own output, names written twice, an If whose branch reads its own output."""
    import onnx
    from onnx import TensorProto as T, helper as h

    def model(nodes, outputs=("y",), initializers=()) -> bytes:
        values = [h.make_tensor_value_info(o, T.FLOAT, [2, 4]) for o in outputs]
        graph = h.make_graph(nodes, "hostile", [h.make_tensor_value_info("X", T.FLOAT, [2, 4])], values,
                             initializer=list(initializers))
        m = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], producer_name="seed_corpus")
        m.ir_version = 8
        return m.SerializeToString()

    k = h.make_tensor("k", T.FLOAT, [1], [2.0])
    w = h.make_tensor("w", T.FLOAT, [4, 4, 1, 1], [1.0] * 16)
    bn = [h.make_tensor(n, T.FLOAT, [4], [1.0] * 4) for n in ("s", "bb", "m", "v")]
    branch = h.make_graph([h.make_node("Identity", ["y"], ["t"])], "branch", [],
                          [h.make_tensor_value_info("t", T.FLOAT, [2, 4])])
    node = h.make_node
    return {
        "hostile-identity_cycle": model([node("Identity", ["x"], ["y"]), node("Identity", ["y"], ["x"])]),
        "hostile-identity_output_cycle": model([node("Identity", ["y"], ["z"]), node("Identity", ["z"], ["y"])], ("y", "z")),
        "hostile-self_loop": model([node("Relu", ["y"], ["y"])]),
        "hostile-add_cycle": model([node("Add", ["X", "b"], ["a"]), node("Relu", ["a"], ["b"]), node("Neg", ["a"], ["y"])]),
        "hostile-shape_cycle": model([node("Shape", ["r"], ["s"]), node("Reshape", ["X", "s"], ["r"]),
                                      node("Identity", ["r"], ["y"])]),
        "hostile-const_cycle": model([node("Add", ["k", "d"], ["c"]), node("Mul", ["c", "k"], ["d"]),
                                      node("Add", ["X", "c"], ["y"])], initializers=[k]),
        "hostile-transpose_cycle": model([node("Transpose", ["b"], ["a"], perm=[1, 0]),
                                          node("Transpose", ["a"], ["b"], perm=[1, 0]), node("Identity", ["a"], ["y"])]),
        "hostile-conv_bn_cycle": model([node("Conv", ["o", "w"], ["c"]), node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["o"]),
                                        node("Identity", ["o"], ["y"])], initializers=[w, *bn]),
        "hostile-written_twice": model([node("Relu", ["X"], ["r"]), node("Relu", ["X"], ["r"]), node("Neg", ["r"], ["y"])]),
        "hostile-cast_of_itself": model([node("Cast", ["X"], ["c"], to=1), node("Cast", ["c"], ["c"], to=1),
                                         node("Relu", ["c"], ["y"])]),
        "hostile-if_reads_own_output": model([node("If", ["cond"], ["y"], then_branch=branch, else_branch=branch)],
                                             initializers=[h.make_tensor("cond", T.BOOL, [], [True])]),
    }


def graph_seeds(models: dict[str, bytes]) -> dict[str, bytes]:
    graphs = ("fixture-passes-", "fixture-caffe-", "fixture-if_subgraph", "fixture-constant_nodes",
              "fixture-resnet18", "fixture-everywhere_embedded")
    return {**{name: data for name, data in models.items() if name.startswith(graphs)}, **hostile_graphs()}


def write(target: str, seeds: dict[str, bytes]) -> int:
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("seed-*"):
        old.unlink()
    for name, data in seeds.items():
        (folder / f"seed-{name}").write_bytes(data)
    return len(seeds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fixtures", nargs="?", type=Path, default=REPO_ROOT / "build" / "fixtures")
    args = parser.parse_args()
    models = fixture_models(args.fixtures)
    counts = {
        "tokenizer": write("tokenizer", dict(list(models.items())[:12])),
        "rewrite": write("rewrite", {**models, **model_ops_seeds()}),
        "model_ops": write("model_ops", {**model_ops_seeds(), **dict(list(models.items())[:12])}),
        "external_data": write("external_data", external_data_seeds()),
        "graph": write("graph", graph_seeds(models)),
    }
    print("seed_corpus: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

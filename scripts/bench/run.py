#!/usr/bin/python3
"""The benchmark driver behind scripts/bench.sh (run it through that script).

For each case it generates the input (scripts/bench/models.py, or the LLM fixture script),
warms the page cache, then runs every tool on the same work, interleaved (onnxstream, cp,
cp + sync, python onnx, onnxstream, cp, ...), several times, with `sync` (untimed) before
each run so that no run pays for another's dirty pages. Figures per tool: the median wall
time, the median CPU time (user + system) and the largest peak RSS of the runs (CPU and
RSS from /usr/bin/time, as -v prints them). Outputs are deleted after each run.

Writes OUT/results.json and OUT/dashboard.html (scripts/bench/dashboard.py), appends the
run to OUT/history.jsonl (the dashboard's per-row history) and, with --history, copies
results.json into HISTORY as <date>-<commit>.json.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PYTHON = "/usr/bin/python3"  # Debian's, with python3-onnx and numpy
MiB = 1 << 20
GiB = 1 << 30

# ------------------------------------------------------------------ measuring


def measure(command: list[str], cwd: Path, stdout=subprocess.DEVNULL) -> dict:
    """Runs `command` under /usr/bin/time; returns wall seconds (measured here, finer than
    time's), CPU seconds (user + system, and user alone) and peak RSS bytes as time reports them. (rusage
    taken here directly would be wrong: a child started with vfork inherits this Python
    process's high-water mark across exec.)"""
    with tempfile.NamedTemporaryFile(mode="r") as report, tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", report.name, *command], cwd=cwd,
                                 stdout=stdout, stderr=errors)
        wall = time.perf_counter() - start
        if process.returncode != 0:
            errors.seek(0)
            message = errors.read().decode(errors="replace")[-4000:]
            raise SystemExit(f"bench: {' '.join(command)} failed ({process.returncode}):\n{message}")
        user, system, rss_kib = report.read().split()[-3:]
    return {"wall_s": wall, "cpu_s": float(user) + float(system), "user_s": float(user),
            "peak_rss_bytes": int(rss_kib) * 1024}


def sync() -> None:
    subprocess.run(["sync"], check=True)


def warm(paths: list[Path]) -> None:
    """Reads the inputs once so that every tool starts from a warm page cache."""
    for path in paths:
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for f in files:
            with open(f, "rb") as handle:
                while handle.read(16 * MiB):
                    pass


def remove(paths: list[Path]) -> None:
    for p in paths:
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


# ------------------------------------------------------------------ the machine and the commit


def git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
    except OSError:
        pass
    return {
        "hostname": platform.node(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_bytes": memory,
        "kernel": platform.release(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def disk(path: Path) -> str:
    """The block device under `path`: name, model, size and whether it rotates (lsblk)."""
    try:
        source = subprocess.run(["findmnt", "-no", "SOURCE", "-T", str(path)], capture_output=True, text=True,
                                check=True).stdout.strip()
        found = subprocess.run(["lsblk", "-dno", "NAME,MODEL,SIZE,ROTA,TRAN", source], capture_output=True, text=True,
                               check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    if not found:
        return "unknown"
    rotational = {"0": "non-rotational", "1": "rotational"}
    return " ".join(rotational.get(f, f) for f in found)


def file_system(path: Path) -> str:
    """The type of the file system holding `path` (findmnt names ext4 where stat -f says ext2/ext3)."""
    for command in (["findmnt", "-no", "FSTYPE", "-T", str(path)], ["stat", "-f", "-c", "%T", str(path)]):
        try:
            found = subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()
            if found:
                return found
        except (OSError, subprocess.CalledProcessError):
            continue
    return "unknown"


# ------------------------------------------------------------------ cases

PY_MERGE = "import onnx, sys; onnx.save(onnx.load(sys.argv[1]), sys.argv[2])"
PY_EXTERNALIZE = (
    "import onnx, os, sys; m = onnx.load(sys.argv[1]); "
    "onnx.save_model(m, sys.argv[2], save_as_external_data=True, all_tensors_to_one_file=True, "
    "location=os.path.basename(sys.argv[2]) + '.data', size_threshold=1024)"
)
# The python way to halve a model (what onnxconverter-common does at its core; Debian does
# not ship it): load everything, astype every float32 initializer, save with external data.
PY_CONVERT = (
    "import onnx, os, sys, numpy as np; from onnx import numpy_helper as h; m = onnx.load(sys.argv[1]); "
    "ts = [t for t in m.graph.initializer if t.data_type == 1]; "
    "[t.CopyFrom(h.from_array(h.to_array(t).astype(np.float16), t.name)) for t in ts]; "
    "onnx.save_model(m, sys.argv[2], save_as_external_data=True, all_tensors_to_one_file=True, "
    "location=os.path.basename(sys.argv[2]) + '.data', size_threshold=1024)"
)
PY_INSPECT = (
    "import onnx, sys; m = onnx.load(sys.argv[1], load_external_data=False); "
    "print(len(m.graph.node), len(m.graph.initializer))"
)

# onnx.utils.extract_model from the model's graph inputs to argv[3]: it loads the whole
# model (and refuses one over 2 GB).
PY_EXTRACT = (
    "import onnx, onnx.utils, sys; m = onnx.load(sys.argv[1], load_external_data=False); "
    "inits = {t.name for t in m.graph.initializer}; "
    "onnx.utils.extract_model(sys.argv[1], sys.argv[2], [i.name for i in m.graph.input if i.name not in inits], "
    "[sys.argv[3]], check_model=False)"
)


def middle_matmul_output(model: Path) -> str | None:
    """The output of the model's middle MatMul (or Gemm): where extract cuts the network in half."""
    import onnx
    graph = onnx.load(str(model), load_external_data=False).graph
    matmuls = [n for n in graph.node if n.op_type in ("MatMul", "Gemm")]
    return matmuls[len(matmuls) // 2].output[0] if matmuls else None


class case:
    """One piece of work and the commands that do it; `outputs` are removed after each run."""

    def __init__(self, name: str, description: str, inputs: list[Path], input_bytes: int, runs: int | None = None,
                 warm: bool = True, budget_bytes: int | None = None, note: str = ""):
        self.name = name
        self.description = description
        self.inputs = inputs
        self.input_bytes = input_bytes
        self.runs = runs  # fewer runs than the default for the slow cases
        self.warm = warm  # False for sparse inputs: reading 27 GB of holes is not the work measured
        self.budget_bytes = budget_bytes  # the memory issue's peak RSS budget, where it applies
        self.note = note  # what the table should say about a peer not run
        self.tools: dict[str, tuple[list[str], list[Path]]] = {}

    def tool(self, name: str, command: list[str], outputs: list[Path]) -> "case":
        self.tools[name] = (command, outputs)
        return self


def generate(kind: str, path: Path, amount: int, *extra: str) -> None:
    marker = path.parent / f".{path.name}.{kind}.{amount}{''.join('.' + e for e in extra)}.done"
    if marker.exists():
        return
    remove([path])
    print(f"  generating {kind} {path.name} ({amount:,})", flush=True)
    subprocess.run([PYTHON, str(HERE / "models.py"), kind, str(path), str(amount), *extra], check=True)
    marker.touch()


def count_label(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 and n % 1_000_000 == 0 else f"{n // 1000}k" if n >= 1000 else str(n)


def memory_budget(onnx_bytes: int) -> int:
    """The memory issue's budget for metadata-heavy files: peak RSS <= 2x the .onnx + 32 MiB."""
    return 2 * onnx_bytes + 32 * MiB


def build_cases(args, work: Path, binary: str) -> list[case]:
    quick = not args.large
    tiny = args.tiny  # the test suite's smoke run: every case, tiny inputs
    out = work / "out"
    out.mkdir(parents=True, exist_ok=True)
    cases: list[case] = []

    def merge_case(label: str, data_bytes: int, with_python: bool) -> case:
        folder = work / f"external-{label}"
        generate("external", folder, data_bytes)
        model, data = folder / "model.onnx", folder / "model.onnx.data"
        merged, copied = out / "merged.onnx", out / "copy.data"
        c = case(f"merge {label} external", f"merge of a model with {label} of external data into one .onnx",
                 [model, data], data.stat().st_size)
        c.tool("onnxstream", [binary, "merge", str(model), "-o", str(merged), "--quiet"], [merged])
        c.tool("cp", ["cp", str(data), str(copied)], [copied])
        c.tool("cp+sync", ["sh", "-c", f'cp "$0" "$1" && sync "$1"', str(data), str(copied)], [copied])
        if with_python:
            c.tool("python-onnx", [PYTHON, "-c", PY_MERGE, str(model), str(merged)], [merged])
        return c

    merge_sizes = [("16MiB", 16 * MiB), ("128MiB", 128 * MiB)] if quick else [("256MiB", 256 * MiB), ("1.875GiB", 1920 * MiB)]
    main_size = ("64MiB", 64 * MiB) if quick else ("1GiB", GiB)
    if tiny:
        merge_sizes, main_size = [("1MiB", MiB), ("4MiB", 4 * MiB)], ("2MiB", 2 * MiB)
    cases.append(merge_case(*main_size, with_python=True))
    # optimize of the same model, every pass: only what is folded is read, the weights are
    # streamed into the new data file, so memory stays flat whatever the model's size.
    folder = work / f"external-{main_size[0]}"
    optimized = out / "optimized.onnx"
    c = case(f"optimize {main_size[0]} external", "optimize (every pass) of the external-data model",
             [folder / "model.onnx", folder / "model.onnx.data"], (folder / "model.onnx.data").stat().st_size)
    c.tool("onnxstream", [binary, "optimize", str(folder / "model.onnx"), "-o", str(optimized), "--quiet", "--force"],
           [optimized, out / "optimized.onnx.data"])
    c.tool("cp", ["cp", str(folder / "model.onnx.data"), str(out / "copy.data")], [out / "copy.data"])
    cases.append(c)
    for label, size in merge_sizes:
        cases.append(merge_case(label, size, with_python=False))

    embedded_bytes = 4 * MiB if tiny else 128 * MiB if quick else 1_900_000_000
    embedded = work / f"embedded-{embedded_bytes}.onnx"
    generate("embedded", embedded, embedded_bytes)
    split_out, copied = out / "split.onnx", out / "copy.onnx"
    c = case("split %s embedded" % ("4MiB" if tiny else "128MiB" if quick else "1.9GB"), "split of a self-contained model into .onnx + .data",
             [embedded], embedded.stat().st_size)
    c.tool("onnxstream", [binary, "split", str(embedded), "-o", str(split_out), "--quiet"], [split_out, out / "split.onnx.data"])
    c.tool("cp", ["cp", str(embedded), str(copied)], [copied])
    c.tool("cp+sync", ["sh", "-c", f'cp "$0" "$1" && sync "$1"', str(embedded), str(copied)], [copied])
    c.tool("python-onnx", [PYTHON, "-c", PY_EXTERNALIZE, str(embedded), str(split_out)], [split_out, out / "split.onnx.data"])
    cases.append(c)

    nodes = 2_000 if tiny else 20_000 if quick else 200_000
    graph = work / f"graph-{nodes}.onnx"
    generate("graph", graph, nodes)
    c = case(f"inspect {count_label(nodes)}-node graph", "inspect of a metadata-heavy model (no weights)", [graph],
             graph.stat().st_size)
    c.tool("onnxstream", [binary, "inspect", str(graph), "--json"], [])
    c.tool("cp", ["cp", str(graph), str(out / "graph.onnx")], [out / "graph.onnx"])
    c.tool("python-onnx", [PYTHON, "-c", PY_INSPECT, str(graph)], [])
    cases.append(c)

    cases.extend(small_tensor_cases(args, work, out, binary))
    cases.extend(compact_graph_cases(args, work, out, binary))
    cases.extend(sparse_7b_cases(args, work, binary))
    cases.extend(caffe_case(args, work, out, binary))

    if args.tiny:
        # No torch fixture in the smoke run: the LLM cases' commands on the Gemm model.
        stand_in = work / f"gemm-external-{MiB}"
        repacked = out / "repacked.onnx"
        r = case("repack 1MiB Gemm", "repack of the Gemm model into one aligned .data", [stand_in], MiB)
        r.tool("onnxstream", [binary, "repack", str(stand_in / "model.onnx"), "-o", str(repacked), "--quiet"],
               [repacked, out / "repacked.onnx.data"])
        r.tool("cp+sync", ["sh", "-c", 'cp -r "$0" "$1" && sync -f "$1"', str(stand_in), str(out / "llm-copy")],
               [out / "llm-copy"])
        cases.append(r)
        cases.extend(llm_convert_cases(args, r, out, binary, "1MiB Gemm"))
        return cases
    llm = llm_case(args, work, out, binary)
    if llm is not None:
        cases.append(llm)
        cases.extend(llm_convert_cases(args, llm, out, binary))
    return cases


# python onnx's external-data merge: load every tensor's bytes (one open and read per tensor), save.
PY_LOAD = "import onnx, sys; m = onnx.load(sys.argv[1], load_external_data=False); print(len(m.graph.node))"
PY_CHECK = "import onnx, sys; onnx.checker.check_model(sys.argv[1]); print('ok')"


def small_tensor_cases(args, work: Path, out: Path, binary: str) -> list[case]:
    """The small-tensor curve: merge of a model with N external tensors of 16 bytes each (the
    compact generator: names like a big export's, 73 bytes of .onnx per tensor) against cp +
    sync of the same two files, python onnx's load + save (up to 100k: it opens the data file
    once per tensor, minutes at 1M) and, with --before, the binary before the read-ahead."""
    counts = (1_000, 5_000) if args.tiny else (10_000, 100_000, 1_000_000)
    cases = []
    for count in counts:
        folder = work / f"tiny-external-{count}"
        generate("tiny-external", folder, count)
        model, data = folder / "model.onnx", folder / "model.onnx.data"
        merged = out / "tiny.merged.onnx"
        label = count_label(count)
        c = case(f"merge {label} tiny external", f"merge of {count:,} external tensors of 16 bytes", [model, data],
                 model.stat().st_size + data.stat().st_size, runs=2 if count >= 1_000_000 else None,
                 budget_bytes=memory_budget(model.stat().st_size),
                 note="" if count <= 100_000 else "python-onnx not run: it opens the data file once per tensor")
        command = ["merge", str(model), "-o", str(merged), "--quiet"]
        c.tool("onnxstream", [binary, *command], [merged])
        if args.before:
            c.tool("before", [args.before, *command], [merged])
        c.tool("cp+sync", ["sh", "-c", 'cp "$0" "$2" && cp "$1" "$3" && sync "$2" "$3"', str(model), str(data),
                           str(out / "copy.onnx"), str(out / "copy.data")], [out / "copy.onnx", out / "copy.data"])
        if count <= 100_000:
            c.tool("python-onnx", [PYTHON, "-c", PY_MERGE, str(model), str(merged)], [merged])
        cases.append(c)
    # convert of the largest: random bytes, so most tensors would saturate in float16 and
    # stay float32, each named in the report (the worst case of its per-tensor tables).
    count = counts[-1]
    folder = work / f"tiny-external-{count}"
    model, data = folder / "model.onnx", folder / "model.onnx.data"
    converted = out / "tiny.fp16.onnx"
    c = case(f"convert {count_label(count)} tiny external", f"convert --dtype fp16 of {count:,} external tensors of 16 bytes",
             [model, data], model.stat().st_size + data.stat().st_size, runs=2 if count >= 1_000_000 else None,
             budget_bytes=memory_budget(model.stat().st_size))
    command = ["convert", str(model), "--dtype", "fp16", "-o", str(converted), "--quiet"]
    outputs = [converted, out / "tiny.fp16.onnx.data"]
    c.tool("onnxstream", [binary, *command], outputs)
    if args.before:
        c.tool("before", [args.before, *command], outputs)
    c.tool("cp+sync", ["sh", "-c", 'cp "$0" "$2" && cp "$1" "$3" && sync "$2" "$3"', str(model), str(data),
                       str(out / "copy.onnx"), str(out / "copy.data")], [out / "copy.onnx", out / "copy.data"])
    cases.append(c)
    return cases


def compact_graph_cases(args, work: Path, out: Path, binary: str) -> list[case]:
    """optimize --dry-run, analyze, inspect, infer-shapes, convert and edit of a compact 1M-node
    graph (21 bytes per node), against python onnx's load of the same file (what any python
    tool must do first) and the memory issue's budget (2x the .onnx + 32 MiB)."""
    nodes = 10_000 if args.tiny else 1_000_000
    graph = work / f"compact-graph-{nodes}.onnx"
    generate("compact-graph", graph, nodes)
    size = graph.stat().st_size
    label = count_label(nodes)
    cases = []
    for command, extra in (("optimize", ["-o", str(out / "compact.onnx"), "--dry-run", "--quiet"]),
                           ("analyze", ["--json"]), ("inspect", ["--json"]),
                           ("infer-shapes", ["-o", str(out / "compact.onnx"), "--quiet"]),
                           ("convert", ["--dtype", "fp16", "-o", str(out / "compact.onnx"), "--quiet"]),
                           ("edit", ["--rename", "0=zero", "-o", str(out / "compact.onnx"), "--quiet"])):
        c = case(f"{command} {label}-node compact graph", f"{command} of a {size / 1e6:.0f} MB graph of {nodes:,} nodes",
                 [graph], size, budget_bytes=memory_budget(size))
        c.tool("onnxstream", [binary, command, str(graph), *extra], [out / "compact.onnx"])
        if command == "inspect":
            c.tool("python-onnx", [PYTHON, "-c", PY_LOAD, str(graph)], [])
        cases.append(c)
    return cases


def sparse_7b_cases(args, work: Path, binary: str) -> list[case]:
    """inspect and verify of a 27 GB 7B-class model whose data file is a hole (no disk used):
    they read the metadata and check every tensor's extent, never the bytes. Peers: python
    onnx's load without data and onnx.checker.check_model on the path."""
    total = GiB if args.tiny else 27_000_000_000
    folder = work / f"sparse-{total}"
    generate("sparse-external", folder, total, "--tensor-size", str(96 * MiB))
    model = folder / "model.onnx"
    label = "1GiB" if args.tiny else "27GB"
    cases = []
    for command, extra, peer in (("inspect", ["--json"], PY_LOAD), ("verify", ["--quiet"], PY_CHECK)):
        c = case(f"{command} {label} 7B-class (sparse)", f"{command} of a {label} external-data model (sparse data file)",
                 [model], total, warm=False)
        c.tool("onnxstream", [binary, command, str(model), *extra], [])
        c.tool("python-onnx", [PYTHON, "-c", peer, str(model)], [])
        cases.append(c)
    return cases


def caffe_case(args, work: Path, out: Path, binary: str) -> list[case]:
    """export --to caffe of one Gemm whose weight is in external data, against cp + sync of
    that data file (the .caffemodel holds the same float32 bytes); and convert of the same
    model to fp16 and bf16 with and without the SIMD paths (normal values, one 256 MiB
    tensor: user CPU is what the SIMD paths save, the LLM fixture is too small to show it)."""
    total = MiB if args.tiny else 256 * MiB if not args.large else GiB
    folder = work / f"gemm-external-{total}"
    generate("gemm-external", folder, total)
    model, data = folder / "model.onnx", folder / "model.onnx.data"
    label = human_bytes(total).replace(" ", "").replace(".0", "")
    prefix = out / "caffe"
    outputs = [out / "caffe.prototxt", out / "caffe.caffemodel"]
    c = case(f"export {label} Gemm to caffe", "export --to caffe of a Gemm with its weight in external data",
             [model, data], data.stat().st_size)
    c.tool("onnxstream", [binary, "export", str(model), "--to", "caffe", "-o", str(prefix), "--quiet"], outputs)
    c.tool("cp+sync", ["sh", "-c", 'cp "$0" "$1" && sync "$1"', str(data), str(out / "copy.data")], [out / "copy.data"])
    cases = [c]
    if args.tiny:
        return cases  # the smoke run converts the same model in llm_convert_cases
    for dtype in ("fp16", "bf16"):
        converted = out / f"gemm.{dtype}.onnx"
        v = case(f"convert {label} Gemm to {dtype}", f"convert --dtype {dtype} of one {label} float32 weight",
                 [model, data], data.stat().st_size)
        for tool, prefix in (("onnxstream", []), ("no-simd", ["env", "ONNXSTREAM_SIMD=off"])):
            v.tool(tool, [*prefix, binary, "convert", str(model), "--dtype", dtype, "-o", str(converted), "--quiet"],
                   [converted, out / f"gemm.{dtype}.onnx.data"])
        v.tool("cp+sync", ["sh", "-c", 'cp "$0" "$1" && sync "$1"', str(data), str(out / "copy.data")],
               [out / "copy.data"])
        cases.append(v)
    return cases


def llm_case(args, work: Path, out: Path, binary: str):
    """Repack of a per-tensor LLM export (scripts/make_llm_fixture.py; --large in the full run:
    about 2.9 GB in a few hundred files). This is the hook for that case: skipped with a
    message when the generator is absent or fails (it needs python3-torch)."""
    script = REPO / "scripts" / "make_llm_fixture.py"
    if not script.exists() or args.no_llm:
        print("  (no LLM repack case: scripts/make_llm_fixture.py is absent or --no-llm was given)")
        return None
    folder = work / ("llm-large" if args.large else "llm-default")
    model = folder / "model.onnx"
    marker = work / f".{folder.name}.done"
    if not marker.exists():
        remove([folder])
        print(f"  generating the LLM fixture in {folder.name} (torch export; takes a while)", flush=True)
        command = [PYTHON, str(script), str(folder)] + (["--large"] if args.large else [])
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0 or not model.exists():
            print(f"  (no LLM repack case: the generator failed)\n{result.stderr[-2000:]}")
            return None
        marker.touch()
    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file() and p.suffix != ".json")
    repacked = out / "repacked.onnx"
    c = case("repack %s LLM per-tensor" % ("2.9GB" if args.large else "35MB"),
             "repack of a torch per-tensor export into one aligned .data", [folder], size)
    c.tool("onnxstream", [binary, "repack", str(model), "-o", str(repacked), "--quiet"], [repacked, out / "repacked.onnx.data"])
    c.tool("cp", ["cp", "-r", str(folder), str(out / "llm-copy")], [out / "llm-copy"])
    c.tool("cp+sync", ["sh", "-c", f'cp -r "$0" "$1" && sync -f "$1"', str(folder), str(out / "llm-copy")], [out / "llm-copy"])
    if not args.no_python_llm:
        c.tool("python-onnx", [PYTHON, "-c", PY_EXTERNALIZE, str(model), str(repacked)], [repacked, out / "repacked.onnx.data"])
    return c


def llm_convert_cases(args, repack: case, out: Path, binary: str, label: str | None = None) -> list[case]:
    """convert --dtype fp16 and export --to safetensors of the same LLM fixture, against cp
    of the same bytes (and, for convert, python onnx load + astype + save)."""
    folder = repack.inputs[0]
    model = folder / "model.onnx"
    label = label or ("2.9GB LLM" if args.large else "35MB LLM")
    half = out / "model.fp16.onnx"
    c = case(f"convert {label} to fp16", "convert --dtype fp16 of the per-tensor LLM export", [folder],
             repack.input_bytes)
    c.tool("onnxstream", [binary, "convert", str(model), "--dtype", "fp16", "-o", str(half), "--quiet"],
           [half, out / "model.fp16.onnx.data"])
    # The same without the SIMD conversion paths (onnx/conversion_path.hpp): user_s shows
    # what they save; the bf16 row below is the cost fp16 should not exceed.
    c.tool("no-simd", ["env", "ONNXSTREAM_SIMD=off", binary, "convert", str(model), "--dtype", "fp16", "-o", str(half),
                       "--quiet"], [half, out / "model.fp16.onnx.data"])
    c.tool("cp", ["cp", "-r", str(folder), str(out / "llm-copy")], [out / "llm-copy"])
    c.tool("cp+sync", ["sh", "-c", f'cp -r "$0" "$1" && sync -f "$1"', str(folder), str(out / "llm-copy")], [out / "llm-copy"])
    if not args.no_python_llm:
        c.tool("python-onnx", [PYTHON, "-c", PY_CONVERT, str(model), str(half)], [half, out / "model.fp16.onnx.data"])
    brain = out / "model.bf16.onnx"
    b = case(f"convert {label} to bf16", "convert --dtype bf16 of the per-tensor LLM export", [folder],
             repack.input_bytes)
    for tool, prefix in (("onnxstream", []), ("no-simd", ["env", "ONNXSTREAM_SIMD=off"])):
        b.tool(tool, [*prefix, binary, "convert", str(model), "--dtype", "bf16", "-o", str(brain), "--quiet"],
               [brain, out / "model.bf16.onnx.data"])
    b.tool("cp", ["cp", "-r", str(folder), str(out / "llm-copy")], [out / "llm-copy"])
    b.tool("cp+sync", ["sh", "-c", f'cp -r "$0" "$1" && sync -f "$1"', str(folder), str(out / "llm-copy")], [out / "llm-copy"])
    weights = out / "model.safetensors"
    e = case(f"export {label} to safetensors", "export --to safetensors of the per-tensor LLM export", [folder],
             repack.input_bytes)
    e.tool("onnxstream", [binary, "export", str(model), "--to", "safetensors", "-o", str(weights), "--quiet"], [weights])
    e.tool("cp", ["cp", "-r", str(folder), str(out / "llm-copy")], [out / "llm-copy"])
    e.tool("cp+sync", ["sh", "-c", f'cp -r "$0" "$1" && sync -f "$1"', str(folder), str(out / "llm-copy")], [out / "llm-copy"])
    cases = [c, b, e]
    # quantize --weights int8 / int4 against the numpy reference of the same rule (python
    # onnx load, numpy blocks, save: py_quantize.py; its model is not made runnable, it
    # measures the rule's cost) and cp of the same bytes.
    for weights in ("int8", "int4"):
        quantized = out / f"model.{weights}.onnx"
        q = case(f"quantize {label} to {weights}", f"quantize --weights {weights} (blocks of 32) of the LLM export",
                 [folder], repack.input_bytes)
        q.tool("onnxstream", [binary, "quantize", str(model), "--weights", weights, "-o", str(quantized), "--quiet"],
               [quantized, out / f"model.{weights}.onnx.data"])
        q.tool("cp+sync", ["sh", "-c", f'cp -r "$0" "$1" && sync -f "$1"', str(folder), str(out / "llm-copy")],
               [out / "llm-copy"])
        if not args.no_python_llm:
            q.tool("python-onnx", [PYTHON, str(HERE / "py_quantize.py"), str(model), str(quantized), weights],
                   [quantized, out / f"model.{weights}.onnx.data"])
        cases.append(q)
    # extract of the first half of the network (up to the middle MatMul's output): only the
    # weights it reads are copied; python onnx's extract_model loads everything (under 2 GB).
    cut = middle_matmul_output(model)
    if cut is not None:
        extracted = out / "model.extract.onnx"
        x = case(f"extract {label} first half", "extract of the LLM export up to its middle MatMul", [folder],
                 repack.input_bytes)
        x.tool("onnxstream", [binary, "extract", str(model), "--outputs", cut, "-o", str(extracted), "--quiet"],
               [extracted, out / "model.extract.onnx.data"])
        x.tool("cp+sync", ["sh", "-c", f'cp -r "$0" "$1" && sync -f "$1"', str(folder), str(out / "llm-copy")],
               [out / "llm-copy"])
        if not args.no_python_llm and repack.input_bytes < 2 * GiB:
            x.tool("python-onnx", [PYTHON, "-c", PY_EXTRACT, str(model), str(extracted), cut], [extracted])
        cases.append(x)
    # edit (rename the first graph input, expose the middle MatMul's output) and
    # infer-shapes: metadata only, the weights stay where they are. python onnx does the
    # same edit by loading the whole model and saving it again; its shape inference by path.
    first_input, outputs = graph_input(model)
    if cut is not None and first_input is not None:
        edited = out / "model.edit.onnx"
        ed = case(f"edit {label}", "edit --rename of the first input and --add-output of a middle tensor", [folder],
                  repack.input_bytes)
        expose = [] if cut in outputs else ["--add-output", cut]
        beside = folder / "model.bench-edit.onnx"  # beside the model: it points at the same data files
        ed.tool("onnxstream", [binary, "edit", str(model), "--rename", f"{first_input}={first_input}_renamed", *expose,
                               "-o", str(beside), "--quiet"], [beside])
        if not args.no_python_llm and repack.input_bytes < 2 * GiB:
            ed.tool("python-onnx", [PYTHON, "-c", PY_EDIT, str(model), str(edited), first_input, cut],
                    [edited, out / "model.edit.onnx.data"])
        cases.append(ed)
    shaped = folder / "model.bench-shapes.onnx"  # beside the model: it points at the same data files
    sh = case(f"infer-shapes {label}", "infer-shapes of the LLM export", [folder], repack.input_bytes)
    sh.tool("onnxstream", [binary, "infer-shapes", str(model), "-o", str(shaped), "--quiet"], [shaped])
    sh.tool("python-onnx", [PYTHON, "-c", PY_INFER, str(model), str(shaped)], [shaped])
    cases.append(sh)
    return cases


def graph_input(model: Path) -> tuple[str | None, set[str]]:
    """The model's first graph input that is not an initializer, and its output names."""
    import onnx
    graph = onnx.load(str(model), load_external_data=False).graph
    inits = {t.name for t in graph.initializer}
    return next((i.name for i in graph.input if i.name not in inits), None), {o.name for o in graph.output}


# python onnx's way to edit: load everything, rename the input where it is used, add the
# output (its type left empty), save with external data.
PY_EDIT = (
    "import onnx, os, sys; m = onnx.load(sys.argv[1]); g = m.graph; old, new = sys.argv[3], sys.argv[3] + '_renamed'; "
    "[setattr(i, 'name', new) for i in g.input if i.name == old]; "
    "[n.input.__setitem__(k, new) for n in g.node for k, x in enumerate(n.input) if x == old]; "
    "[g.output.append(onnx.ValueInfoProto(name=sys.argv[4])) for _ in [0] if sys.argv[4] not in {o.name for o in g.output}]; "
    "onnx.save_model(m, sys.argv[2], save_as_external_data=True, all_tensors_to_one_file=True, "
    "location=os.path.basename(sys.argv[2]) + '.data', size_threshold=1024)"
)
PY_INFER = "import onnx, onnx.shape_inference as s, sys; s.infer_shapes_path(sys.argv[1], sys.argv[2])"


# ------------------------------------------------------------------ micro benchmarks


def micro(args, work: Path, nodes_model: Path | None) -> list[dict]:
    if not args.micro or not Path(args.micro).exists():
        return []
    env = dict(os.environ)
    if nodes_model is not None:
        env["ONNXSTREAM_BENCH_MODEL"] = str(nodes_model)
    out = subprocess.run([args.micro, "--benchmark_format=json", "--benchmark_min_time=0.3"], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        print(f"  (micro benchmarks failed: {out.stderr[-500:]})")
        return []
    records = []
    for b in json.loads(out.stdout)["benchmarks"]:
        if b.get("error_occurred"):  # e.g. a conversion path this CPU does not have
            continue
        record = {"name": b["name"], "real_time": b["real_time"], "cpu_time": b["cpu_time"], "time_unit": b["time_unit"]}
        for key in ("bytes_per_second", "items_per_second", "peak_rss_MiB", "fields", "tokens", "operations", "model_MB"):
            if key in b:
                record[key] = b[key]
        records.append(record)
    return records


# ------------------------------------------------------------------ running


def add_before(cases: list[case], binary: str, before: str) -> None:
    """The older binary beside onnxstream on every case (same command, its path swapped),
    so that a change shows as before and after in one run and a row that got worse shows
    too; not on the compact graph's optimize and analyze (tens of seconds each before, two
    runs would double the run)."""
    for c in cases:
        slow = "compact graph" in c.name and c.name.startswith(("optimize", "analyze"))
        if "onnxstream" not in c.tools or "before" in c.tools or slow:
            continue
        command, outputs = c.tools["onnxstream"]
        tools = {}
        for name, tool in c.tools.items():
            tools[name] = tool
            if name == "onnxstream":
                tools["before"] = ([before if part == binary else part for part in command], outputs)
        c.tools = tools


def run_case(c: case, runs: int, python_runs: int) -> list[dict]:
    print(f"\n== {c.name}: {c.description} ({c.input_bytes / MiB:,.1f} MiB)", flush=True)
    if c.runs is not None:
        runs, python_runs = min(runs, c.runs), min(python_runs, c.runs)
    if c.warm:
        warm(c.inputs)
    samples: dict[str, list[dict]] = {name: [] for name in c.tools}
    for run in range(runs + 1):  # run 0 warms up and is not counted
        for name, (command, outputs) in c.tools.items():
            if name == "python-onnx" and (run == 0 or run > python_runs):
                continue  # slow and memory-hungry: fewer runs, no warm-up run
            remove(outputs)
            sync()
            try:
                sample = measure(command, cwd=REPO)
            except SystemExit as failed:
                if name != "before":
                    raise
                # an older build may lack the command or an option: the row says so
                print(f"  (before: failed, left out of this case)\n{str(failed)[-600:]}")
                del samples[name]
                c.tools = {k: v for k, v in c.tools.items() if k != name}
                remove(outputs)
                break
            remove(outputs)
            if run > 0:
                samples[name].append(sample)
        sync()
    records = []
    cp_wall = statistics.median(s["wall_s"] for s in samples["cp"]) if samples.get("cp") else None
    cp_sync_wall = statistics.median(s["wall_s"] for s in samples["cp+sync"]) if samples.get("cp+sync") else None
    for name, runs_of_tool in samples.items():
        wall = statistics.median(s["wall_s"] for s in runs_of_tool)
        records.append({
            "case": c.name,
            "tool": name,
            "input_bytes": c.input_bytes,
            "runs": len(runs_of_tool),
            "wall_s": round(wall, 4),
            "wall_runs_s": [round(s["wall_s"], 4) for s in runs_of_tool],
            "cpu_s": round(statistics.median(s["cpu_s"] for s in runs_of_tool), 4),
            "user_s": round(statistics.median(s["user_s"] for s in runs_of_tool), 4),
            "peak_rss_bytes": max(s["peak_rss_bytes"] for s in runs_of_tool),
            "ratio_to_cp": round(wall / cp_wall, 3) if cp_wall else None,
            "ratio_to_cp_sync": round(wall / cp_sync_wall, 3) if cp_sync_wall else None,
        })
        if c.budget_bytes is not None and name in ("onnxstream", "before"):
            records[-1]["budget_bytes"] = c.budget_bytes
        if c.note and name == "onnxstream":
            records[-1]["note"] = c.note
    return records


def human_bytes(n: float) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def table(records: list[dict]) -> str:
    lines = [f"{'case':<36} {'tool':<12} {'wall s':>8} {'CPU s':>8} {'user s':>8} {'peak RSS':>11} {'x cp':>7} {'x cp+sync':>10}"]
    lines.append("-" * len(lines[0]))
    for r in records:
        ratio = f"{r['ratio_to_cp']:.2f}" if r.get("ratio_to_cp") is not None else "-"
        ratio_sync = f"{r['ratio_to_cp_sync']:.2f}" if r.get("ratio_to_cp_sync") is not None else "-"
        lines.append(f"{r['case']:<36} {r['tool']:<12} {r['wall_s']:>8.3f} {r['cpu_s']:>8.3f} {r.get('user_s', 0):>8.3f} "
                     f"{human_bytes(r['peak_rss_bytes']):>11} {ratio:>7} {ratio_sync:>10}"
                     + (f"  budget {human_bytes(r['budget_bytes'])}" + ("" if r["peak_rss_bytes"] <= r["budget_bytes"] else " OVER")
                        if r.get("budget_bytes") else ""))
    return "\n".join(lines)


def find(records: list[dict], case_prefix: str, tool: str):
    for r in records:
        if r["case"].startswith(case_prefix) and r["tool"] == tool:
            return r
    return None


def targets(records: list[dict], quick: bool) -> list[dict]:
    """The issue's targets, judged on this run (on the full-size cases; --quick only shows
    the same checks on small inputs)."""
    out = []

    def add(name, value, limit, holds, unit=""):
        out.append({"target": name, "value": value, "limit": limit, "holds": bool(holds), "unit": unit})

    weight_merges = [r["case"] for r in records if r["tool"] == "onnxstream" and r["case"].startswith("merge")
                     and "tiny" not in r["case"]]
    main = find(records, weight_merges[0], "onnxstream") if weight_merges else None
    if main:
        # Against cp + sync: onnxstream fsyncs its output, so the durable copy is the limit.
        ratio = main["ratio_to_cp_sync"]
        add("merge: wall / cp+sync", ratio, 1.2, ratio is not None and ratio <= 1.2, "x")
        add("merge: peak RSS", round(main["peak_rss_bytes"] / MiB, 2), 24, main["peak_rss_bytes"] <= 24 * MiB, "MiB")
        python = find(records, main["case"], "python-onnx")
        if python:
            speed = python["wall_s"] / main["wall_s"]
            memory = python["peak_rss_bytes"] / main["peak_rss_bytes"]
            add("merge: python wall / onnxstream wall", round(speed, 2), 2, speed >= 2, "x")
            add("merge: python RSS / onnxstream RSS", round(memory, 1), 50, memory >= 50, "x")
    optimized = find(records, "optimize", "onnxstream")
    if optimized:
        add("optimize: peak RSS", round(optimized["peak_rss_bytes"] / MiB, 2), 32, optimized["peak_rss_bytes"] <= 32 * MiB, "MiB")
    split = find(records, "split", "onnxstream")
    if split:
        ratio = split["ratio_to_cp_sync"]
        add("split: wall / cp+sync", ratio, 1.25, ratio is not None and ratio <= 1.25, "x")
        add("split: peak RSS", round(split["peak_rss_bytes"] / MiB, 2), 24, split["peak_rss_bytes"] <= 24 * MiB, "MiB")
    small = find(records, weight_merges[1], "onnxstream") if len(weight_merges) > 2 else None
    large = find(records, weight_merges[2], "onnxstream") if len(weight_merges) > 2 else None
    if small and large:
        delta = (large["peak_rss_bytes"] - small["peak_rss_bytes"]) / MiB
        add("merge RSS: large - small model", round(delta, 2), 4, abs(delta) <= 4, "MiB")
    inspect = find(records, "inspect", "onnxstream")
    python_inspect = find(records, "inspect", "python-onnx")
    if inspect and python_inspect:
        add("inspect: python wall / onnxstream wall", round(python_inspect["wall_s"] / inspect["wall_s"], 2), None, True, "x")
        add("inspect: python RSS / onnxstream RSS",
            round(python_inspect["peak_rss_bytes"] / inspect["peak_rss_bytes"], 2), None, True, "x")
    # issue 35: the small-tensor curve's top, fp16's CPU against bf16's, the compact budgets
    curve = [(int(float(r["case"].split()[1].replace("M", "e6").replace("k", "e3"))), r) for r in records
             if r["tool"] == "onnxstream" and r["case"].startswith("merge") and "tiny external" in r["case"]]
    if curve:
        count, top = curve[-1]
        if top.get("ratio_to_cp_sync") is not None:
            add(f"{top['case']}: wall / cp+sync", top["ratio_to_cp_sync"], 3, top["ratio_to_cp_sync"] <= 3, "x")
        if len(curve) > 1:
            # what each further tensor costs: the top of the curve against its bottom
            per = (top["peak_rss_bytes"] - curve[0][1]["peak_rss_bytes"]) / (count - curve[0][0])
            add(f"{top['case']}: peak RSS per further tensor", round(per), 229, per <= 229, " B")
    half = brain = None
    for r in records:  # the last convert pair: the Gemm model's where present (one large tensor)
        if r["case"].startswith("convert") and r["tool"] == "onnxstream":
            if r["case"].endswith("to fp16"):
                half = r
            elif r["case"].endswith("to bf16"):
                brain = r
    if half and brain and brain["user_s"] > 0:
        ratio = half["user_s"] / brain["user_s"]
        add("convert: fp16 user CPU / bf16 user CPU", round(ratio, 2), 1.0, ratio <= 1.0, "x")
    for r in records:
        if r.get("budget_bytes") and r["tool"] == "onnxstream":
            add(f"{r['case']}: peak RSS", round(r["peak_rss_bytes"] / MiB, 1), round(r["budget_bytes"] / MiB),
                r["peak_rss_bytes"] <= r["budget_bytes"], "MiB")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True, help="the onnxstream executable")
    parser.add_argument("--micro", help="the onnxstream_bench executable (Google Benchmark)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/onnxstream-bench"), help="models and outputs (GBs)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--history", type=Path)
    parser.add_argument("--quick", action="store_true", help="the default size (kept for older invocations)")
    parser.add_argument("--large", action="store_true", help="the multi-GB cases (about 12 GB of disk in --work)")
    parser.add_argument("--tiny", action="store_true", help="every case on tiny inputs, one run: the test suite's smoke run")
    parser.add_argument("--before", help="an older onnxstream binary, run beside the current one where a change is measured")
    parser.add_argument("--before-label", help="what --before is (e.g. its commit)")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--python-runs", type=int, help="runs of python onnx (slow, GBs of memory)")
    parser.add_argument("--no-llm", action="store_true", help="leave out the LLM repack case")
    parser.add_argument("--no-python-llm", action="store_true", help="no python onnx run on the LLM case")
    parser.add_argument("--keep", action="store_true", help="keep the generated models in --work")
    parser.add_argument("--only", help="only the cases whose name contains this text (their inputs are still all made)")
    args = parser.parse_args()

    if args.tiny:
        args.no_llm = True  # the LLM fixture needs torch and a minute
    runs = args.runs or (1 if args.tiny else 5 if args.large else 3)
    python_runs = args.python_runs or (1 if args.tiny else 3 if args.large else 2)
    if args.before:
        args.before = os.path.abspath(args.before)  # a symlink stays one: it may be swapped during the run
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    binary = str(Path(args.binary).resolve())
    started = datetime.datetime.now(datetime.timezone.utc)
    meta = {
        "commit": git("describe", "--always", "--dirty", "--abbrev=10"),
        "date": started.isoformat(timespec="seconds"),
        "machine": machine(),
        "file_system": file_system(args.work),
        "disk": disk(args.work),
        "size": "tiny" if args.tiny else "large" if args.large else "default",
        "before": ({"binary": args.before, "label": args.before_label or args.before} if args.before else None),
        "quick": not args.large,
        "runs": runs,
        "python_runs": python_runs,
        "version": subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip(),
    }
    print(f"bench: {meta['commit']} on {meta['machine']['hostname']} ({meta['machine']['cpu']}, "
          f"{meta['machine']['cores']} cores, {meta['file_system']} on {meta['disk']}), load {meta['machine']['load_average']}")

    print("== generating inputs", flush=True)
    cases = build_cases(args, args.work, binary)
    if args.only:
        cases = [c for c in cases if args.only in c.name]
    if args.before:
        add_before(cases, binary, args.before)
    records: list[dict] = []
    try:
        for c in cases:
            records.extend(run_case(c, runs, python_runs))
    finally:
        remove([args.work / "out"])
    for r in records:
        r.update({"commit": meta["commit"], "date": meta["date"], "machine": meta["machine"]["hostname"]})

    graph = next((p for p in args.work.glob("graph-*.onnx")), None)
    micro_records = micro(args, args.work, graph)
    meta["machine"]["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    document = {"meta": meta, "records": records, "micro": micro_records, "targets": targets(records, not args.large)}

    print("\n" + table(records))
    if micro_records:
        print("\nmicro benchmarks:")
        for m in micro_records:
            rate = f"{m['bytes_per_second'] / 1e6:,.0f} MB/s" if "bytes_per_second" in m else ""
            print(f"  {m['name']:<28} {m['cpu_time']:>10.3f} {m['time_unit']} CPU  {rate:>12}  "
                  f"peak RSS {m.get('peak_rss_MiB', 0):.1f} MiB")
    print(f"\nload average at the start {meta['machine']['load_average']}, at the end {meta['machine']['load_average_after']}")
    print("\ntargets" + ("" if args.large else " (default size: smaller inputs, indicative only)") + ":")
    for t in document["targets"]:
        limit = f" (limit {t['limit']}{t['unit']})" if t["limit"] is not None else ""
        state = "holds" if t["holds"] else "DOES NOT HOLD"
        if t["limit"] is None:
            state = "measured"
        print(f"  {t['target']:<42} {t['value']}{t['unit']}{limit}: {state}")

    results = args.out / "results.json"
    results.write_text(json.dumps(document, indent=1) + "\n")
    # Every run appends its document to OUT/history.jsonl (one line per run): the dashboard
    # shows each row's earlier figures from it.
    with open(args.out / "history.jsonl", "a") as history:
        history.write(json.dumps(document, separators=(",", ":")) + "\n")
    history_documents = None
    if args.history:
        args.history.mkdir(parents=True, exist_ok=True)
        stamp = started.strftime("%Y%m%dT%H%M%SZ")
        shutil.copyfile(results, args.history / f"{stamp}-{meta['commit']}.json")
        history_documents = args.history
    subprocess.run([PYTHON, str(HERE / "dashboard.py"), str(results), str(args.out / "dashboard.html"),
                    "--history-file", str(args.out / "history.jsonl")]
                   + (["--history", str(history_documents)] if history_documents else []), check=True)
    print(f"\nwrote {results} and {args.out / 'dashboard.html'}")
    if not args.keep:
        for p in list(args.work.iterdir()):
            if p.name.startswith(("external-", "embedded-", "graph-", "llm-", "tiny-external-", "compact-graph-", "sparse-",
                                  "gemm-external-", ".")):
                remove([p])


if __name__ == "__main__":
    main()

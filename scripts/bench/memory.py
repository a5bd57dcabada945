#!/usr/bin/python3
"""The memory benchmark behind `scripts/bench.sh --memory` (run it through that script).

Peak RSS of onnxstream's commands on models that are large in weight bytes (where memory
must stay flat) or in metadata (where it must stay within 2x the .onnx file + 32 MiB):

  split 1.9GB embedded       split / repack / verify of a self-contained 1.9 GB model (475 tensors)
  merge 1GiB external        merge / verify of a 1 GiB external-data model
  1M tiny initializers       every command on a ~73 MB model of 1M 16-byte initializers (diff
                             against a copy, and against a copy with one value changed)
  1M external tiny           inspect / verify / merge / repack of the same tensors held externally
  100MB packed int64         split / repack of one INT64 tensor held in typed int64_data
  100MB of dims              inspect / split of 100 tensors holding 1M dims each
  4GiB unknown field         diff / inspect of a model with a 4 GiB unknown ModelProto field
  200k-node graph            every command that reads a graph (inspect's wall time too: median of 5)
  1M-node graph              the same on a graph of a million nodes (~107 MB)

What is measured, for every run:
  max RSS      ru_maxrss of the command, as GNU time reports it (%M): what users and job
               schedulers see; mapped file pages included. Exact.
  RssAnon,     the largest values of those lines of /proc/PID/status seen while the command
  RssFile      ran, sampled every millisecond or so. The kernel keeps no high-water mark of
               the two, so these are lower bounds of the true peaks (a spike shorter than the
               interval can be missed); max RSS is the exact bound of their sum.
Cache state:
  cold         the inputs are dropped from the page cache before the run: sync, then
               posix_fadvise(POSIX_FADV_DONTNEED) on every input file, checked with fincore
               (when an input still has pages cached, /proc/sys/vm/drop_caches is written,
               if permitted). The state reached is recorded per run.
  warm         the inputs are dropped as for cold, then read once before the run, so every
               page is cached, with the large folios one sequential read makes (not whatever
               earlier runs left: on Linux 6.18 a fault maps the whole folio that holds a
               byte, so the folios' sizes change what a command maps).

Disk: about 7 GB in --work (the 1.9 GB model and its split output, the 1 GiB model and its
merged output, ~600 MB of metadata models; the 4 GiB unknown field is a sparse hole).
Writes OUT/memory.json, OUT/memory.html (scripts/bench/memory_dashboard.py) and prints a
table; with --history HDIR the run is also kept there and the page charts the trend of
every run kept. A few minutes per run of every case.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run as bench  # noqa: E402  (the shared helpers: machine(), git(), generate())

MiB = 1 << 20
GiB = 1 << 30
POSIX_FADV_DONTNEED = 4


def status_kib(pid: int) -> dict[str, int] | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem"):
            found[key] = int(value.split()[0])
    return found


def cached_pages(path: Path) -> int | None:
    try:
        out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
                             capture_output=True, text=True, check=True).stdout.split()
        return int(out[0]) if out else None
    except (OSError, subprocess.CalledProcessError, ValueError):
        return None


def input_files(paths: list[Path]) -> list[Path]:
    files = []
    for p in paths:
        files.extend([p] if p.is_file() else sorted(q for q in p.rglob("*") if q.is_file()))
    return files


def make_cold(paths: list[Path]) -> str:
    subprocess.run(["sync"], check=True)
    files = input_files(paths)
    for f in files:
        with open(f, "rb") as handle:
            os.posix_fadvise(handle.fileno(), 0, 0, POSIX_FADV_DONTNEED)
    left = [cached_pages(f) for f in files]
    if all(n == 0 for n in left):
        return "cold (fadvise DONTNEED, fincore: 0 bytes cached)"
    try:
        Path("/proc/sys/vm/drop_caches").write_text("1\n")
        left = [cached_pages(f) for f in files]
        return f"cold (drop_caches, fincore: {sum(n or 0 for n in left)} bytes cached)"
    except OSError:
        return f"cold? (fadvise DONTNEED; fincore: {sum(n or 0 for n in left if n)} bytes still cached)"


def make_warm(paths: list[Path]) -> str:
    # Dropped first, then read once: the cache then holds what one sequential read makes
    # (its large folios), whatever ran before. Read once on top of an older cache, the
    # folios were whatever earlier runs left, and a command that faults a page back in
    # mapped 2 MiB or 4 KiB by chance: the same run measured 164 or 213 MiB.
    make_cold(paths)
    bench.warm(paths)
    cached = sum(cached_pages(f) or 0 for f in input_files(paths))
    total = sum(f.stat().st_blocks * 512 for f in input_files(paths))
    return f"warm (dropped, then read once; fincore: {cached / MiB:,.0f} of {total / MiB:,.0f} MiB on disk cached)"


def run_sampled(command: list[str], ok_codes: tuple[int, ...]) -> dict:
    """Runs `command` under GNU time while sampling its /proc/PID/status. The command is
    started by a shell that writes its PID, then execs it: so the PID is known at once, and
    the high-water mark the command inherits is the shell's (~1 MiB), not this Python's."""
    with tempfile.NamedTemporaryFile(mode="r") as report, tempfile.TemporaryFile() as errors, \
            tempfile.TemporaryDirectory() as scratch:
        pid_file = Path(scratch) / "pid"
        start = time.perf_counter()
        process = subprocess.Popen(["/usr/bin/time", "-f", "%U %S %M", "-o", report.name, "/bin/sh", "-c",
                                    'echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && exec "$@"', str(pid_file), *command],
                                   stdout=subprocess.DEVNULL, stderr=errors)
        peaks = {"RssAnon": 0, "RssFile": 0, "VmHWM": 0}
        samples = 0
        pid = None
        while process.poll() is None:
            if pid is None and pid_file.exists():
                pid = int(pid_file.read_text())
            if pid is not None:
                found = status_kib(pid)
                if found:
                    samples += 1
                    for key in peaks:
                        peaks[key] = max(peaks[key], found.get(key, 0))
            time.sleep(0.0005)
        wall = time.perf_counter() - start
        if process.returncode not in ok_codes:
            errors.seek(0)
            message = errors.read().decode(errors="replace")[-3000:]
            raise SystemExit(f"memory bench: {' '.join(command)} failed ({process.returncode}):\n{message}")
        user, system, rss_kib = report.read().split()[-3:]
    return {
        "wall_s": round(wall, 4),
        "cpu_s": round(float(user) + float(system), 4),
        "max_rss_bytes": int(rss_kib) * 1024,
        "peak_rss_anon_bytes": peaks["RssAnon"] * 1024,
        "peak_rss_file_bytes": peaks["RssFile"] * 1024,
        "samples": samples,
    }


class case:
    def __init__(self, name: str, inputs: list[Path], onnx_bytes: int, weight_case: bool):
        self.name = name
        self.inputs = inputs
        self.onnx_bytes = onnx_bytes  # size of the .onnx file (the metadata budget is 2x it + 32 MiB)
        self.weight_case = weight_case
        self.runs: list[tuple[str, list[str], list[Path], tuple[str, ...], tuple[int, ...]]] = []

    def command(self, label, argv, outputs=(), caches=("warm",), ok_codes=(0,)) -> "case":
        self.runs.append((label, argv, list(outputs), caches, ok_codes))
        return self


def build_cases(args, work: Path, binary: str) -> list[case]:
    out = work / "out"
    out.mkdir(parents=True, exist_ok=True)
    scale = 16 if args.quick else 1  # --quick: the same shapes, a sixteenth of the bytes
    cases = []

    def wanted(name: str) -> bool:
        """--only: a case's inputs are made only when it runs."""
        return not args.only or args.only in name

    def gen(kind, path, amount, tensor_size=None):
        if tensor_size is None:
            bench.generate(kind, path, amount)
            return path
        marker = path.parent / f".{path.name}.{kind}.{amount}.{tensor_size}.done"
        if not marker.exists():
            bench.remove([path])
            print(f"  generating {kind} {path.name} ({amount:,}, tensors of {tensor_size:,} bytes)", flush=True)
            subprocess.run([bench.PYTHON, str(HERE / "models.py"), kind, str(path), str(amount), "--tensor-size",
                            str(tensor_size)], check=True)
            marker.touch()
        return path

    # Tensors of 4,000,000 bytes (475 of them, as in the issue): their headers fall inside
    # the page cache's large folios (with 16 MiB tensors they happen to sit where the
    # generator's writes began, in small folios, and hide the problem).
    name = "split 1.9GB embedded" if scale == 1 else "split 119MB embedded"
    if wanted(name):
        cases.append(embedded_case(name, gen("embedded", work / f"embedded-{1_900_000_000 // scale}-4M.onnx",
                                             1_900_000_000 // scale, 4_000_000), out, binary))
    name = "merge 1GiB external" if scale == 1 else "merge 64MiB external"
    if wanted(name):
        folder = work / f"external-{GiB // scale}-4M"
        gen("external", folder, GiB // scale, 4_000_000)
        cases.append(external_case(name, folder, out, binary))
    name = "1M tiny initializers" if scale == 1 else "62k tiny initializers"
    if wanted(name):
        tiny = gen("tiny", work / f"tiny-{1_000_000 // scale}.onnx", 1_000_000 // scale)
        tiny_copy = work / f"tiny-{1_000_000 // scale}-copy.onnx"
        if not tiny_copy.exists():
            shutil.copyfile(tiny, tiny_copy)
        tiny_changed = work / f"tiny-{1_000_000 // scale}-changed.onnx"
        if not tiny_changed.exists():
            changed_copy(tiny, tiny_changed)
        cases.append(tiny_case(name, tiny, tiny_copy, tiny_changed, out, binary))
    name = "1M external tiny" if scale == 1 else "62k external tiny"
    if wanted(name):
        folder = gen("tiny-external", work / f"tiny-external-{1_000_000 // scale}", 1_000_000 // scale)
        cases.append(external_tiny_case(name, folder, out, binary))
    name = "100MB packed int64" if scale == 1 else "6MB packed int64"
    if wanted(name):
        cases.append(packed_case(name, gen("int64", work / f"int64-{100_000_000 // scale}.onnx", 100_000_000 // scale),
                                 out, binary))
    name = "100MB of dims" if scale == 1 else "6MB of dims"
    if wanted(name):
        cases.append(dims_case(name, gen("dims", work / f"dims-{100_000_000 // scale}.onnx", 100_000_000 // scale),
                               out, binary))
    name = "4GiB unknown field" if scale == 1 else "256MiB unknown field"
    if wanted(name):
        unknown = gen("unknown", work / f"unknown-{4 * GiB // scale}.onnx", 4 * GiB // scale)
        other = work / f"unknown-{4 * GiB // scale}-copy.onnx"
        if not other.exists():
            subprocess.run(["cp", "--sparse=always", str(unknown), str(other)], check=True)
        cases.append(unknown_case(name, unknown, other, binary))
    for nodes in (200_000 // scale, 1_000_000 // scale):
        name = f"{nodes // 1000}k-node graph" if nodes < 1_000_000 else "1M-node graph"
        if wanted(name):
            cases.append(graph_case(name, gen("graph", work / f"graph-{nodes}.onnx", nodes), out, binary))
    return cases


def embedded_case(name: str, embedded: Path, out: Path, binary: str) -> case:
    split_out = out / "split.onnx"
    c = case(name, [embedded], embedded.stat().st_size, True)
    c.command("split", [binary, "split", str(embedded), "-o", str(split_out), "--quiet"],
              [split_out, out / "split.onnx.data"], caches=("cold", "warm"))
    c.command("repack", [binary, "repack", str(embedded), "-o", str(out / "repacked.onnx"), "--quiet"],
              [out / "repacked.onnx", out / "repacked.onnx.data"])
    c.command("verify", [binary, "verify", str(embedded), "--quiet"])
    c.command("inspect", [binary, "inspect", str(embedded), "--json"])
    return c


def external_case(name: str, folder: Path, out: Path, binary: str) -> case:
    model = folder / "model.onnx"
    c = case(name, [model, folder / "model.onnx.data"], model.stat().st_size, True)
    c.command("merge", [binary, "merge", str(model), "-o", str(out / "merged.onnx"), "--quiet"], [out / "merged.onnx"],
              caches=("cold", "warm"))
    c.command("verify", [binary, "verify", str(model), "--quiet"])
    c.command("convert", [binary, "convert", str(model), "--dtype", "fp16", "-o", str(out / "half.onnx"), "--quiet"],
              [out / "half.onnx", out / "half.onnx.data"])
    return c


def changed_copy(model: Path, changed: Path) -> None:
    """A copy of a tiny model with one value of its middle initializer changed: diff then
    walks both models (an equivalent copy is answered from digests alone)."""
    data = bytearray(model.read_bytes())
    raw_data_16 = b"\x4a\x10"  # TensorProto.raw_data (field 9), 16 bytes
    at = data.find(raw_data_16, len(data) // 2)
    if at < 0:
        raise SystemExit(f"{model}: no raw_data of 16 bytes past its middle")
    data[at + 2 + 7] ^= 0x40
    tmp = changed.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(changed)


def tiny_case(name: str, tiny: Path, tiny_copy: Path, tiny_changed: Path, out: Path, binary: str) -> case:
    c = case(name, [tiny, tiny_copy, tiny_changed], tiny.stat().st_size, False)
    c.command("inspect", [binary, "inspect", str(tiny), "--json"])
    c.command("verify", [binary, "verify", str(tiny), "--quiet"])
    c.command("split", [binary, "split", str(tiny), "-o", str(out / "tiny.split.onnx"), "--threshold", "0", "--quiet"],
              [out / "tiny.split.onnx", out / "tiny.split.onnx.data"])
    c.command("repack", [binary, "repack", str(tiny), "-o", str(out / "tiny.repacked.onnx"), "--threshold", "0",
                         "--quiet"], [out / "tiny.repacked.onnx", out / "tiny.repacked.onnx.data"])
    c.command("diff", [binary, "diff", str(tiny), str(tiny_copy)])
    c.command("diff changed", [binary, "diff", str(tiny), str(tiny_changed)], ok_codes=(1,))
    graph_commands(c, tiny, out, binary)
    c.command("safetensors", [binary, "export", str(tiny), "--to", "safetensors", "-o", str(out / "tiny.safetensors"),
                              "--quiet"], [out / "tiny.safetensors"])
    return c


def graph_commands(c: case, model: Path, out: Path, binary: str) -> None:
    """The commands that walk the graph rather than move bytes: analyze, optimize, convert."""
    c.command("analyze", [binary, "analyze", str(model), "--json"])
    c.command("optimize", [binary, "optimize", str(model), "-o", str(out / "optimized.onnx"), "--quiet"],
              [out / "optimized.onnx", out / "optimized.onnx.data"])
    c.command("convert", [binary, "convert", str(model), "--dtype", "fp16", "-o", str(out / "half.onnx"), "--quiet"],
              [out / "half.onnx", out / "half.onnx.data"])


def external_tiny_case(name: str, folder: Path, out: Path, binary: str) -> case:
    model = folder / "model.onnx"
    c = case(name, [model, folder / "model.onnx.data"], model.stat().st_size, False)
    c.command("inspect", [binary, "inspect", str(model), "--json"])
    c.command("verify", [binary, "verify", str(model), "--quiet"])
    c.command("merge", [binary, "merge", str(model), "-o", str(out / "tiny.merged.onnx"), "--quiet"],
              [out / "tiny.merged.onnx"])
    c.command("repack", [binary, "repack", str(model), "-o", str(out / "tiny.repacked.onnx"), "--threshold", "0",
                         "--quiet"], [out / "tiny.repacked.onnx", out / "tiny.repacked.onnx.data"])
    return c


def graph_case(name: str, graph: Path, out: Path, binary: str) -> case:
    c = case(name, [graph], graph.stat().st_size, False)
    c.command("inspect", [binary, "inspect", str(graph), "--json"])
    c.command("verify", [binary, "verify", str(graph), "--quiet"])
    c.command("split", [binary, "split", str(graph), "-o", str(out / "graph.split.onnx"), "--quiet"],
              [out / "graph.split.onnx", out / "graph.split.onnx.data"])
    c.command("diff", [binary, "diff", str(graph), str(graph)])
    graph_commands(c, graph, out, binary)
    return c


def packed_case(name: str, packed: Path, out: Path, binary: str) -> case:
    c = case(name, [packed], packed.stat().st_size, False)
    c.command("split", [binary, "split", str(packed), "-o", str(out / "int64.split.onnx"), "--quiet"],
              [out / "int64.split.onnx", out / "int64.split.onnx.data"])
    c.command("repack", [binary, "repack", str(packed), "-o", str(out / "int64.repacked.onnx"), "--quiet"],
              [out / "int64.repacked.onnx", out / "int64.repacked.onnx.data"])
    return c


def dims_case(name: str, dims: Path, out: Path, binary: str) -> case:
    c = case(name, [dims], dims.stat().st_size, False)
    c.command("inspect", [binary, "inspect", str(dims), "--json"])
    c.command("split", [binary, "split", str(dims), "-o", str(out / "dims.split.onnx"), "--quiet"],
              [out / "dims.split.onnx", out / "dims.split.onnx.data"])
    return c


def unknown_case(name: str, unknown: Path, other: Path, binary: str) -> case:
    c = case(name, [unknown, other], unknown.stat().st_size, False)
    c.command("diff", [binary, "diff", str(unknown), str(other)], ok_codes=(0, 1))
    c.command("inspect", [binary, "inspect", str(unknown), "--json"])
    return c


def budget(c: case) -> int:
    return 24 * MiB if c.weight_case else 2 * c.onnx_bytes + 32 * MiB


def run_all(cases: list[case]) -> list[dict]:
    records = []
    for c in cases:
        print(f"\n== {c.name} (.onnx {c.onnx_bytes / MiB:,.1f} MiB; budget {budget(c) / MiB:,.0f} MiB)", flush=True)
        for label, argv, outputs, caches, ok_codes in c.runs:
            for cache in caches:
                bench.remove(outputs)
                subprocess.run(["sync"], check=True)
                state = make_cold(c.inputs) if cache == "cold" else make_warm(c.inputs)
                sample = run_sampled(argv, ok_codes)
                bench.remove(outputs)
                record = {"case": c.name, "command": label, "cache": cache, "cache_state": state,
                          "onnx_bytes": c.onnx_bytes, "budget_bytes": budget(c), **sample}
                record["holds"] = sample["max_rss_bytes"] <= record["budget_bytes"]
                records.append(record)
                print(f"  {label:<12} {cache:<5} max RSS {bench.human_bytes(sample['max_rss_bytes']):>10}  "
                      f"anon {bench.human_bytes(sample['peak_rss_anon_bytes']):>10}  "
                      f"file {bench.human_bytes(sample['peak_rss_file_bytes']):>10}  {sample['wall_s']:.2f} s"
                      f"  [{state}]", flush=True)
    return records


def inspect_time(graph: Path, binary: str, runs: int = 5) -> float:
    walls = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        subprocess.run([binary, "inspect", str(graph), "--json"], stdout=subprocess.DEVNULL, check=True)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls[1:])


def table(records: list[dict]) -> str:
    head = f"{'case':<22} {'command':<12} {'cache':<5} {'max RSS':>10} {'RssAnon':>10} {'RssFile':>10} {'budget':>10} {'wall s':>7}"
    lines = [head, "-" * len(head)]
    for r in records:
        lines.append(f"{r['case']:<22} {r['command']:<12} {r['cache']:<5} {bench.human_bytes(r['max_rss_bytes']):>10} "
                     f"{bench.human_bytes(r['peak_rss_anon_bytes']):>10} {bench.human_bytes(r['peak_rss_file_bytes']):>10} "
                     f"{bench.human_bytes(r['budget_bytes']):>10} {r['wall_s']:>7.2f}" + ("" if r["holds"] else "  OVER"))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/onnxstream-bench"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--quick", action="store_true", help="the same cases at a sixteenth of the size")
    parser.add_argument("--only", help="run only the cases whose name contains this text")
    parser.add_argument("--keep", action="store_true", help="keep the generated models in --work")
    parser.add_argument("--history", type=Path, help="also keep this run here and chart the trend")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    binary = str(Path(args.binary).resolve())
    started = datetime.datetime.now(datetime.timezone.utc)
    meta = {"commit": bench.git("describe", "--always", "--dirty", "--abbrev=10"),
            "date": started.isoformat(timespec="seconds"), "machine": bench.machine(),
            "file_system": bench.file_system(args.work), "quick": args.quick,
            "sampling": "RssAnon/RssFile: peaks of /proc/PID/status sampled every ~1 ms (lower bounds); "
                        "max RSS: ru_maxrss from GNU time (exact)"}
    print(f"memory bench: {meta['commit']} on {meta['machine']['hostname']} ({meta['machine']['kernel']}), "
          f"load {meta['machine']['load_average']}")
    print("== generating inputs", flush=True)
    cases = build_cases(args, args.work, binary)
    try:
        records = run_all(cases)
        graphs = [c for c in cases if c.name.endswith("k-node graph")]  # the 200k one (12k with --quick)
        timing = None
        if graphs:
            timing = {"case": graphs[0].name, "command": "inspect --json", "median_wall_s": round(
                inspect_time(graphs[0].inputs[0], binary), 4), "limit_s": 0.05}
    finally:
        bench.remove([args.work / "out"])
    document = {"meta": meta, "records": records, "inspect_time": timing}
    print("\n" + table(records))
    if timing:
        print(f"\ninspect of the {timing['case']}: {timing['median_wall_s'] * 1000:.1f} ms median of 5 (limit 50 ms)")
    results = args.out / "memory.json"
    results.write_text(json.dumps(document, indent=1) + "\n")
    if args.history:
        args.history.mkdir(parents=True, exist_ok=True)
        stamp = started.strftime("%Y%m%dT%H%M%SZ")
        shutil.copyfile(results, args.history / f"{stamp}-{meta['commit']}.json")
    subprocess.run([sys.executable, str(HERE / "memory_dashboard.py"), str(results), str(args.out / "memory.html")]
                   + (["--history", str(args.history)] if args.history else []), check=True)
    print(f"\nwrote {results} and {args.out / 'memory.html'}")
    if not args.keep:
        for p in list(args.work.iterdir()):
            if p.name.startswith(("external-", "embedded-", "graph-", "tiny-", "int64-", "dims-", "unknown-", ".")):
                bench.remove([p])


if __name__ == "__main__":
    main()

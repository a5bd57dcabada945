"""scripts/bench.sh --tiny: the benchmark runs end to end on tiny inputs, so the script and
its dashboard cannot rot between the runs that publish figures. Checks that every command
the dashboard promises is measured against a peer or a budget, that the machine, the load,
the date and the commit are recorded, and that a run lands in history.jsonl and shows up
in the dashboard's per-row history."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("ONNXSTREAM_BIN", REPO / "build" / "onnxstream")).resolve()

# The first word of a case names its command; export, convert and quantize also by target.
COMMANDS = ["merge", "split", "repack", "optimize", "analyze", "inspect", "verify", "extract", "edit", "infer-shapes",
            "export 1MiB Gemm to caffe", "export 1MiB Gemm to safetensors", "convert 1MiB Gemm to fp16",
            "convert 1MiB Gemm to bf16", "quantize 1MiB Gemm to int8", "quantize 1MiB Gemm to int4",
            "merge 5k tiny external", "inspect 1GiB 7B-class (sparse)", "verify 1GiB 7B-class (sparse)",
            "optimize 10k-node compact graph", "analyze 10k-node compact graph", "infer-shapes 10k-node compact graph",
            "edit 10k-node compact graph"]


def test_bench_tiny_run(tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, ONNXSTREAM_BIN=str(BINARY), ONNXSTREAM_BEFORE_BIN=str(BINARY),
               ONNXSTREAM_BEFORE_LABEL="same binary")
    proc = subprocess.run(["bash", str(REPO / "scripts" / "bench.sh"), "--tiny", "--work", str(tmp_path / "work"),
                           "--out", str(out)], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    document = json.loads((out / "results.json").read_text())
    meta = document["meta"]
    for key in ("cpu", "cores", "memory_bytes", "kernel", "load_average", "load_average_after"):
        assert meta["machine"].get(key), key
    assert meta["date"] and meta["commit"] and meta["disk"] and meta["size"] == "tiny"

    records = document["records"]
    cases = {r["case"] for r in records}
    for command in COMMANDS:
        assert any(c == command or c.split()[0] == command for c in cases), command
    for case in cases:
        rows = [r for r in records if r["case"] == case]
        ours = next(r for r in rows if r["tool"] == "onnxstream")
        assert ours["peak_rss_bytes"] > 0 and ours["wall_s"] > 0, case
        # a peer measured in the same run, or the memory budget
        assert len(rows) > 1 or ours.get("budget_bytes"), case
    assert any(r["tool"] == "before" for r in records)
    assert any(r["tool"] == "no-simd" for r in records)
    assert any(r["tool"] == "python-onnx" for r in records)
    assert not list((tmp_path / "work").glob("*-external-*")), "generated models are removed without --keep"

    # history: one line per run; a second line makes every row show its history
    history = (out / "history.jsonl").read_text().splitlines()
    assert len(history) == 1 and json.loads(history[0])["meta"]["date"] == meta["date"]
    earlier = json.loads(history[0])
    earlier["meta"]["date"] = "2000-01-01T00:00:00+00:00"
    with open(out / "history.jsonl", "a") as handle:
        handle.write(json.dumps(earlier) + "\n")
    subprocess.run(["/usr/bin/python3", str(REPO / "scripts" / "bench" / "dashboard.py"), str(out / "results.json"),
                    str(out / "again.html"), "--history-file", str(out / "history.jsonl")], check=True)
    page = (out / "again.html").read_text()
    assert page.count("2 runs; before:") == len(records)
    assert "load average before" in page and meta["machine"]["cpu"] in page

"""The Windows build writes the same bytes as the Linux build.

Runs only against the Windows binary (ONNXSTREAM_BIN=...onnxstream.exe with
ONNXSTREAM_WRAPPER=wine, as scripts/test_windows.sh does), with the Linux binary named by
ONNXSTREAM_LINUX_BIN: merge, split and repack run on the same copies of each good case
with the same options through both, and every output file must be byte-identical (names
included), through both Windows writers.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import cases
import refcheck
from cases import copy_case, model_path
from refcheck import describe

LINUX_BIN = os.environ.get("ONNXSTREAM_LINUX_BIN", "")

pytestmark = pytest.mark.skipif(
    not refcheck.windows_binary() or not Path(LINUX_BIN).is_file(),
    reason="compares the Windows build (under wine) with the Linux one: set ONNXSTREAM_BIN to the .exe "
           "and ONNXSTREAM_LINUX_BIN to the Linux binary (scripts/test_windows.sh)")


def outputs(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def run_both(tmp: Path, case: dict, command: list[str], writer: str) -> None:
    results = {}
    for side in ("linux", "windows"):
        root = tmp / side
        copy_case(case, root)
        model = model_path(case, root)
        out = root / "out"
        out.mkdir()
        args = [command[0], str(model), "-o", str(out / "result.onnx"), *command[1:]]
        if side == "linux":
            proc = subprocess.run([LINUX_BIN, *args], capture_output=True, text=True, errors="replace",
                                  stdin=subprocess.DEVNULL, timeout=600)
        else:
            env = dict(os.environ, ONNXSTREAM_WRITER=writer)
            proc = subprocess.run([*refcheck.command_prefix(), str(refcheck.binary_path()), *args], capture_output=True,
                                  text=True, errors="replace", stdin=subprocess.DEVNULL, timeout=600, env=env)
        assert proc.returncode == 0, f"{side}:" + describe(proc)
        results[side] = outputs(out)
    assert sorted(results["windows"]) == sorted(results["linux"])
    for name, content in results["linux"].items():
        assert results["windows"][name] == content, f"{name} differs between the Linux and Windows builds"


# The overlapped writer (the default on Windows) on every command; the portable one on
# merge and a repack that hashes and dedupes (its read-hash-write path).
RUNS = [(["merge"], "overlapped"), (["split", "--threshold", "1024"], "overlapped"),
        (["repack", "--align", "4096", "--write-checksums", "--dedupe"], "overlapped"),
        (["merge"], "portable"), (["repack", "--write-checksums", "--dedupe"], "portable")]


# A chosen set of cases keeps the wine stage short: one data file, one file per tensor,
# checksums, every kind of tensor field, 16-bit types, a subgraph, and two real models.
CASES = ["one_file", "per_tensor", "checksum_ok", "everywhere", "fp16_uint8", "if_subgraph", "resnet18",
         "mobilenet_v2_embedded"]


@pytest.mark.parametrize("command,writer", RUNS, ids=[f"{c[0]}-{'-'.join(c[1:])}-{w}" for c, w in RUNS])
@pytest.mark.parametrize("case_name", CASES)
def test_same_bytes_as_linux(case_name, command, writer, tmp_path):
    case = cases.case_named(case_name)
    if case.get("needs_args"):
        pytest.skip("the case needs --data arguments; the plain cases cover the writers")
    run_both(tmp_path, case, command, writer)

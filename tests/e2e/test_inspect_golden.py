"""`onnxstream inspect` output, byte for byte, against checked-in golden files.

test_inspect.py checks what inspect says against python-onnx; this test pins how it says
it, so that moving or rewriting the renderers (text and JSON) cannot change a byte unseen.
Each case runs inspect on a copy of a fixture, from the copy's folder with relative paths,
and compares stdout (and stderr, when there is any) with tests/data/golden/inspect_<case>.*.

The fixtures are deterministic: scripts/make_fixtures.py builds them with python-onnx from
seeded generators, and the torchvision export (resnet18) is seeded too and gives the same
bytes on every run. The hostile-strings model is built here by test_model_semantics.py's
hostile_model.

Normalized before comparing: the absolute path of the folder the fixtures were copied to
(inspect prints the absolute path of a data file found next to the model, and every place
it looked in) becomes `<root>`. Nothing else is machine-specific in inspect's output.

Regenerate after an intended change (then review the diff of tests/data/golden/):
    ONNXSTREAM_UPDATE_GOLDEN=1 ctest --test-dir build -R 'e2e.test_inspect_golden$'
"""
from __future__ import annotations

import difflib
import os
import subprocess
from pathlib import Path

import pytest

import cases
import refcheck
from test_model_semantics import hostile_model

GOLDEN = refcheck.REPO_ROOT / "tests" / "data" / "golden"
UPDATE = os.environ.get("ONNXSTREAM_UPDATE_GOLDEN") == "1"

# golden name -> (fixture case, or "hostile"; extra arguments, paths relative to the copy).
CASES = {
    "embedded": ("embedded", []),
    "embedded_json": ("embedded", ["--json"]),
    "one_file": ("one_file", []),
    "one_file_json": ("one_file", ["--json"]),
    "per_tensor": ("per_tensor", []),
    "data_dir": ("data_dir", ["--data-dir", "data_dir/weights_dir"]),
    "multi_data_flags": ("multi_data_flags", ["--data", "multi_data_flags/elsewhere/first.bin",
                                              "--data", "multi_data_flags/elsewhere/second.bin"]),
    "hf_cache": ("hf_cache", []),
    "if_subgraph": ("if_subgraph", []),
    "typed_fields": ("typed_fields", []),
    "fp16_uint8": ("fp16_uint8", []),
    "unknown_fields": ("unknown_fields", []),
    "resnet18": ("resnet18", []),
    "resnet18_json": ("resnet18", ["--json"]),
    "missing_data": ("bad_missing_data", []),
    "missing_data_json": ("bad_missing_data", ["--json"]),
    "over_2gb": ("bad_over_2gb", []),
    "hostile": ("hostile", []),
    "hostile_json": ("hostile", ["--json"]),
}


def prepare(source: str, root: Path) -> str:
    """Puts the model under root; returns its path relative to root."""
    if source == "hostile":
        folder = root / "hostile"
        folder.mkdir(parents=True)
        return hostile_model(folder).relative_to(root).as_posix()
    case = cases.case_named(source)
    cases.copy_case(case, root)
    return case["model"]


def normalize(output: bytes, root: Path) -> bytes:
    for spelling in {str(root.resolve()), str(root)}:
        output = output.replace(os.fsencode(spelling), b"<root>")
    return output


def compare(name: str, got: bytes) -> None:
    path = GOLDEN / name
    if UPDATE:
        if got:
            GOLDEN.mkdir(parents=True, exist_ok=True)
            path.write_bytes(got)
        elif path.exists():
            path.unlink()
        return
    expected = path.read_bytes() if path.exists() else b""
    if got == expected:
        return
    diff = difflib.unified_diff(expected.decode("utf-8", "backslashreplace").splitlines(True),
                                got.decode("utf-8", "backslashreplace").splitlines(True),
                                f"golden/{name}", "inspect output")
    pytest.fail(f"output differs from tests/data/golden/{name} (intended? regenerate with "
                f"ONNXSTREAM_UPDATE_GOLDEN=1 and review the diff):\n" + "".join(diff)[:8000],
                pytrace=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_inspect_output_matches_golden(name, workdir, onnxstream):
    source, extra = CASES[name]
    workdir.mkdir(parents=True)
    model = prepare(source, workdir)
    proc = subprocess.run([str(onnxstream), "inspect", model, *extra], cwd=workdir, capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode == 0, f"inspect exited {proc.returncode}:\n{proc.stderr.decode(errors='replace')}"
    suffix = ".json" if "--json" in extra else ".txt"
    compare(f"inspect_{name}{suffix}", normalize(proc.stdout, workdir))
    compare(f"inspect_{name}.stderr.txt", normalize(proc.stderr, workdir))


def test_every_golden_file_has_a_case():
    """A golden file left behind by a removed case would pin nothing: refuse it."""
    expected = set()
    for name, (_, extra) in CASES.items():
        expected |= {f"inspect_{name}{'.json' if '--json' in extra else '.txt'}", f"inspect_{name}.stderr.txt"}
    stray = sorted(p.name for p in GOLDEN.glob("inspect_*") if p.name not in expected)
    assert not stray, f"golden files without a case in test_inspect_golden.py: {stray}"

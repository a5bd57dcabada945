"""Finding external data safely and honestly (DESIGN.md "Finding external data"): links
out of the model's folder are refused on the real path of what was opened (also while a
link is being flipped), the Hugging Face cache layout works at any depth and only with a
real blobs/ folder, every guess is loud (verify fails on it, --strict refuses it, a guess
that does not fit is not taken), thousands of data files open under a low soft limit.
Section 6: the page server (`onnxstream gui`) over raw sockets, as a hostile client talks to it.

Models are built here with python-onnx; merged outputs are read back with python-onnx."""
from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import cases
import refcheck
from refcheck import describe, run_cli

SECRET = b"TOP-SECRET-BYTES" * 8  # 128 bytes: as long as the tensor below


def weights(seed: int, shape=(4, 8)) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def write_model(path: Path, tensors: dict[str, tuple[np.ndarray, str]], checksum: bool = False) -> None:
    """A model whose graph adds each initializer to an input; each tensor is external at
    the given location (offset 0 unless several share a file, then in order)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    inits, nodes, outputs, offsets = [], [], [], {}
    for i, (name, (array, location)) in enumerate(tensors.items()):
        t = numpy_helper.from_array(array, name)
        raw = t.raw_data
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        offset = offsets.get(location, 0)
        offsets[location] = offset + len(raw)
        entries = {"location": location, "offset": str(offset), "length": str(len(raw))}
        if checksum:
            entries["checksum"] = hashlib.sha1(raw).hexdigest()
        for k, v in entries.items():
            e = t.external_data.add()
            e.key, e.value = k, v
        inits.append(t)
        nodes.append(helper.make_node("Add", ["x", name], [f"y{i}"]))
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, list(array.shape)))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])], outputs,
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())


def data_bytes(*arrays: np.ndarray) -> bytes:
    return b"".join(a.tobytes() for a in arrays)


def merged_values(path: Path) -> dict[str, np.ndarray]:
    m = onnx.load(str(path))
    for t in m.graph.initializer:
        assert t.data_location != TensorProto.EXTERNAL, f"{t.name} still external in {path}"
    return {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}


def all_bytes_under(folder: Path) -> bytes:
    out = b""
    for p in folder.rglob("*"):
        if p.is_file() and not p.is_symlink():
            out += p.read_bytes()
    return out


# ---------------------------------------------------------------------------------------
# 1. The Hugging Face rule trusts only a real blobs/ folder inside the repository.

def test_hub_blobs_that_is_a_link_is_not_trusted(tmp_path, onnxstream):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.bin").write_bytes(SECRET)
    repo = tmp_path / "hub" / "models--evil--x"
    snapshot = repo / "snapshots" / "rev"
    write_model(snapshot / "model.onnx", {"w": (weights(1), "model.onnx.data")})
    (repo / "blobs").symlink_to(outside, target_is_directory=True)  # blobs -> outside the repository
    (snapshot / "model.onnx.data").symlink_to("../../blobs/secret.bin")
    out = tmp_path / "out.onnx"
    proc = run_cli(["merge", snapshot / "model.onnx", "-o", out])
    assert proc.returncode == 1, describe(proc)
    cases.assert_error_with_hint(proc)
    assert "refusing" in proc.stderr and "secret.bin" in proc.stderr, describe(proc)
    assert not out.exists()
    for command in ("inspect", "verify"):
        proc = run_cli([command, snapshot / "model.onnx", "--json"])
        assert SECRET[:16].decode() not in proc.stdout
    proc = run_cli(["verify", snapshot / "model.onnx"])
    assert proc.returncode == 1 and "refusing" in proc.stdout + proc.stderr, describe(proc)


def test_hub_blobs_link_to_root_is_not_trusted(tmp_path, onnxstream):
    """The report's case: blobs -> /, the data link -> ../../blobs/etc/passwd."""
    repo = tmp_path / "models--evil--root"
    snapshot = repo / "snapshots" / "rev"
    write_model(snapshot / "model.onnx", {"w": (np.zeros((2, 2), np.float32), "model.onnx.data")})
    (repo / "blobs").symlink_to("/", target_is_directory=True)
    (snapshot / "model.onnx.data").symlink_to("../../blobs/etc/passwd")
    out = tmp_path / "out.onnx"
    proc = run_cli(["merge", snapshot / "model.onnx", "-o", out])
    assert proc.returncode == 1, describe(proc)
    assert "refusing" in proc.stderr, describe(proc)
    assert not out.exists()


# ---------------------------------------------------------------------------------------
# 3. The real hub layout: ONNX files in a subfolder of the snapshot.

def make_hub_at_depth(root: Path) -> tuple[Path, Path, dict[str, np.ndarray]]:
    repo = root / "models--org--deep"
    blobs = repo / "blobs"
    onnx_dir = repo / "snapshots" / "0123abcd" / "onnx"
    w, v = weights(2), weights(3)
    staging = root / "staging"
    write_model(staging / "model.onnx", {"w": (w, "model.onnx_data"), "v": (v, "model.onnx_data")})
    blobs.mkdir(parents=True)
    model_sha = hashlib.sha256((staging / "model.onnx").read_bytes()).hexdigest()
    data = data_bytes(w, v)
    data_sha = hashlib.sha256(data).hexdigest()
    (staging / "model.onnx").rename(blobs / model_sha)
    (blobs / data_sha).write_bytes(data)
    onnx_dir.mkdir(parents=True)
    (onnx_dir / "model.onnx").symlink_to(f"../../../blobs/{model_sha}")
    (onnx_dir / "model.onnx_data").symlink_to(f"../../../blobs/{data_sha}")
    return onnx_dir / "model.onnx", blobs, {"w": w, "v": v}


def test_hub_layout_at_any_depth(tmp_path, onnxstream):
    model, blobs, expected = make_hub_at_depth(tmp_path)
    proc = run_cli(["verify", model])
    assert proc.returncode == 0, describe(proc)
    proc = run_cli(["inspect", model])
    assert proc.returncode == 0 and "needs 256 B" in proc.stdout, describe(proc)
    out = tmp_path / "merged.onnx"
    proc = run_cli(["merge", model, "-o", out])
    assert proc.returncode == 0, describe(proc)
    got = merged_values(out)
    for name, array in expected.items():
        np.testing.assert_array_equal(got[name], array)
    proc = run_cli(["diff", model, out])
    assert proc.returncode == 0, describe(proc)
    # --data-dir on the blobs folder works too (it was refused before the flag was read).
    out2 = tmp_path / "merged2.onnx"
    proc = run_cli(["merge", model, "--data-dir", blobs, "-o", out2])
    assert proc.returncode == 0, describe(proc)
    assert out2.read_bytes() == out.read_bytes()


def test_data_dir_is_trusted_as_a_link_target(tmp_path, onnxstream):
    """Not a hub layout: the model's folder links into a store the user names with --data-dir."""
    store = tmp_path / "store"
    store.mkdir()
    w = weights(4)
    (store / "abc123").write_bytes(w.tobytes())
    model = tmp_path / "models" / "model.onnx"
    write_model(model, {"w": (w, "model.onnx.data")})
    (model.parent / "model.onnx.data").symlink_to(store / "abc123")
    proc = run_cli(["verify", model])
    assert proc.returncode == 1 and "refusing" in proc.stdout + proc.stderr, describe(proc)
    proc = run_cli(["inspect", model, "--data-dir", store])
    assert proc.returncode == 0 and "needs 128 B" in proc.stdout, describe(proc)
    proc = run_cli(["verify", model, "--data-dir", store])
    assert proc.returncode == 0, describe(proc)
    out = tmp_path / "m.onnx"
    proc = run_cli(["merge", model, "--data-dir", store, "-o", out])
    assert proc.returncode == 0, describe(proc)
    np.testing.assert_array_equal(merged_values(out)["w"], w)


# ---------------------------------------------------------------------------------------
# 2. A link flipped between the check and the open never lets outside bytes through.

FLIPPER = r"""
import os, sys
link, inside, outside, stop = sys.argv[1:5]
tmp = link + ".tmp"
n = 0
while not os.path.exists(stop):
    target = inside if n % 2 == 0 else outside
    try:
        os.symlink(target, tmp)
        os.replace(tmp, link)
    except FileExistsError:
        os.unlink(tmp)
    n += 1
"""


def strace_delays() -> list[str]:
    """A prefix that delays every openat by 5 ms (strace's fault injection), so that the
    flipper flips the link many times between any check and any open: a check-then-open
    of the name leaks in about one run of five. Empty when strace cannot trace here."""
    if shutil.which("strace") is None:
        return []
    probe = subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "true"], capture_output=True)
    if probe.returncode != 0:
        return []
    prefix = ["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=openat", "-e", "inject=openat:delay_enter=5000"]
    if refcheck.sanitized():
        # LeakSanitizer stops a traced process ("LeakSanitizer has encountered a fatal
        # error": it needs ptrace itself); the address and undefined checks stay.
        options = os.environ.get("ASAN_OPTIONS", "")
        prefix += ["-E", f"ASAN_OPTIONS={options}{':' if options else ''}detect_leaks=0"]
    return prefix


def test_flipping_link_never_leaks_outside_bytes(tmp_path, onnxstream):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.bin").write_bytes(SECRET)
    folder = tmp_path / "model"
    w = weights(5)
    write_model(folder / "model.onnx", {"w": (w, "w.bin")})
    (folder / "good.bin").write_bytes(w.tobytes())
    link = folder / "w.bin"
    link.symlink_to("good.bin")
    stop = tmp_path / "stop"
    prefix = strace_delays()
    runs = 40 if prefix else 300
    flipper = subprocess.Popen([sys.executable, "-c", FLIPPER, str(link), "good.bin", str(outside / "secret.bin"),
                                str(stop)])
    accepted = refused = 0
    deadline = time.monotonic() + 15
    try:
        for i in range(runs):
            if time.monotonic() > deadline:
                break
            out = tmp_path / "outs" / f"{i}.onnx"
            out.parent.mkdir(exist_ok=True)
            cmd = [*prefix, str(refcheck.binary_path()), "merge", str(folder / "model.onnx"), "-o", str(out)]
            proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=60,
                                  stdin=subprocess.DEVNULL)
            if proc.returncode == 0:
                accepted += 1
                assert SECRET[:16] not in out.read_bytes(), f"merge {i} inlined the outside file" + describe(proc)
                np.testing.assert_array_equal(merged_values(out)["w"], w)
                out.unlink()
            else:
                refused += 1
                assert proc.returncode == 1, describe(proc)
                assert "refusing" in proc.stderr or "replaced while being opened" in proc.stderr, describe(proc)
                assert not out.exists()
    finally:
        stop.touch()
        flipper.wait(timeout=10)
    # Both outcomes are expected, but a flipper starved of CPU on a loaded machine may
    # leave the link still for a whole run: only the leak is a failure.
    assert accepted > 0, f"{accepted} accepted, {refused} refused"


# ---------------------------------------------------------------------------------------
# 4. Guesses are loud, checked, and refused by --strict.

@pytest.fixture
def renamed_split(tmp_path, onnxstream) -> tuple[Path, Path]:
    """A model split by onnxstream, then its data file renamed to <stem>.data."""
    original = tmp_path / "orig" / "model.onnx"
    w, v = weights(6, (32, 32)), weights(7, (32, 32))
    write_model(original, {"w": (w, "x.bin"), "v": (v, "x.bin")})
    (original.parent / "x.bin").write_bytes(data_bytes(w, v))
    merged = tmp_path / "orig" / "embedded.onnx"
    proc = run_cli(["merge", original, "-o", merged])
    assert proc.returncode == 0, describe(proc)
    split = tmp_path / "split" / "model.onnx"
    split.parent.mkdir()
    proc = run_cli(["split", merged, "-o", split])
    assert proc.returncode == 0, describe(proc)
    data = split.parent / "model.onnx.data"
    assert data.is_file(), describe(proc)
    data.rename(split.parent / "model.data")
    return merged, split


def assert_guess_warning(proc, what: str) -> None:
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("onnxstream: warning:")]
    assert any("model.data" in line and "guessed" in line for line in warnings), (
        f"{what}: no warning naming the guessed file" + describe(proc))


def test_renamed_data_file_is_a_loud_guess(renamed_split, tmp_path):
    merged, split = renamed_split
    # python-onnx cannot load it: the location does not resolve as written.
    with pytest.raises(Exception):
        onnx.load(str(split))

    proc = run_cli(["verify", split])
    assert proc.returncode == 1, describe(proc)
    assert "does not resolve as written" in proc.stdout and "ONNX Runtime will not find it" in proc.stdout, describe(proc)
    assert "--data" in proc.stdout and "merge" in proc.stdout, "verify should say how to fix it" + describe(proc)
    doc = refcheck_json(["verify", split, "--json"], 1)
    assert not doc["ok"] and any(p["check"] == "data" and "as written" in p["message"] for p in doc["problems"])
    assert [f["guessed"] for f in doc["files"]] == [True]

    out = tmp_path / "guessed.merged.onnx"
    proc = run_cli(["merge", split, "-o", out])
    assert proc.returncode == 0, describe(proc)
    assert_guess_warning(proc, "merge")
    refcheck.assert_same_tensors(merged, out)

    strict_out = tmp_path / "strict.onnx"
    proc = run_cli(["merge", split, "--strict", "-o", strict_out])
    assert proc.returncode == 1, describe(proc)
    cases.assert_error_with_hint(proc)
    assert "--strict" in proc.stderr and "model.data" in proc.stderr, describe(proc)
    assert not strict_out.exists()

    proc = run_cli(["inspect", split])
    assert proc.returncode == 0, describe(proc)
    assert_guess_warning(proc, "inspect")
    doc = refcheck_json(["inspect", split, "--json"], 0)
    assert any("guessed" in w for w in doc["warnings"])
    assert [f["guessed"] for f in doc["external_data"]] == [True]

    proc = run_cli(["diff", merged, split])
    assert proc.returncode == 0, describe(proc)
    assert_guess_warning(proc, "diff")

    proc = run_cli(["analyze", split])
    assert proc.returncode == 0, describe(proc)
    assert_guess_warning(proc, "analyze")

    proc = run_cli(["repack", split, "-o", tmp_path / "repacked.onnx"])
    assert proc.returncode == 0, describe(proc)
    assert_guess_warning(proc, "repack")
    proc = run_cli(["repack", split, "--strict", "-o", tmp_path / "strict-repack.onnx"])
    assert proc.returncode == 1, describe(proc)


def refcheck_json(args, status: int) -> dict:
    import json
    proc = run_cli(args)
    assert proc.returncode == status, describe(proc)
    return json.loads(proc.stdout)


def test_guess_that_does_not_fit_is_not_taken(tmp_path, onnxstream):
    """Another model's weights under a common name: too short, or the wrong bytes for a
    checksum, are not taken; the error lists what was tried and why."""
    folder = tmp_path / "m"
    w = weights(8)
    write_model(folder / "model.onnx", {"w": (w, "model.onnx.data")}, checksum=True)
    (folder / "model.data").write_bytes(w.tobytes()[:64])  # too short
    proc = run_cli(["merge", folder / "model.onnx", "-o", tmp_path / "a.onnx"])
    assert proc.returncode == 1, describe(proc)
    assert "not taken" in proc.stderr and "128" in proc.stderr, describe(proc)
    assert not (tmp_path / "a.onnx").exists()

    (folder / "model.data").write_bytes(weights(9).tobytes())  # right size, other bytes
    proc = run_cli(["merge", folder / "model.onnx", "-o", tmp_path / "b.onnx"])
    assert proc.returncode == 1, describe(proc)
    assert "not taken" in proc.stderr and "checksum" in proc.stderr, describe(proc)
    proc = run_cli(["verify", folder / "model.onnx"])
    assert proc.returncode == 1, describe(proc)

    (folder / "model.data").write_bytes(w.tobytes())  # the right bytes: taken, loudly
    proc = run_cli(["merge", folder / "model.onnx", "-o", tmp_path / "c.onnx"])
    assert proc.returncode == 0, describe(proc)
    assert_guess_warning(proc, "merge")
    np.testing.assert_array_equal(merged_values(tmp_path / "c.onnx")["w"], w)


def test_as_written_and_user_given_are_not_guesses(tmp_path, onnxstream):
    folder = tmp_path / "m"
    w = weights(10)
    write_model(folder / "model.onnx", {"w": (w, "model.onnx.data")})
    (tmp_path / "elsewhere.bin").write_bytes(w.tobytes())
    for extra in (["--data", tmp_path / "elsewhere.bin"],):
        proc = run_cli(["verify", folder / "model.onnx", *extra])
        assert proc.returncode == 0, describe(proc)
        assert "warning" not in proc.stderr, describe(proc)
    (folder / "model.onnx.data").write_bytes(w.tobytes())
    proc = run_cli(["merge", folder / "model.onnx", "--strict", "-o", tmp_path / "o.onnx"])
    assert proc.returncode == 0 and "warning" not in proc.stderr, describe(proc)


def write_conv_with_guessed_data(folder: Path) -> Path:
    """A Conv every command can handle (Caffe export included) whose weight is external at
    w.bin, though the bytes are in model.onnx.data: found only by a guess (a common name)."""
    folder.mkdir(parents=True)
    w = weights(12, (4, 3, 3, 3))
    t = numpy_helper.from_array(w, "w")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in {"location": "w.bin", "offset": "0", "length": str(w.nbytes)}.items():
        e = t.external_data.add()
        e.key, e.value = k, v
    b = numpy_helper.from_array(weights(13, (4,)), "b")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], initializer=[t, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    (folder / "model.onnx").write_bytes(model.SerializeToString())
    (folder / "model.onnx.data").write_bytes(w.tobytes())
    return folder / "model.onnx"


def test_several_candidates_are_named_with_which_fit(tmp_path, onnxstream):
    """Issue 30.13: "there are several" data files named none of them. Now each is listed
    with whether it holds what the tensors need, and a path with a space is quoted in the
    flag the hint offers ("--data .../resnet18.onnx (1).data" broke on the space)."""
    folder = tmp_path / "m"
    w = weights(14)
    write_model(folder / "model.onnx", {"w": (w, "weights.bin")})
    fits = folder / "model.onnx (1).data"
    fits.write_bytes(w.tobytes())
    (folder / "other.data").write_bytes(w.tobytes()[:16])
    proc = run_cli(["merge", folder / "model.onnx", "-o", tmp_path / "o.onnx"])
    assert proc.returncode == 1, describe(proc)
    assert "model.onnx (1).data fits" in proc.stderr, describe(proc)
    assert "other.data does not fit: it is 16 bytes, the tensors need 128" in proc.stderr, describe(proc)
    assert not (tmp_path / "o.onnx").exists()

    (folder / "other.data").unlink()  # the only one left: taken by a guess, and the hint quotes it
    proc = run_cli(["merge", folder / "model.onnx", "-o", tmp_path / "o.onnx"])
    assert proc.returncode == 0, describe(proc)
    assert f"--data '{fits}'" in proc.stderr, describe(proc)


# Every command that reads a model, with the arguments after MODEL and its exit status on
# an error (diff's trouble is 2, as cmp's). {out} is an output path in the test's folder.
MODEL_COMMANDS = {
    "inspect": ([], 1),
    "verify": ([], 1),
    "analyze": ([], 1),
    "diff": (["{model}"], 2),
    "merge": (["-o", "{out}.onnx"], 1),
    "split": (["-o", "{out}.onnx"], 1),
    "repack": (["-o", "{out}.onnx"], 1),
    "optimize": (["-o", "{out}.onnx"], 1),
    "convert": (["--dtype", "fp16", "-o", "{out}.onnx"], 1),
    "export-caffe": (["--to", "caffe", "-o", "{out}"], 1),
    "export-safetensors": (["--to", "safetensors", "-o", "{out}.safetensors"], 1),
    "edit": (["--producer", "edited", "-o", "{out}.onnx"], 1),
}


@pytest.mark.parametrize("name", MODEL_COMMANDS)
def test_strict_refuses_a_guess_in_every_command(tmp_path, onnxstream, name):
    """--strict is one of the options every command opens its model with: none may take a
    guessed data file with it (convert and both exports once did, exit 0)."""
    model = write_conv_with_guessed_data(tmp_path / "m")
    extra, error_status = MODEL_COMMANDS[name]
    command = name.split("-")[:1]

    def args(out: str) -> list:
        return [*command, model, *(a.format(model=model, out=tmp_path / out) for a in extra)]

    proc = run_cli([*args("taken"), "--quiet"])  # the guess fits: taken, loudly
    assert proc.returncode == 0 if name != "verify" else proc.returncode == 1, describe(proc)
    said = proc.stderr + (proc.stdout if name == "verify" else "")  # verify's report is on stdout
    assert "model.onnx.data" in said and "guess" in said, describe(proc)
    if name == "verify":  # the data is whole: it needs a name, not a download (issue 30.13)
        assert "fetch damaged" not in proc.stderr and "rename the file" in proc.stderr, describe(proc)

    before = cases.snapshot(tmp_path / "m")
    proc = run_cli([*args("strict"), "--strict"])
    assert proc.returncode == error_status, describe(proc)
    cases.assert_error_with_hint(proc)
    assert "model.onnx.data" in proc.stderr and "--strict" in proc.stderr, describe(proc)
    assert not list(tmp_path.glob("strict*")), "output written though the data was refused" + describe(proc)
    cases.assert_unchanged(before, cases.snapshot(tmp_path / "m"), f"{name} --strict")


# ---------------------------------------------------------------------------------------
# 16. A location that names a folder.

def test_location_with_trailing_slash(tmp_path, onnxstream):
    folder = tmp_path / "m"
    write_model(folder / "model.onnx", {"w": (weights(11), "weights.data/")})
    (folder / "weights.data").mkdir()
    for command in ("merge", "verify", "inspect"):
        proc = run_cli([command, folder / "model.onnx"])
        text = proc.stdout + proc.stderr
        assert "weights.data/' ends with a separator" in text, describe(proc)
        assert f"{folder}/ is a directory" not in text, describe(proc)
    proc = run_cli(["merge", folder / "model.onnx"])
    assert proc.returncode == 1, describe(proc)
    cases.assert_error_with_hint(proc)


def test_location_naming_a_folder(tmp_path, onnxstream):
    folder = tmp_path / "m"
    write_model(folder / "model.onnx", {"w": (weights(12), "weights.data")})
    (folder / "weights.data").mkdir()
    (folder / "model.data").write_bytes(weights(12).tobytes())  # a guess must not hide it
    proc = run_cli(["merge", folder / "model.onnx"])
    assert proc.returncode == 1, describe(proc)
    assert "'weights.data' is a directory" in proc.stderr, describe(proc)


# ---------------------------------------------------------------------------------------
# 14. One data file per tensor, more files than the soft limit on open files.

def many_files_model(folder: Path, count: int) -> dict[str, np.ndarray]:
    tensors, expected = {}, {}
    for i in range(count):
        a = np.full((2,), i, np.float32)
        tensors[f"t{i}"] = (a, f"t{i}.bin")
        expected[f"t{i}"] = a
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"t{i}.bin").write_bytes(a.tobytes())
    # A single Concat-free graph: each initializer is a graph output through Identity.
    inits, nodes, outputs = [], [], []
    for name, (a, location) in tensors.items():
        t = numpy_helper.from_array(a, name)
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        e = t.external_data.add()
        e.key, e.value = "location", location
        inits.append(t)
        nodes.append(helper.make_node("Identity", [name], [f"o_{name}"]))
        outputs.append(helper.make_tensor_value_info(f"o_{name}", TensorProto.FLOAT, [2]))
    graph = helper.make_graph(nodes, "g", [], outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    (folder / "model.onnx").write_bytes(model.SerializeToString())
    return expected


def run_limited(args, soft: int, hard: int | None = None) -> subprocess.CompletedProcess:
    def limit():
        current_hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, current_hard if hard is None else hard))
    cmd = [str(refcheck.binary_path()), *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=120,
                          stdin=subprocess.DEVNULL, preexec_fn=limit)
    assert proc.returncode >= 0, f"died by signal {-proc.returncode}" + describe(proc)
    return proc


def test_many_data_files_under_a_low_soft_limit(tmp_path, onnxstream):
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 1024:
        pytest.skip(f"the hard limit on open files is {hard}")
    folder = tmp_path / "m"
    expected = many_files_model(folder, 600)
    out = tmp_path / "merged.onnx"
    proc = run_limited(["merge", folder / "model.onnx", "-o", out], soft=256)
    assert proc.returncode == 0, describe(proc)
    got = merged_values(out)
    assert len(got) == len(expected)
    for name, a in expected.items():
        np.testing.assert_array_equal(got[name], a)
    for command in ("verify", "inspect"):
        proc = run_limited([command, folder / "model.onnx"], soft=256)
        assert proc.returncode == 0, describe(proc)


@pytest.mark.skipif(refcheck.sanitized(), reason="UBSan's vptr check needs a free file descriptor (a pipe) to test "
                    "whether memory is readable; with none left it reports libstdc++'s system_category and halts")
def test_many_data_files_under_a_low_hard_limit_fail_cleanly(tmp_path, onnxstream):
    folder = tmp_path / "m"
    many_files_model(folder, 600)
    out = tmp_path / "merged.onnx"
    proc = run_limited(["merge", folder / "model.onnx", "-o", out], soft=256, hard=256)
    assert proc.returncode == 1, describe(proc)
    cases.assert_error_with_hint(proc)
    assert "ulimit -n" in proc.stderr, describe(proc)
    assert not out.exists()


# ---------------------------------------------------------------------------------------
# 6. The page server (`onnxstream gui`) over raw HTTP: who it answers, decided before a byte
#    of a body is read; stalled clients; ranges (issue 29 items 3-6 and 8).

GUI_MODULE = "onnxstream-gui.so"


@pytest.fixture(scope="module")
def page_server(tmp_path_factory):
    """`onnxstream gui` on a folder with one 1000-byte file, on a free port."""
    if refcheck.windows_binary() or not (refcheck.binary_path().parent / GUI_MODULE).is_file():
        pytest.skip("this build has no gui")
    root = tmp_path_factory.mktemp("page")
    (root / "bytes.bin").write_bytes(bytes(range(250)) * 4)
    proc = subprocess.Popen([str(refcheck.binary_path()), "gui", str(root), "--no-browser"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:") and "/#token=" in url, url
    port = int(url.split(":")[2].split("/")[0])
    yield {"proc": proc, "port": port, "token": url.split("#token=")[1], "root": root}
    proc.terminate()
    proc.wait(timeout=30)


def raw_connect(port: int, timeout: float = 10):
    import socket
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


def raw_answer(sock, timeout: float = 10) -> tuple[int, dict[str, str], bytes]:
    """Reads one answer until the server closes the connection: status, headers, body."""
    sock.settimeout(timeout)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].startswith("HTTP/1.1 "), data[:200]
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body


def raw_request(page_server, head: str, body: bytes = b"", timeout: float = 10):
    sock = raw_connect(page_server["port"])
    try:
        sock.sendall(head.encode() + body)
        return raw_answer(sock, timeout)
    finally:
        sock.close()


def head_for(page_server, method: str, target: str, token: bool = True, extra: str = "") -> str:
    lines = [f"{method} {target} HTTP/1.1", f"Host: 127.0.0.1:{page_server['port']}"]
    if token:
        lines.append(f"X-Onnxstream-Token: {page_server['token']}")
    return "\r\n".join(lines) + "\r\n" + extra + "\r\n"


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_page_token_travels_in_a_header_never_a_cookie_or_the_url(page_server):
    """Issue 29 item 3: a cookie has no port, so every server on 127.0.0.1 received it."""
    status, headers, body = raw_request(page_server, head_for(page_server, "GET", "/", token=False))
    assert status == 200 and b"onnxstream" in body
    assert "set-cookie" not in headers
    status, headers, _ = raw_request(page_server, head_for(page_server, "GET", "/api/list?path="))
    assert status == 200 and "set-cookie" not in headers
    token = page_server["token"]
    for head in (head_for(page_server, "GET", "/api/list?path=", token=False, extra=f"Cookie: token={token}\r\n"),
                 head_for(page_server, "GET", f"/api/list?path=&token={token}", token=False),
                 head_for(page_server, "GET", "/api/list?path=", token=False,
                          extra=f"Cookie: onnxstream_token_{page_server['port']}={token}\r\n")):
        status, _, body = raw_request(page_server, head)
        assert status == 403 and b"token" in body, head


def test_page_a_refused_body_is_never_read(page_server):
    """Issue 29 item 4: a 200 MB POST without the token grew the server by 200 MB. The
    answer comes before any body byte is sent, and sending the body after it grows nothing."""
    pid = page_server["proc"].pid
    before = rss_kib(pid)
    size = 200 << 20
    sock = raw_connect(page_server["port"])
    try:
        sock.sendall(head_for(page_server, "POST", "/api/upload?dir=&name=big.bin", token=False,
                              extra=f"Content-Length: {size}\r\nContent-Type: application/octet-stream\r\n").encode())
        sock.settimeout(5)
        first = sock.recv(65536)  # before a byte of the body was sent
        assert first.startswith(b"HTTP/1.1 403 "), first[:100]
        block = b"x" * (1 << 20)
        try:
            for _ in range(size // len(block)):
                sock.sendall(block)
        except OSError:
            pass  # the server closed the connection: what it should do
    finally:
        sock.close()
    time.sleep(0.5)
    grown = rss_kib(pid) - before
    assert grown < 32 * 1024, f"the server grew by {grown} KiB"
    assert not (page_server["root"] / "big.bin").exists()
    # Nor does a request line without an end.
    before = rss_kib(pid)
    sock = raw_connect(page_server["port"])
    try:
        sock.sendall(b"GET /" + b"a" * (1 << 20))
        try:
            for _ in range(64):
                sock.sendall(b"a" * (1 << 20))
        except OSError:
            pass
    finally:
        sock.close()
    time.sleep(0.5)
    grown = rss_kib(pid) - before
    assert grown < 32 * 1024, f"the server grew by {grown} KiB"
    status, _, _ = raw_request(page_server, head_for(page_server, "GET", "/api/list?path="))
    assert status == 200


def test_page_stalled_connections_do_not_stall_the_server(page_server):
    """Issue 29 item 5: 40 half-open connections held all 24 workers for 30 s."""
    stalled = []
    try:
        for i in range(60):
            sock = raw_connect(page_server["port"])
            if i % 3:  # two in three stop in the middle of their headers, the others send nothing
                sock.sendall(f"GET /api/list HTTP/1.1\r\nHost: 127.0.0.1:{page_server['port']}\r\n".encode())
            stalled.append(sock)
        time.sleep(0.3)
        started = time.monotonic()
        status, _, _ = raw_request(page_server, head_for(page_server, "GET", "/api/list?path="))
        assert status == 200
        assert time.monotonic() - started < 2, time.monotonic() - started
        # The stalled ones are answered (408) and closed within the head's deadline.
        started = time.monotonic()
        for sock in stalled[1:3]:
            status, _, _ = raw_answer(sock, timeout=15)
            assert status == 408
        assert time.monotonic() - started < 10
    finally:
        for sock in stalled:
            sock.close()


def test_page_a_flood_of_idle_connections_leaves_room(page_server):
    """More idle connections than the server holds: the oldest make room, a client that
    sends its head at once is served, and nothing waits for a worker."""
    idle = []
    try:
        for _ in range(320):
            idle.append(raw_connect(page_server["port"]))
        time.sleep(0.3)
        started = time.monotonic()
        status, _, _ = raw_request(page_server, head_for(page_server, "GET", "/api/list?path="))
        assert status == 200
        assert time.monotonic() - started < 2, time.monotonic() - started
        # The oldest were closed to make room.
        idle[0].settimeout(5)
        try:
            assert idle[0].recv(100) == b""
        except ConnectionResetError:
            pass
    finally:
        for sock in idle:
            sock.close()


def test_page_a_head_too_large_or_too_slow_is_refused(page_server):
    status, _, _ = raw_request(page_server, head_for(page_server, "GET", "/api/list?path=",
                                                     extra="X-Padding: " + "p" * 32768 + "\r\n"))
    assert status == 431
    # One header byte every half second: the head's deadline is for the whole head.
    sock = raw_connect(page_server["port"])
    started = time.monotonic()
    try:
        head = head_for(page_server, "GET", "/api/list?path=").encode()
        sent = 0
        try:
            while sent < len(head) and time.monotonic() - started < 20:
                sock.sendall(head[sent:sent + 1])
                sent += 1
                time.sleep(0.5)
        except OSError:
            pass
        status, _, _ = raw_answer(sock, timeout=5)
    finally:
        sock.close()
    assert status == 408 and time.monotonic() - started < 10


def test_page_a_post_without_a_length_is_answered_at_once(page_server):
    """Issue 29 item 6: it hung for 30 s."""
    for extra in ("", "Transfer-Encoding: chunked\r\n"):
        sock = raw_connect(page_server["port"])
        started = time.monotonic()
        try:
            sock.sendall(head_for(page_server, "POST", "/api/jobs?action=verify&path=bytes.bin", extra=extra).encode())
            status, _, body = raw_answer(sock, timeout=5)
        finally:
            sock.close()
        assert status == 411 and b"Content-Length" in body, (extra, body)
        assert time.monotonic() - started < 2
    status, _, _ = raw_request(page_server, head_for(page_server, "POST", "/api/jobs?action=verify&path=bytes.bin",
                                                     extra="Content-Length: 1000000\r\n"))
    assert status == 413


@pytest.mark.parametrize("header,status,content_range,expected", [
    ("bytes=2000-", 416, "bytes */1000", b""),
    ("bytes=1000-1000", 416, "bytes */1000", b""),
    ("bytes=990-5000", 206, "bytes 990-999/1000", (bytes(range(250)) * 4)[990:]),
    ("bytes=-10", 206, "bytes 990-999/1000", (bytes(range(250)) * 4)[990:]),
    ("bytes=10-19", 206, "bytes 10-19/1000", bytes(range(10, 20))),
    ("bytes=" + ",".join(["0-999"] * 200), 200, None, bytes(range(250)) * 4),
    ("bytes=0-1,5-6", 200, None, bytes(range(250)) * 4),
], ids=["past-the-end", "at-the-end", "end-past-the-end", "suffix", "inside", "200-overlapping", "two"])
def test_page_ranges_are_bounded_by_the_file(page_server, header, status, content_range, expected):
    """Issue 29 item 8: past the end was a 206 of 2^64 bytes, 200 ranges sent the file 200 times."""
    got, headers, body = raw_request(page_server, head_for(page_server, "GET", "/api/file?path=bytes.bin",
                                                           extra=f"Range: {header}\r\n"))
    assert got == status, (header, got, headers)
    assert headers.get("content-range") == content_range
    assert body == expected
    assert int(headers.get("content-length", "0")) == len(expected)


def test_page_a_download_ticket_is_good_once_for_its_file(page_server):
    status, _, body = raw_request(page_server, head_for(page_server, "POST", "/api/tickets?path=bytes.bin",
                                                        extra="Content-Length: 0\r\n"))
    assert status == 200
    ticket = json.loads(body)["ticket"]
    status, _, _ = raw_request(page_server, head_for(page_server, "GET", f"/api/file?path=other.bin&ticket={ticket}",
                                                     token=False))
    assert status == 403  # another file: refused, and the ticket is spent
    status, _, body = raw_request(page_server, head_for(page_server, "POST", "/api/tickets?path=bytes.bin",
                                                        extra="Content-Length: 0\r\n"))
    ticket = json.loads(body)["ticket"]
    status, _, got = raw_request(page_server, head_for(page_server, "GET", f"/api/file?path=bytes.bin&ticket={ticket}",
                                                       token=False))
    assert status == 200 and got == bytes(range(250)) * 4
    status, _, _ = raw_request(page_server, head_for(page_server, "GET", f"/api/file?path=bytes.bin&ticket={ticket}",
                                                     token=False))
    assert status == 403
    status, _, _ = raw_request(page_server, head_for(page_server, "GET", "/api/file?path=bytes.bin&ticket=", token=False))
    assert status == 403


# 5. The page server (`onnxstream gui`, DESIGN.md "The page server"): every file it opens
# or creates stays beneath DIR by descriptor, also while a folder is swapped for a link;
# a job that crashes fails alone; Ctrl-C during an upload leaves nothing behind.

import http.client  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import urllib.parse  # noqa: E402


def gui_available() -> bool:
    return not refcheck.windows_binary() and (refcheck.binary_path().parent / "onnxstream-gui.so").is_file()


needs_gui = pytest.mark.skipif(not gui_available(), reason="this build has no gui module")


class GuiServer:
    """`onnxstream gui ROOT` on a free port, behind `prefix` (strace) and with `env`."""

    def __init__(self, root: Path, prefix: list[str] | None = None, env: dict[str, str] | None = None):
        self.root = root
        self.proc = subprocess.Popen([*(prefix or []), str(refcheck.binary_path()), "gui", str(root), "--no-browser"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                     env={**os.environ, **(env or {})})
        url = self.proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), f"no URL printed: {url!r}"
        parsed = urllib.parse.urlsplit(url)
        self.port = parsed.port
        # The token comes in the fragment (#token=...) and travels only in a header.
        self.token = urllib.parse.parse_qs(parsed.fragment)["token"][0]

    def headers(self) -> dict[str, str]:
        return {"Host": f"127.0.0.1:{self.port}", "X-Onnxstream-Token": self.token}

    def request(self, method: str, path: str, query: dict | None = None, body=None, headers=None, timeout=60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = self.headers()
        h.update(headers or {})
        if body is not None and "Content-Type" not in h:
            h["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path + "?" + urllib.parse.urlencode(query or {}), body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        return r.status, data

    def job(self, fields: dict[str, str], timeout=120) -> dict:
        """Starts a job and returns its last event (or the refusal as {"refused": status, ...})."""
        status, body = self.request("POST", "/api/jobs", body=urllib.parse.urlencode(fields))
        if status != 200:
            return {"refused": status, **json.loads(body)}
        job_id = json.loads(body)["id"]
        deadline = time.monotonic() + timeout
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        conn.request("GET", f"/api/jobs/{job_id}/events", headers=self.headers())
        r = conn.getresponse()
        assert r.status == 200
        buffer, last = b"", None
        while (last is None or last["state"] == "running") and time.monotonic() < deadline:
            chunk = r.read1(65536)
            assert chunk, "the event stream ended before the job finished"
            buffer += chunk
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                last = json.loads(event[6:])
        conn.close()
        return last

    def server_pid(self) -> int:
        """The server's pid: the process itself, or the one strace runs."""
        if self.proc.args[0] != "strace":
            return self.proc.pid
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        return int(children[0])

    def stop(self) -> str:
        if self.proc.poll() is None:
            os.kill(self.server_pid(), signal.SIGTERM)  # strace would leave its tracee running
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.stderr.read()


# Swaps a folder for a link out of the served folder and back, a few milliseconds each.
FOLDER_SWAPPER = r"""
import os, sys, time
folder, outside, stop = sys.argv[1:4]
away = folder + ".away"
while not os.path.exists(stop):
    try:
        time.sleep(0.003)
        os.rename(folder, away)
        os.symlink(outside, folder)
        time.sleep(0.003)
        os.unlink(folder)
        os.rename(away, folder)
    except OSError:
        pass
"""


def strace_delays_without_openat2() -> list[str]:
    """strace_delays, and openat2 failing with ENOSYS as on kernels before 5.6: the server
    then walks the path one openat(O_NOFOLLOW) at a time."""
    prefix = strace_delays()
    if not prefix:
        return []
    return [*prefix[:-4], "-e", "trace=openat,openat2", "-e", "inject=openat:delay_enter=5000", "-e",
            "inject=openat2:error=ENOSYS"]


@needs_gui
@pytest.mark.parametrize("resolve", ["openat2", "walk"])
def test_gui_download_never_returns_outside_bytes_while_a_folder_is_swapped(tmp_path, resolve):
    root, outside = tmp_path / "served", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    inside_bytes = b"inside-bytes----" * 8
    (root / "d" / "f.bin").write_bytes(inside_bytes)
    (outside / "f.bin").write_bytes(SECRET)
    stop = tmp_path / "stop"
    prefix = strace_delays() if resolve == "openat2" else strace_delays_without_openat2()
    if resolve == "walk" and not prefix:
        pytest.skip("strace cannot trace here")
    server = GuiServer(root, prefix)
    swapper = subprocess.Popen([sys.executable, "-c", FOLDER_SWAPPER, str(root / "d"), str(outside), str(stop)])
    got = {"inside": 0, "refused": 0}
    deadline = time.monotonic() + 20
    try:
        for _ in range(400):
            if time.monotonic() > deadline:
                break
            status, body = server.request("GET", "/api/file", {"path": "d/f.bin"})
            assert SECRET[:16] not in body, f"a download returned the outside file ({status})"
            if status == 200:
                assert body == inside_bytes
                got["inside"] += 1
            else:
                assert status in (403, 404), (status, body)
                got["refused"] += 1
    finally:
        stop.touch()
        swapper.wait(timeout=10)
        server.stop()
    assert got["inside"] > 0, got


@needs_gui
@pytest.mark.skipif(refcheck.sanitized(), reason="a sanitized job under strace's delays is too slow to finish "
                    "between two swaps: the case needs some to succeed")
def test_gui_merge_job_never_writes_outside_while_its_folder_is_swapped(tmp_path):
    root, outside = tmp_path / "served", tmp_path / "outside"
    w = weights(11)
    for folder in (root / "m", outside):
        write_model(folder / "model.onnx", {"w": (w, "w.bin")})
        (folder / "w.bin").write_bytes(w.tobytes())
    stop = tmp_path / "stop"
    server = GuiServer(root, strace_delays())
    swapper = subprocess.Popen([sys.executable, "-c", FOLDER_SWAPPER, str(root / "m"), str(outside), str(stop)])
    outcomes = {"done": 0, "other": 0}
    deadline = time.monotonic() + 30
    try:
        for i in range(150):
            if time.monotonic() > deadline:
                break
            last = server.job({"action": "merge", "path": "m/model.onnx", "output": f"m/out{i}.onnx"})
            assert not list(outside.glob("out*")), f"job {i} wrote outside the served folder: {last}"
            assert not [p for p in outside.iterdir() if p.name.startswith(".")], "a temporary outside"
            outcomes["done" if last.get("state") == "done" else "other"] += 1
            if last.get("state") != "done":  # refused at the start, or the worker found a link
                assert last.get("refused") or last["error"]["code"] in ("unsafe_location", "missing_data"), last
    finally:
        stop.touch()
        swapper.wait(timeout=10)
        server.stop()
    assert not list(outside.glob("out*"))
    assert outcomes["done"] > 0, outcomes
    for out in (root / "m").glob("out*.onnx"):
        np.testing.assert_array_equal(merged_values(out)["w"], w)


@needs_gui
def test_gui_job_that_crashes_fails_alone_and_the_server_goes_on(tmp_path):
    root = tmp_path / "served"
    w = weights(12, (256, 256))
    write_model(root / "m" / "model.onnx", {"w": (w, "w.bin")})
    (root / "m" / "w.bin").write_bytes(w.tobytes())
    before = sorted(p.name for p in (root / "m").iterdir())
    # Test-only: the worker of a merge job crashes (SIGSEGV) at its first progress event,
    # that of a split job once it holds a named temporary output.
    server = GuiServer(root, env={"ONNXSTREAM_TEST_WORKER_CRASH": "merge:progress,split:named-temporary"})
    try:
        for action in ("merge", "split"):
            last = server.job({"action": action, "path": "m/model.onnx"})
            assert last["state"] == "failed", last
            assert "the job crashed (signal 11" in last["error"]["message"], last
            assert "the server goes on" in last["error"]["message"], last
            assert sorted(p.name for p in (root / "m").iterdir()) == before, f"{action} left files behind"
        status, body = server.request("GET", "/api/list", {"path": "m"})
        assert status == 200 and "model.onnx" in body.decode()
        last = server.job({"action": "verify", "path": "m/model.onnx"})
        assert last["state"] == "done", last
        last = server.job({"action": "optimize", "path": "m/model.onnx"})
        assert last["state"] == "done", last
        assert (root / "m" / "model.optimized.onnx").is_file()
        assert server.proc.poll() is None
    finally:
        server.stop()


@needs_gui
def test_gui_sigint_during_an_upload_leaves_no_hidden_file(tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    server = GuiServer(root)
    total, sent = 64 << 20, 4 << 20
    try:
        conn = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        head = (f"POST /api/upload?dir=&name=big.bin HTTP/1.1\r\n"
                f"Host: 127.0.0.1:{server.port}\r\nX-Onnxstream-Token: {server.token}\r\n"
                f"Content-Type: application/octet-stream\r\nContent-Length: {total}\r\n\r\n")
        conn.sendall(head.encode())
        conn.sendall(b"\x01" * sent)
        # The server is inside the upload once it has written what was sent.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            time.sleep(0.2)
            fds = Path(f"/proc/{server.proc.pid}/fd")
            if any(os.stat(p).st_size >= sent for p in fds.iterdir() if _is_file_under(p, root)):
                break
        server.proc.send_signal(signal.SIGINT)
        assert server.proc.wait(timeout=30) == 130
        conn.close()
    finally:
        server.stop()
    assert list(root.iterdir()) == [], [p.name for p in root.iterdir()]


def _is_file_under(fd_link: Path, root: Path) -> bool:
    try:
        target = os.readlink(fd_link)
    except OSError:
        return False
    return target.startswith(str(root) + "/") and os.path.isfile(fd_link)


@needs_gui
def test_gui_export_of_a_hostile_model_fails_that_job_only(tmp_path):
    """Issue 29.1: an input of dims [1,3,2^62,4] made `export --to caffe --check` segfault,
    inside the server process. Whether the export refuses it or its worker crashes, the
    job fails with a message, nothing is written, and the server runs the next job."""
    root = tmp_path / "served"
    (root / "h").mkdir(parents=True)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 2**62, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(np.ones((2, 3, 1, 1), np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "g", [x], [y], initializer=[w])
    (root / "h" / "model.onnx").write_bytes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    server = GuiServer(root)
    try:
        last = server.job({"action": "export-caffe", "path": "h/model.onnx", "check": "1"})
        assert last["state"] == "failed", last
        assert last["error"]["message"], last
        assert sorted(p.name for p in (root / "h").iterdir()) == ["model.onnx"]
        status, _ = server.request("GET", "/api/list", {"path": "h"})
        assert status == 200
        last = server.job({"action": "verify", "path": "h/model.onnx"})
        assert last["state"] == "done", last
        assert server.proc.poll() is None
    finally:
        server.stop()


@needs_gui
def test_gui_data_field_never_reads_outside_bytes_while_the_file_is_swapped(tmp_path):
    """The file a job's `data` field names is swapped for a link to an outside file of
    the same size, over and over: the job reads the file it checked (held open), or
    refuses, never the outside bytes."""
    root, outside = tmp_path / "served", tmp_path / "outside"
    w = weights(13)
    write_model(root / "m" / "model.onnx", {"w": (w, "w.bin")})
    (root / "m" / "d.bin").write_bytes(w.tobytes())
    outside.mkdir()
    (outside / "secret.bin").write_bytes(SECRET)
    stop = tmp_path / "stop"
    server = GuiServer(root, strace_delays())
    swapper = subprocess.Popen([sys.executable, "-c", FOLDER_SWAPPER, str(root / "m" / "d.bin"),
                                str(outside / "secret.bin"), str(stop)])
    done = 0
    deadline = time.monotonic() + 30
    try:
        for i in range(150):
            if time.monotonic() > deadline:
                break
            out = root / "m" / f"out{i}.onnx"
            last = server.job({"action": "merge", "path": "m/model.onnx", "data": "m/d.bin", "output": f"m/out{i}.onnx"})
            if last.get("state") == "done":
                done += 1
                assert SECRET[:16] not in out.read_bytes(), f"job {i} inlined the outside file"
                np.testing.assert_array_equal(merged_values(out)["w"], w)
            else:
                assert last.get("refused") or last["error"]["code"] in ("unsafe_location", "missing_data"), last
    finally:
        stop.touch()
        swapper.wait(timeout=10)
        server.stop()
    assert done > 0

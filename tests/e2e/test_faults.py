"""Faults while writing (issue 5): interrupts, a full disk, a read-only output folder, an
output that is a folder. After every failure: a non-zero exit (never a signal), no output
and no temporary file left, and the inputs' bytes and mtimes unchanged.

The interrupt tests need a run that lasts: a model whose tensors fill a sparse 1.5 GiB data
file (no disk is used for it, but every byte is copied). They run with the portable writer
and with the default one. The disk tests mount small tmpfs file systems, which needs root
(CI runs as root); without it they are skipped, saying so.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import hostile_support as hs
import refcheck
from test_corrupt import sparse_external_model, wait_for_temporary

LONG_DATA_BYTES = 3 << 29     # 1.5 GiB: merge must stay under protobuf's 2 GB
WRITERS = ["portable", "auto"]


@pytest.fixture(scope="module")
def long_model(tmp_path_factory) -> Path:
    return sparse_external_model(tmp_path_factory.mktemp("long") / "m", LONG_DATA_BYTES)


def start(args: list, writer: str) -> subprocess.Popen:
    env = dict(os.environ, ONNXSTREAM_WRITER=writer)
    return subprocess.Popen([str(refcheck.binary_path()), *map(str, args)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def finish(proc: subprocess.Popen, timeout: float = 300) -> hs.Run:
    stdout, stderr = proc.communicate(timeout=timeout)
    return hs.Run(list(map(str, proc.args[1:])), proc.returncode, stdout, stderr, 0.0, 0)


def writer_args(writer: str) -> list[str]:
    return [] if writer == "auto" else ["--writer", writer]


# ---------------------------------------------------------------------------------------
# Interrupts

@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("command", ["merge", "split"])
def test_interrupt_removes_the_output(command, signal_number, writer, long_model, onnxstream):
    folder = long_model.parent
    before = hs.snapshot(folder)
    proc = start([command, long_model, *writer_args(writer)], writer)
    assert wait_for_temporary(folder, proc), "the output's temporary file never appeared" + describe(proc)
    proc.send_signal(signal_number)
    run = finish(proc)
    assert run.returncode > 0, f"exit {run.returncode} after {signal_number.name}" + run.describe()
    assert hs.error_lines(run.stderr), run.describe()
    assert "interrupt" in run.stderr.lower(), run.describe()
    hs.assert_unchanged(before, hs.snapshot(folder), f"{command} interrupted by {signal_number.name}")


@pytest.mark.parametrize("command", ["merge", "split"])
def test_second_interrupt_leaves_at_once(command, long_model, onnxstream):
    """A second signal means the user will not wait: exit right away, still removing the
    temporary output."""
    folder = long_model.parent
    before = hs.snapshot(folder)
    proc = start([command, long_model], "portable")
    assert wait_for_temporary(folder, proc), "the output's temporary file never appeared" + describe(proc)
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGINT)
    run = finish(proc)
    assert run.returncode > 0, run.describe()
    hs.assert_unchanged(before, hs.snapshot(folder), f"{command} interrupted twice")


def describe(proc: subprocess.Popen) -> str:
    if proc.poll() is None:
        proc.kill()
    stdout, stderr = proc.communicate()
    return f"\nexit {proc.returncode}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"


# ---------------------------------------------------------------------------------------
# The output's file system

class Mount:
    def __init__(self, path: Path, options: str):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
        self.error = None if proc.returncode == 0 else (proc.stderr.strip() or f"mount exited {proc.returncode}")

    def unmount(self) -> None:
        if self.error is None:
            subprocess.run(["umount", "-l", str(self.path)], check=False)


@pytest.fixture
def mount(tmp_path):
    mounts: list[Mount] = []

    def make(name: str, options: str) -> Path:
        m = Mount(tmp_path / name, options)
        mounts.append(m)
        if m.error:
            pytest.skip(f"cannot mount a tmpfs ({m.error}): these tests need root (CI runs as root)")
        return m.path

    yield make
    for m in mounts:
        m.unmount()


@pytest.fixture(scope="module")
def medium_model(tmp_path_factory) -> Path:
    """64 MiB of real (not sparse) weights: more than the small disk holds."""
    model = sparse_external_model(tmp_path_factory.mktemp("medium") / "m", 64 << 20, tensors=4)
    with open(model.with_name("model.onnx.data"), "r+b") as f:
        block = bytes(range(256)) * 4096
        for _ in range((64 << 20) // len(block)):
            f.write(block)
    return model


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("command", ["merge", "split"])
def test_full_disk(command, writer, medium_model, mount, onnxstream):
    small = mount("small", "size=8m")
    before = hs.snapshot(medium_model.parent)
    output = small / "out.onnx"
    proc = start([command, medium_model, "-o", output, *writer_args(writer)], writer)
    run = finish(proc)
    assert run.returncode == 1, run.describe()
    assert hs.error_lines(run.stderr), run.describe()
    text = run.stderr.lower()
    assert "no space" in text, "the message does not say the disk is full" + run.describe()
    assert "mib" in text and any(size in run.stderr for size in ("64.0 MiB", "64.1 MiB")), (
        "the message does not say how much was needed" + run.describe())
    assert sorted(p.name for p in small.iterdir()) == [], f"left on the full disk: {list(small.iterdir())}"
    hs.assert_unchanged(before, hs.snapshot(medium_model.parent), f"{command} onto a full disk")


@pytest.mark.parametrize("command", ["merge", "split"])
def test_read_only_output_folder(command, medium_model, mount, onnxstream):
    read_only = mount("ro", "ro,size=1m")
    before = hs.snapshot(medium_model.parent)
    run = finish(start([command, medium_model, "-o", read_only / "out.onnx"], "auto"))
    assert run.returncode == 1, run.describe()
    assert hs.error_lines(run.stderr), run.describe()
    assert "read-only file system" in run.stderr.lower(), run.describe()
    assert str(read_only) in run.stderr, "the message does not name the folder" + run.describe()
    hs.assert_unchanged(before, hs.snapshot(medium_model.parent), f"{command} into a read-only folder")


@pytest.mark.parametrize("command", ["merge", "split"])
def test_output_folder_missing(command, medium_model, tmp_path, onnxstream):
    before = hs.snapshot(medium_model.parent)
    run = finish(start([command, medium_model, "-o", tmp_path / "nowhere" / "out.onnx"], "auto"))
    assert run.returncode == 1, run.describe()
    assert "does not exist" in run.stderr, run.describe()
    assert not (tmp_path / "nowhere").exists()
    hs.assert_unchanged(before, hs.snapshot(medium_model.parent), f"{command} into a missing folder")


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
@pytest.mark.parametrize("command", ["merge", "split"])
def test_output_is_a_directory(command, force, medium_model, tmp_path, onnxstream):
    target = tmp_path / "a_folder.onnx"
    target.mkdir()
    (target / "keep.txt").write_text("keep")
    before = hs.snapshot(medium_model.parent)
    before_target = hs.snapshot(tmp_path)
    run = finish(start([command, medium_model, "-o", target, *(["--force"] if force else [])], "auto"))
    assert run.returncode == 2, run.describe()   # a usage error: -o must name a file
    assert "is a directory" in run.stderr, run.describe()
    assert "-o" in run.stderr, "the message does not say what to do" + run.describe()
    hs.assert_unchanged(before, hs.snapshot(medium_model.parent), f"{command} -o a folder")
    hs.assert_unchanged(before_target, hs.snapshot(tmp_path), f"{command} -o a folder")


def test_split_with_room_for_the_data_only(medium_model, mount, onnxstream):
    """The 64 MiB data file fits exactly, the model after it does not: the data file,
    already written, must not be left behind either (split commits all or nothing)."""
    exact = mount("exact", "size=64m")
    before = hs.snapshot(medium_model.parent)
    run = finish(start(["split", medium_model, "-o", exact / "out.onnx", "--align", "0"], "auto"))
    assert run.returncode == 1, run.describe()
    assert "no space" in run.stderr.lower(), run.describe()
    assert "out.onnx" in run.stderr, run.describe()
    assert list(exact.iterdir()) == [], f"left behind: {list(exact.iterdir())}"
    hs.assert_unchanged(before, hs.snapshot(medium_model.parent), "split onto a disk with room for the data only")

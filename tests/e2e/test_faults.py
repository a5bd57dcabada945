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
import shutil
import stat
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


# ---------------------------------------------------------------------------------------
# Issue 9: signals, transactions, what may be replaced, stdout, limits.
# Each test names the item of issue 9 it covers.

CATCHABLE = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
             signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF]


def small_model(folder: Path, tensors: int = 4, data_bytes: int = 1 << 20) -> Path:
    """A model with real (not sparse) external weights, so that every byte is checked."""
    model = sparse_external_model(folder, data_bytes, tensors=tensors)
    data = model.with_name("model.onnx.data")
    data.write_bytes(bytes((i * 7) & 0xFF for i in range(256)) * (data.stat().st_size // 256))
    return model


def run_binary(args: list, **kwargs) -> hs.Run:
    proc = subprocess.run([str(refcheck.binary_path()), *map(str, args)], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300, **kwargs)
    return hs.Run(list(map(str, args)), proc.returncode, proc.stdout, proc.stderr, 0.0, 0)


def leftovers(folder: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


def onnx_loads(model: Path) -> None:
    """python-onnx loads the model with all its external data."""
    import onnx
    onnx.load(str(model), load_external_data=True)


@pytest.mark.parametrize("signal_number", CATCHABLE, ids=[s.name for s in CATCHABLE])
def test_every_terminating_signal_removes_the_output(signal_number, long_model, onnxstream):
    """Item 9: every catchable signal whose default is to terminate ends the run cleanly,
    exit 128 + signal, its temporary removed (SIGQUIT, SIGUSR1, SIGALRM ... left it)."""
    folder = long_model.parent
    before = hs.snapshot(folder)
    proc = start(["split", long_model, "--writer", "portable"], "portable")
    assert wait_for_temporary(folder, proc), "the output's temporary file never appeared" + describe(proc)
    proc.send_signal(signal_number)
    run = finish(proc)
    assert run.returncode > 0, f"exit {run.returncode} after {signal_number.name}" + run.describe()
    assert "interrupted" in run.stderr, run.describe()
    hs.assert_unchanged(before, hs.snapshot(folder), f"split killed by {signal_number.name}")


@pytest.mark.parametrize("command", ["merge", "split"])
def test_sigkill_leaves_no_temporary(command, long_model, onnxstream):
    """Item 9: SIGKILL cannot be caught, so the temporary has no name (O_TMPFILE): the
    kernel removes it with the process."""
    folder = long_model.parent
    before = hs.snapshot(folder)
    proc = start([command, long_model], "auto")
    assert wait_for_temporary(folder, proc), "the output's temporary file never appeared" + describe(proc)
    proc.kill()
    finish(proc)
    hs.assert_unchanged(before, hs.snapshot(folder), f"{command} killed by SIGKILL")


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("command", ["merge", "split"])
def test_file_size_limit(command, writer, medium_model, tmp_path, onnxstream):
    """Item 9: past RLIMIT_FSIZE a write raises SIGXFSZ, which killed the process with its
    temporary left. Now the write fails (EFBIG): exit 1 with a message, nothing left."""
    import resource
    out = tmp_path / "out"
    out.mkdir()
    before = hs.snapshot(medium_model.parent)

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (8 << 20, 8 << 20))

    run = run_binary([command, medium_model, "-o", out / "x.onnx", *writer_args(writer)], preexec_fn=limit,
                     env=dict(os.environ, ONNXSTREAM_WRITER=writer))
    assert run.returncode == 1, run.describe()
    assert hs.error_lines(run.stderr), run.describe()
    assert "too large" in run.stderr.lower(), run.describe()
    assert leftovers(out, set()) == [], run.describe()
    hs.assert_unchanged(before, hs.snapshot(medium_model.parent), f"{command} under a file-size limit")


def wait_for_reading(model: Path, proc: subprocess.Popen, timeout: float = 30) -> bool:
    """Waits until proc has the model open or mapped: it is then past starting up."""
    wanted = os.path.realpath(model)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/maps") as maps:
                if wanted in maps.read():
                    return True
            for fd in os.listdir(f"/proc/{proc.pid}/fd"):
                if os.readlink(f"/proc/{proc.pid}/fd/{fd}") == wanted:
                    return True
        except OSError:
            pass
        time.sleep(0.001)
    return False


def test_first_interrupt_stops_inspect(tmp_path, onnxstream):
    """Also-item: inspect ignored the first Ctrl-C (the cancel flag was only looked at
    while writing). Every command now leaves on the first one, whatever it is doing.
    A command that ends before the signal reaches it proves nothing: it is run again on a
    model four times larger (inspect of 300k nodes can take under 0.1 s on an idle machine)."""
    from test_corrupt import metadata_heavy_model
    models = []
    for nodes in (300_000, 1_200_000):
        models.append(tmp_path / f"heavy{nodes}.onnx")
        metadata_heavy_model(models[-1], nodes)
    kept = {m.name for m in models}
    for name in ("inspect", "analyze", "merge"):
        for model in models:
            command = [name, model] + (["-o", tmp_path / "out.onnx"] if name == "merge" else [])
            started = time.monotonic()
            proc = start(command, "auto")
            opened = wait_for_reading(model, proc)
            if proc.poll() is not None:  # done before the signal could be sent: a larger model
                finish(proc, timeout=60)
                (tmp_path / "out.onnx").unlink(missing_ok=True)
                continue
            assert opened, f"{name} never opened the model" + describe(proc)
            proc.send_signal(signal.SIGINT)
            run = finish(proc, timeout=60)
            took = time.monotonic() - started
            assert run.returncode == 130, f"{name}: exit {run.returncode} after {took:.2f} s" + run.describe()
            assert "interrupted" in run.stderr, run.describe()
            assert leftovers(tmp_path, kept) == [], run.describe()
            break
        else:
            pytest.fail(f"{name} ended before a signal could reach it, even on {models[-1].name}")


def test_dangling_symlink_output(tmp_path, onnxstream):
    """Item 7: -o naming a dangling symbolic link passed the checks; the data file was
    committed, the model failed, the data file stayed."""
    model = small_model(tmp_path / "m")
    before = hs.snapshot(model.parent)
    out = tmp_path / "out"
    out.mkdir()
    (out / "x.onnx").symlink_to(out / "elsewhere.onnx")
    run = run_binary(["split", model, "-o", out / "x.onnx"])
    assert run.returncode == 1, run.describe()
    assert "already exists" in run.stderr, run.describe()
    assert leftovers(out, {"x.onnx"}) == [], run.describe()
    forced = run_binary(["split", model, "-o", out / "x.onnx", "--force"])
    assert forced.returncode == 2, forced.describe()
    assert "regular file" in forced.stderr, forced.describe()
    assert leftovers(out, {"x.onnx"}) == [], forced.describe()
    assert (out / "x.onnx").is_symlink()
    hs.assert_unchanged(before, hs.snapshot(model.parent), "split -o a dangling link")


class BindMount:
    """A file bind-mounted on itself: renaming over it fails (EBUSY), reading it works."""

    def __init__(self, path: Path):
        self.path = path
        proc = subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot bind-mount ({proc.stderr.strip()}): this test needs root (CI runs as root)")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        subprocess.run(["umount", str(self.path)], check=False)


def test_in_place_repack_whose_model_cannot_be_replaced(tmp_path, onnxstream):
    """Item 5: an in-place repack whose model rename fails left the old model reading the
    new data. The transaction now puts the old data file back."""
    model = small_model(tmp_path / "m")
    before = hs.snapshot(model.parent)
    with BindMount(model):
        run = run_binary(["repack", model, "-o", model, "--force", "--align", "0", "--threshold", "0"])
    assert run.returncode == 1, run.describe()
    assert hs.error_lines(run.stderr), run.describe()
    hs.assert_unchanged(before, hs.snapshot(model.parent), "repack in place whose model could not be replaced")
    onnx_loads(model)


def test_sharded_repack_whose_model_cannot_be_replaced(tmp_path, onnxstream):
    """Item 7, the class: any failure after the first rename undoes the ones done; with
    --force the files that were replaced come back."""
    model = small_model(tmp_path / "m")
    out = tmp_path / "out"
    out.mkdir()
    (out / "x.onnx").write_bytes(b"old model")
    (out / "x.onnx.data").write_bytes(b"old data")
    before = hs.snapshot(out)
    with BindMount(out / "x.onnx"):
        run = run_binary(["repack", model, "-o", out / "x.onnx", "--force", "--shard-size", "300K", "--align", "0"])
    assert run.returncode == 1, run.describe()
    hs.assert_unchanged(before, hs.snapshot(out), "repack whose model could not be replaced")


def test_repack_refuses_to_replace_data_the_input_needs(tmp_path, onnxstream):
    """Item 5: repack -o new.onnx --data-name <the input's data file> --force replaced
    the data under the input model, which then read another layout."""
    model = small_model(tmp_path / "m")
    before = hs.snapshot(model.parent)
    run = run_binary(["repack", model, "-o", model.with_name("new.onnx"), "--data-name", "model.onnx.data", "--force",
                      "--align", "0"])
    assert run.returncode == 1, run.describe()
    assert "still needs" in run.stderr, run.describe()
    hs.assert_unchanged(before, hs.snapshot(model.parent), "repack over the input's data")
    onnx_loads(model)


def test_in_place_repack_keeps_working_and_modes(tmp_path, onnxstream):
    """Item 10: an in-place repack of 0600 inputs left 0644 files; the result loads."""
    model = small_model(tmp_path / "m")
    data = model.with_name("model.onnx.data")
    os.chmod(model, 0o600)
    os.chmod(data, 0o600)
    run = run_binary(["repack", model, "-o", model, "--force", "--align", "0", "--threshold", "0"])
    assert run.returncode == 0, run.describe()
    assert oct(model.stat().st_mode & 0o777) == oct(0o600)
    assert oct(data.stat().st_mode & 0o777) == oct(0o600)
    assert leftovers(model.parent, {"model.onnx", "model.onnx.data"}) == []
    onnx_loads(model)


def test_force_keeps_the_mode(tmp_path, onnxstream):
    """Item 10: --force over a 0600 file left it 0644 (and, as root, owned by root)."""
    model = small_model(tmp_path / "m")
    out = tmp_path / "private.onnx"
    out.write_bytes(b"old")
    os.chmod(out, 0o600)
    owner = (1234, 4321) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    os.chown(out, *owner)
    run = run_binary(["merge", model, "-o", out, "--force"])
    assert run.returncode == 0, run.describe()
    assert oct(out.stat().st_mode & 0o777) == oct(0o600)
    assert (out.stat().st_uid, out.stat().st_gid) == owner, "the owner was not kept"
    onnx_loads(out)


@pytest.mark.parametrize("kind", ["fifo", "char-device"])
@pytest.mark.parametrize("command", ["merge", "split", "optimize"])
def test_force_refuses_what_is_not_a_regular_file(command, kind, tmp_path, onnxstream):
    """Item 10: --force over a FIFO or a character device (as root: /dev/null!) replaced
    it with a regular file."""
    model = small_model(tmp_path / "m")
    before = hs.snapshot(model.parent)
    target = tmp_path / "special.onnx"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        try:
            os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 3))   # what /dev/null is
        except PermissionError:
            pytest.skip("making a device needs root (CI runs as root)")
    run = run_binary([command, model, "-o", target, "--force"])
    assert run.returncode == 2, run.describe()
    assert "regular file" in run.stderr, run.describe()
    mode = target.lstat().st_mode
    assert stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISCHR(mode), f"{target} was replaced"
    assert leftovers(tmp_path, {"m", "special.onnx"}) == [], run.describe()
    hs.assert_unchanged(before, hs.snapshot(model.parent), f"{command} --force over a {kind}")


def test_fifo_appearing_while_writing_is_not_replaced(long_model, tmp_path, onnxstream):
    """Item 10: also a FIFO that appears at the output while the output is written."""
    out = tmp_path / "out"
    out.mkdir()
    target = out / "x.onnx"
    proc = start(["merge", long_model, "-o", target, "--force", "--writer", "portable"], "portable")
    assert wait_for_temporary(out, proc), "the output's temporary file never appeared" + describe(proc)
    os.mkfifo(target)
    run = finish(proc)
    assert run.returncode in (1, 2), run.describe()
    assert "regular file" in run.stderr or "FIFO" in run.stderr, run.describe()
    assert stat.S_ISFIFO(target.lstat().st_mode), "the FIFO was replaced"
    assert leftovers(out, {"x.onnx"}) == [], run.describe()


def outputs_open(folder: Path, pid: int) -> int:
    """How many outputs process pid has open in folder, named or not (O_TMPFILE)."""
    count = len(hs.temporaries(folder))
    prefix = os.path.realpath(folder) + "/"
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            count += target.startswith(prefix) and target.endswith(" (deleted)") and "/#" in target
    except OSError:
        pass
    return count


@pytest.mark.parametrize("moment", ["writing", "committing"])
def test_many_shards_interrupted(moment, tmp_path, mount, onnxstream):
    """Item 8: 1,500 shards, more than the old registry's 1,024 slots. Two interrupts
    while they are written left the shards past the 1,024th; interrupts while they are
    committed left committed shards without their model. Afterwards there must be either
    nothing or the whole output, and never a hidden file."""
    import resource
    shards = 1500
    model = small_model(tmp_path / "m", tensors=shards, data_bytes=shards * 4096)
    before = hs.snapshot(model.parent)
    out = mount("shards", "size=64m") / "out"   # tmpfs: 1,500 fsyncs cost nothing there
    out.mkdir()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = shards + 64
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"the hard limit on open files ({hard}) is below {needed}")

    def more_files():
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, needed), hard))

    proc = subprocess.Popen([str(refcheck.binary_path()), "repack", str(model), "-o", str(out / "x.onnx"),
                             "--shard-size", "4K", "--align", "0", "--threshold", "0", "--writer", "portable"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=more_files)
    deadline = time.monotonic() + 120
    if moment == "writing":
        while proc.poll() is None and outputs_open(out, proc.pid) < 1100 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert proc.poll() is None, "the repack ended before 1,100 outputs were open" + describe(proc)
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGINT)
    else:
        while proc.poll() is None and not any(not p.name.startswith(".") for p in out.iterdir()) \
                and time.monotonic() < deadline:
            time.sleep(0.0005)
        while proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            time.sleep(0.001)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}\n{stderr}"
    names = sorted(p.name for p in out.iterdir())
    hidden = [n for n in names if n.startswith(".")]
    assert hidden == [], f"{len(hidden)} hidden files left, e.g. {hidden[:3]}\n{stderr}"
    if "x.onnx" in names:
        assert len(names) == shards + 1, f"the model with {len(names) - 1} of {shards} shards\n{stderr}"
        onnx_loads(out / "x.onnx")
    else:
        assert names == [], f"{len(names)} shards without their model\n{stderr}"
    hs.assert_unchanged(before, hs.snapshot(model.parent), f"repack interrupted while {moment}")


def test_stdout_errors_are_errors(tmp_path, onnxstream):
    """Item 13: a failed write to stdout was ignored (exit 0). A full disk (/dev/full) is
    exit 1 with a message on stderr; a closed pipe (`| head`) is a quiet exit 141, as a
    program SIGPIPE ends shows in a shell (issue 30.13: no broken-pipe error)."""
    model = small_model(tmp_path / "m")
    for args in (["inspect", model, "--json"], ["inspect", model], ["verify", model, "--json"]):
        with open("/dev/full", "w") as full:
            proc = subprocess.run([str(refcheck.binary_path()), *map(str, args)], stdout=full, stderr=subprocess.PIPE,
                                  text=True, timeout=60)
        assert proc.returncode == 1, f"{args}: exit {proc.returncode}\n{proc.stderr}"
        assert "standard output" in proc.stderr and "No space left" in proc.stderr, proc.stderr
    read_end, write_end = os.pipe()
    os.close(read_end)
    proc = subprocess.run([str(refcheck.binary_path()), "inspect", str(model), "--json"], stdout=write_end,
                          stderr=subprocess.PIPE, text=True, timeout=60)
    os.close(write_end)
    assert proc.returncode == 141, f"exit {proc.returncode}\n{proc.stderr}"
    assert proc.stderr == "", proc.stderr


def test_head_of_a_long_output_is_quiet(tmp_path, onnxstream):
    """Issue 30.13: `onnxstream inspect big.onnx | head -1` printed a broken-pipe error.
    The reader leaves after one line while far more is still to come."""
    import onnx
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Identity", [f"v{i}"], [f"v{i + 1}"], name=f"n{i}") for i in range(12000)]
    graph = helper.make_graph(nodes, "long", [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("v12000", TensorProto.FLOAT, [1])])
    model = tmp_path / "long.onnx"
    model.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    args = [str(refcheck.binary_path()), "analyze", str(model), "--json"]
    whole = subprocess.run(args, capture_output=True, timeout=60)
    assert whole.returncode == 0 and len(whole.stdout) > 4 * 65536, "more than a pipe holds, or head cannot stop it early"
    proc = subprocess.run(["sh", "-c", '"$@" | head -c 1 >/dev/null', "sh", *args], stderr=subprocess.PIPE, text=True,
                          timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@pytest.mark.parametrize("command", ["merge", "split", "repack", "optimize"])
def test_empty_output_name_is_a_usage_error(command, tmp_path, onnxstream):
    """Item 16: -o '' silently meant the default output."""
    model = small_model(tmp_path / "m")
    before = hs.snapshot(model.parent)
    for args in (["-o", ""], ["--output="]):
        run = run_binary([command, model, *args])
        assert run.returncode == 2, run.describe()
        assert "--output" in run.stderr, run.describe()
    hs.assert_unchanged(before, hs.snapshot(model.parent), f"{command} -o ''")


def test_absurd_thread_counts_are_refused(tmp_path, onnxstream):
    """Item 16: -j 32768 with io_uring said "Operation canceled"."""
    model = small_model(tmp_path / "m")
    before = hs.snapshot(model.parent)
    run = run_binary(["split", model, "-j", "32768"])
    assert run.returncode == 2, run.describe()
    assert "at most 1024" in run.stderr, run.describe()
    hs.assert_unchanged(before, hs.snapshot(model.parent), "split -j 32768")
    out = tmp_path / "out"
    out.mkdir()
    run = run_binary(["split", model, "-j", "1024", "-o", out / "x.onnx"])
    assert run.returncode == 0, run.describe()
    onnx_loads(out / "x.onnx")


@pytest.mark.parametrize("command", ["merge", "split"])
def test_longest_output_names(command, tmp_path, onnxstream):
    """Item 16: output names of 231-255 bytes failed: the temporary's name was longer."""
    model = small_model(tmp_path / "m")
    out = tmp_path / "out"
    out.mkdir()
    # 255 bytes, the most a file name may have (split's data file is the name + ".data").
    name = "n" * (245 if command == "split" else 250) + ".onnx"
    run = run_binary([command, model, "-o", out / name])
    assert run.returncode == 0, run.describe()
    onnx_loads(out / name)
    assert all(not p.name.startswith(".") for p in out.iterdir())


@pytest.fixture(scope="module")
def heavy_models(tmp_path_factory) -> list[Path]:
    from test_corrupt import metadata_heavy_model
    models = []
    for i in range(2):
        folder = tmp_path_factory.mktemp(f"heavy{i}")
        metadata_heavy_model(folder / "model.onnx", 60_000)
        models.append(folder / "model.onnx")
    return models


@pytest.mark.parametrize("limit_mib", [192, 160, 128, 112, 96, 80, 64])
def test_out_of_memory_in_a_merge_worker(limit_mib, heavy_models, onnxstream):
    """Item 11: out of memory in a merge worker thread was an uncaught std::bad_alloc
    (SIGABRT). Whatever the address-space limit, several models merged at once end with
    exit 0 or 1 and a message, never a signal, and leave no partial output."""
    import resource
    if hs.sanitized():
        pytest.skip("AddressSanitizer reserves terabytes of address space: RLIMIT_AS cannot apply")
    for m in heavy_models:
        m.with_name("model.merged.onnx").unlink(missing_ok=True)
    befores = [hs.snapshot(m.parent) for m in heavy_models]

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (limit_mib << 20, limit_mib << 20))

    run = run_binary(["merge", *heavy_models, "-j", "2", "--writer", "portable"], preexec_fn=limit)
    assert run.returncode in (0, 1), f"exit {run.returncode} under a {limit_mib} MiB limit" + run.describe()
    if run.returncode == 1:
        assert hs.error_lines(run.stderr), run.describe()
    for m, before in zip(heavy_models, befores):
        m.with_name("model.merged.onnx").unlink(missing_ok=True)   # a model merged before the failure is whole
        hs.assert_unchanged(before, hs.snapshot(m.parent), f"merge under a {limit_mib} MiB limit")

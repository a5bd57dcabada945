"""Helpers for the hostile-input and fault tests (test_corrupt.py, test_faults.py): the
corrupt-input catalogue, folder snapshots that are safe with FIFOs and devices, runs of the
binary that record their resource use, and models with large sparse external data."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import refcheck

CATALOGUE = refcheck.REPO_ROOT / "tests" / "data" / "corrupt"
MAKE_CORRUPT = refcheck.REPO_ROOT / "scripts" / "make_corrupt.py"
ERROR_PREFIX = "onnxstream: error:"


def manifest(folder: Path = CATALOGUE) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry under folder: its kind, and for files size, mtime and SHA-1 (never
    opening FIFOs or devices: reading them could block or never end)."""
    result: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                result[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                result[rel] = ("dir",)
            elif stat.S_ISREG(st.st_mode):
                if st.st_size <= 64 << 20:
                    digest = hashlib.sha1()
                    with open(path, "rb") as f:
                        for block in iter(lambda: f.read(1 << 20), b""):
                            digest.update(block)
                    result[rel] = ("file", st.st_size, st.st_mtime_ns, digest.hexdigest())
                else:   # giants (sparse weights): size, mtime and allocated blocks
                    result[rel] = ("file", st.st_size, st.st_mtime_ns, f"{st.st_blocks} blocks")
            else:
                result[rel] = ("special", stat.S_IFMT(st.st_mode), st.st_mtime_ns)
    return result


def snapshot_contents(folder: Path) -> dict[str, tuple]:
    """Like snapshot, without times: what a generator wrote."""
    return {rel: (entry[0], entry[1], entry[3]) if entry[0] == "file" else entry[:2]
            for rel, entry in snapshot(folder).items()}


def assert_unchanged(before: dict, after: dict, what: str) -> None:
    created = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    assert not created and not removed and not changed, (
        f"{what}: created {created}, removed {removed}, changed {changed}")


def assert_inputs_unchanged(before: dict, after: dict, what: str) -> None:
    changed = sorted(k for k in before if after.get(k) != before[k])
    assert not changed, f"{what}: inputs changed: {changed}"


def apply_setup(root: Path, setup: Sequence[dict]) -> str | None:
    """Makes what git cannot carry (see scripts/make_corrupt.py). Returns a reason to skip
    when the system refuses (device nodes need root)."""
    for step in setup:
        if "fifo" in step:
            path = root / step["fifo"]
            path.parent.mkdir(parents=True, exist_ok=True)
            os.mkfifo(path)
        elif "device" in step:
            path = root / step["device"]
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 5))   # the same device as /dev/zero
            except OSError as e:
                return f"cannot create a device node ({e}); run as root"
        elif "symlink" in step:
            path = root / step["symlink"]
            path.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(step["target"], path)
        elif "mkdir" in step:
            (root / step["mkdir"]).mkdir(parents=True, exist_ok=True)
        else:
            raise ValueError(f"unknown setup step {step}")
    return None


def copy_entry(entry: dict, catalogue: Path, dest: Path) -> Path:
    """Copies the entry's folder to dest/<folder> and makes its special files; returns the
    copy's folder."""
    target = dest / entry["folder"]
    source = catalogue / entry["folder"]
    if source.is_dir():
        shutil.copytree(source, target, symlinks=True)
    else:  # git keeps no empty folder: an entry made only of special files has none
        target.mkdir(parents=True)
    return target


def output_paths(command: str, model: Path) -> list[Path]:
    """The default outputs of a command (DESIGN.md)."""
    stem = model.name[: -len(".onnx")] if model.name.endswith(".onnx") else model.stem
    if command == "merge":
        return [model.with_name(f"{stem}.merged.onnx")]
    if command == "split":
        out = model.with_name(f"{stem}.split.onnx")
        return [out, out.with_name(out.name + ".data")]
    return []


@dataclass
class Run:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    max_rss_kb: int

    def describe(self) -> str:
        return (f"\n$ onnxstream {' '.join(self.args)}\nexit {self.returncode} after {self.seconds:.2f} s, "
                f"max RSS {self.max_rss_kb} KiB\n--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}")


def run_measured(args: Sequence[os.PathLike | str], timeout: float = 120, env: dict | None = None) -> Run:
    """Runs the binary, recording wall time and its own peak RSS (refcheck.measured_run);
    fails the test after `timeout` seconds."""
    args = [str(a) for a in args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        code, seconds, max_rss_kb = refcheck.measured_run(args, timeout, out, err, env)
        out.seek(0)
        err.seek(0)
        return Run(args, code, out.read().decode(errors="replace"), err.read().decode(errors="replace"), seconds,
                   max_rss_kb)


def sanitized() -> bool:
    """True when the binary under test is built with AddressSanitizer (slower, hungrier)."""
    path = refcheck.binary_path()
    if not path.is_file():
        return False
    with open(path, "rb") as f:
        return any(b"__asan_init" in chunk for chunk in iter(lambda: f.read(8 << 20), b""))


def generate_large(dest: Path) -> dict:
    """Writes the big catalogue entries (make_corrupt.py --large) into dest."""
    subprocess.run([sys.executable, str(MAKE_CORRUPT), "--large", str(dest)], check=True, stdout=subprocess.DEVNULL)
    return manifest(dest)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(ERROR_PREFIX)]


def temporaries(folder: Path) -> list[str]:
    """Hidden temporary outputs (.onnxstream-XXXXXXXX.tmp, and the .old backups of a
    commit) anywhere under folder."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*")
                  if p.name.endswith((".tmp", ".old")) and ".onnxstream" in p.name)


def writing_into(folder: Path, pid: int) -> bool:
    """Whether process pid has an output open in folder: a named temporary, or one
    without a name (O_TMPFILE: /proc shows it as '<folder>/#<inode> (deleted)')."""
    if temporaries(folder):
        return True
    prefix = os.path.realpath(folder) + "/"
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(prefix) and target.endswith(" (deleted)") and "/#" in target:
            return True
    return False

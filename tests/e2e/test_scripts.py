"""The project's own scripts on their failure paths: scripts/fetch_httplib_source.sh, which
the Windows stage of scripts/test.sh runs to get cpp-httplib's single header, and
scripts/format.sh --check, the layout check scripts/test.sh runs first.

apt-get, dpkg-source and dpkg-query are stand-ins on PATH (shell scripts written here), so
that every way the fetch can fail is met without a network: each must say what failed,
exit non-zero, and leave no header behind (a build would otherwise take a half-written one
for the gui's); a whole one is cached with its version and reused without apt.
"""
from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fetch_httplib_source.sh"
FORMAT = Path(__file__).resolve().parents[2] / "scripts" / "format.sh"
VERSION = "0.11.4+ds-1+deb12u1"
HEADER = "// cpp-httplib, the stand-in's\n"


def _stand_in(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _tools(folder: Path, *, update_fails=False, source_fails=False, writes_dsc=True, unpack_fails=False,
           has_header=True, installed=True, copy_fails=False) -> Path:
    """Stand-ins for apt-get (update; source --download-only into the current folder),
    dpkg-source (-x DSC DIR) and dpkg-query (the installed version) behaving as asked."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    _stand_in(bin_dir, "dpkg-query", f'echo -n "{VERSION}"\n' if installed else "exit 1\n")
    update = "echo 'E: Failed to fetch' >&2; exit 100" if update_fails else "exit 0"
    if source_fails:
        source = "echo 'E: Unable to find a source package' >&2; exit 100"
    else:
        source = "echo dsc > cpp-httplib_0.11.4.dsc; exit 0" if writes_dsc else "exit 0"
    _stand_in(bin_dir, "apt-get", f'case " $* " in\n  *" update "*) {update} ;;\n  *" source "*) {source} ;;\nesac\nexit 0\n')
    unpack = "echo 'dpkg-source: error: bad signature' >&2; exit 2" if unpack_fails else (
        f'mkdir -p "$3"; printf "%s" "{HEADER}" > "$3/httplib.h"' if has_header else 'mkdir -p "$3"')
    _stand_in(bin_dir, "dpkg-source", unpack + "\n")
    if copy_fails:  # the header's copy into DEST (a full disk, say)
        _stand_in(bin_dir, "cp", "echo 'cp: No space left on device' >&2; exit 1\n")
    return bin_dir


def _run(tmp_path: Path, bin_dir: Path, dest: Path) -> subprocess.CompletedProcess:
    keyring = tmp_path / "keyring.gpg"
    keyring.write_bytes(b"")
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
               ONNXSTREAM_DEBIAN_KEYRING=str(keyring))
    return subprocess.run(["bash", str(SCRIPT), str(dest)], env=env, capture_output=True, text=True, timeout=60)


def _describe(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"


@pytest.mark.parametrize(("behaviour", "says"), [
    ({"update_fails": True}, "cannot read Debian's source index"),
    ({"source_fails": True}, f"cannot download the source package cpp-httplib={VERSION}"),
    ({"writes_dsc": False}, "downloaded no .dsc"),
    ({"unpack_fails": True}, "dpkg-source could not unpack cpp-httplib_0.11.4.dsc"),
    ({"has_header": False}, "source has no httplib.h"),
    ({"installed": False}, "libcpp-httplib-dev is not installed"),
    ({"copy_fails": True}, "cannot write"),
])
def test_a_failed_fetch_says_why_and_leaves_no_header(tmp_path, behaviour, says):
    dest = tmp_path / "third_party"
    # A header of another version cached before: a failed fetch must not leave it either
    # (its version no longer matches the installed library's).
    (dest / "include").mkdir(parents=True)
    (dest / "include" / "httplib.h").write_text("// an older one\n")
    (dest / "include" / ".version").write_text("0.10.0-1\n")
    proc = _run(tmp_path, _tools(tmp_path, **behaviour), dest)
    assert proc.returncode == 1, _describe(proc)
    assert says in proc.stderr, _describe(proc)
    assert proc.stderr.count("fetch_httplib_source.sh:") == 1, _describe(proc)
    assert proc.stdout == "", _describe(proc)
    if behaviour.get("installed", True):
        assert not (dest / "include").exists(), _describe(proc)
        assert not (dest / "apt").exists(), _describe(proc)
    else:  # refused before anything was fetched: the cache is left as it was
        assert (dest / "include" / "httplib.h").read_text() == "// an older one\n"


def test_a_fetched_header_is_cached_with_its_version_and_reused_without_apt(tmp_path):
    dest = tmp_path / "third_party"
    proc = _run(tmp_path, _tools(tmp_path), dest)
    assert proc.returncode == 0, _describe(proc)
    include = dest / "include"
    assert proc.stdout.strip() == str(include), _describe(proc)
    assert (include / "httplib.h").read_text() == HEADER
    assert (include / ".version").read_text().strip() == VERSION
    assert sorted(p.name for p in include.iterdir()) == [".version", "httplib.h"]
    assert not (dest / "apt").exists()
    # Again with an apt that cannot reach anything: the cached header answers.
    again = tmp_path / "again"
    again.mkdir()
    proc = _run(again, _tools(again, update_fails=True, source_fails=True), dest)
    assert proc.returncode == 0, _describe(proc)
    assert proc.stdout.strip() == str(include), _describe(proc)
    assert (include / "httplib.h").read_text() == HEADER


# --- scripts/format.sh --check, with a stand-in formatter (CLANG_FORMAT) -------------------

def _check_layout(tmp_path: Path, formatter_body: str) -> subprocess.CompletedProcess:
    """`format.sh --check --all` over the repository's sources, formatted by a stand-in."""
    _stand_in(tmp_path, "formatter", formatter_body)
    env = dict(os.environ, CLANG_FORMAT=str(tmp_path / "formatter"))
    return subprocess.run(["bash", str(FORMAT), "--check", "--all"], env=env, capture_output=True, text=True, timeout=120)


def test_the_layout_check_passes_when_the_formatter_would_change_nothing(tmp_path):
    proc = _check_layout(tmp_path, "exit 0\n")
    assert proc.returncode == 0, _describe(proc)
    assert "all formatted" in proc.stdout, _describe(proc)


def test_the_layout_check_names_each_file_the_formatter_would_change(tmp_path):
    # clang-format --dry-run's words for a file it would change, for two of the sources
    # (one named twice: a file is listed once).
    body = ('for f in "$@"; do case "$f" in\n'
            '  src/onnx/message_tree.cpp) echo "$f:3:1: warning: code should be clang-formatted '
            '[-Wclang-format-violations]" >&2; echo "$f:9:2: warning: code should be clang-formatted" >&2 ;;\n'
            '  include/onnxstream/result.hpp) echo "$f:1:1: warning: code should be clang-formatted" >&2 ;;\n'
            'esac; done\nexit 0\n')
    proc = _check_layout(tmp_path, body)
    assert proc.returncode == 1, _describe(proc)
    listed = [line.strip() for line in proc.stderr.splitlines() if line.startswith("  ")]
    assert listed == ["include/onnxstream/result.hpp", "src/onnx/message_tree.cpp"], _describe(proc)
    assert "all formatted" not in proc.stdout, _describe(proc)


@pytest.mark.parametrize("body", [
    "echo 'clang-format: error: unknown argument' >&2; exit 1\n",  # refuses an option
    "kill -SEGV $$\n",                                              # crashes, saying nothing
])
def test_the_layout_check_fails_when_the_formatter_fails(tmp_path, body):
    # Nothing was checked: the check must not pass on a formatter that named no file.
    proc = _check_layout(tmp_path, body)
    assert proc.returncode == 2, _describe(proc)
    assert "failed" in proc.stderr and "nothing was checked" in proc.stderr, _describe(proc)
    assert "all formatted" not in proc.stdout, _describe(proc)

"""refcheck.measured_run, which the memory budgets and the hostile-input suites read their
exit codes, times and peaks through: both of its branches, on stand-in programs (shell
scripts named by ONNXSTREAM_BIN), so that neither depends on what the binary does.

A run past its deadline must end in an AssertionError that says so, with the program killed,
not left running behind the test; a run that ends must give its own exit status, its time
and its peak.
"""
from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

import refcheck


def _stand_in(monkeypatch: pytest.MonkeyPatch, folder: Path, body: str) -> Path:
    """A shell script run in place of the binary (refcheck.binary_path reads ONNXSTREAM_BIN)."""
    script = folder / "stand_in.sh"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("ONNXSTREAM_BIN", str(script))
    return script


def test_a_run_that_ends_gives_its_exit_status_time_and_peak(tmp_path, monkeypatch):
    _stand_in(monkeypatch, tmp_path, 'echo "out $1"; echo "err $2" >&2; exit 3\n')
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("wb") as o, err.open("wb") as e:
        code, seconds, max_rss_kib = refcheck.measured_run(["first", "second"], 30, o, e)
    assert code == 3
    assert 0 < seconds < 30
    assert max_rss_kib > 0  # the shell's own, in KiB: more than nothing, far less than a GiB
    assert max_rss_kib < 1 << 20
    assert out.read_text() == "out first\n"
    assert err.read_text() == "err second\n"


def test_a_run_past_its_deadline_is_killed_and_named(tmp_path, monkeypatch):
    pid_file = tmp_path / "pid"
    # exec: the pid written is the process the deadline must kill, not a shell around it.
    _stand_in(monkeypatch, tmp_path, f'echo $$ > "{pid_file}"\nexec sleep 120\n')
    started = time.monotonic()
    with pytest.raises(AssertionError, match=r"still running after 1\.5 s"):
        refcheck.measured_run(["--flag"], 1.5, subprocess.DEVNULL, subprocess.DEVNULL)
    assert time.monotonic() - started < 30  # the deadline, not the sleep, ended it
    pid = int(pid_file.read_text())
    # Killed and reaped by the probe: no such process, not even a zombie.
    assert not Path(f"/proc/{pid}").exists(), f"process {pid} outlived its deadline"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)

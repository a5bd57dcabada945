"""`onnxstream.exe gui` under wine (scripts/test_windows.sh runs this file): the page and
the API answer a real HTTP client, a merge job writes the bytes the Linux build's merge
writes, and Ctrl-C stops the server with a job still running: the process exits (130, no
error), the port is free again, and the folder holds nothing it did not hold before but
the merged model.

Ctrl-C under wine: SIGINT to the wine process makes wine start the console control
handler on a thread of its own with CTRL_C_EVENT (wine's ntdll, int_handler), which is
what a console's Ctrl-C does on Windows: the same SetConsoleCtrlHandler path.

Needs: ONNXSTREAM_BIN (the .exe), ONNXSTREAM_WRAPPER=wine, the fixtures
(ONNXSTREAM_FIXTURES), ONNXSTREAM_LINUX_BIN for the byte comparison. Skips for a Linux binary.
"""
from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "e2e"))

import refcheck  # noqa: E402
import test_gui as gui  # noqa: E402  (its HTTP helpers: request, sse_until_finished, free_port)

pytestmark = pytest.mark.skipif(not refcheck.windows_binary(), reason="the Windows build's gui, run under wine")


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def test_the_page_the_api_a_merge_and_ctrl_c_under_wine(tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    shutil.copytree(gui.FIXTURES / "one_file", root / "one_file")
    gui.make_sparse_model(root / "sparse")
    outside = tmp_path / "outside.txt"
    outside.write_text("not for the page\n")
    before = files_under(root)
    port = gui.free_port()
    proc = subprocess.Popen([*refcheck.command_prefix(), str(refcheck.binary_path()), "gui", str(root), "--no-browser",
                             "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith(f"http://127.0.0.1:{port}/#token="), (url, proc.stderr.read() if proc.poll() else "")
        served = {"port": port, "token": url.split("#token=")[1]}

        # The page, then the API with the token (and without it: refused).
        status, body, _ = gui.request(served, "GET", "/", token=False)
        assert status == 200 and b"<html" in body.lower(), body[:200]
        status, body, _ = gui.request(served, "GET", "/api/list", {"path": ""}, token=False)
        assert status == 403, body
        status, body, _ = gui.request(served, "GET", "/api/list", {"path": "one_file"})
        assert status == 200, body
        entries = {e["name"]: e for e in json.loads(body)["entries"]}
        assert entries["model.onnx.data"]["size"] == (root / "one_file" / "model.onnx.data").stat().st_size
        status, body, _ = gui.request(served, "GET", "/api/inspect", {"path": "one_file/model.onnx"})
        assert status == 200 and json.loads(body)["ok"], body
        # Paths that would leave the folder, spelled the Windows ways too, are refused.
        for path in ("../outside.txt", "one_file/../../outside.txt", "one_file\\..\\..\\outside.txt",
                     "C:/windows/win.ini", "Z:" + str(outside), "one_file/NUL", "one_file/model.onnx:stream"):
            status, body, _ = gui.request(served, "GET", "/api/file", {"path": path})
            assert status in (400, 403, 404), (path, status, body)
            assert b"not for the page" not in body
        status, body, _ = gui.request(served, "GET", "/api/file", {"path": "one_file/model.onnx"})
        assert status == 200 and body == (root / "one_file" / "model.onnx").read_bytes()

        # A merge job, as the page runs it; its output is the Linux build's, byte for byte.
        status, body, _ = gui.request(served, "POST", "/api/jobs",
                                      body=urllib.parse.urlencode({"action": "merge", "path": "one_file/model.onnx"}))
        assert status == 200, body
        events = gui.sse_until_finished(served, json.loads(body)["id"])
        assert events[-1]["state"] == "done", events[-1]
        merged = root / "one_file" / "model.merged.onnx"
        assert [o["path"] for o in events[-1]["outputs"]] == ["one_file/model.merged.onnx"], events[-1]
        assert all(t.data_location != TensorProto.EXTERNAL for t in onnx.load(str(merged)).graph.initializer)
        linux = os.environ.get("ONNXSTREAM_LINUX_BIN")
        if linux:
            reference = tmp_path / "reference.onnx"
            subprocess.run([linux, "merge", str(root / "one_file" / "model.onnx"), "-o", str(reference)],
                           check=True, capture_output=True, timeout=120)
            assert merged.read_bytes() == reference.read_bytes()

        # A long job still running when Ctrl-C comes.
        status, body, _ = gui.request(served, "POST", "/api/jobs", body=urllib.parse.urlencode(
            {"action": "repack", "path": "sparse/m.onnx", "write-checksums": "1", "threads": "1"}))
        assert status == 200, body
        # Ctrl-C once it writes: its temporary is there for the stop to remove.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", f"/api/jobs/{json.loads(body)['id']}/events",
                     headers={"Host": f"127.0.0.1:{port}", "X-Onnxstream-Token": served["token"]})
        events = conn.getresponse()
        deadline = time.monotonic() + 60
        while not any(p.name.startswith(".onnxstream-") for p in (root / "sparse").iterdir()):
            chunk = events.read1(65536)
            assert b'"state":"running"' in chunk and time.monotonic() < deadline, chunk
        conn.close()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "error" not in err and "interrupted" not in err, err
    # The port is free again (nothing listens; a server may bind it, as httplib does with
    # SO_REUSEADDR past the closed connections' TIME_WAIT), and nothing is left but the merged model.
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=10).close()
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()
    assert files_under(root) == before | {"one_file/model.merged.onnx"}, sorted(files_under(root) - before)

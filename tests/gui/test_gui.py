"""`onnxstream gui`: the page in Debian's chromium (puppeteer-core, drive.mjs) and the
server's security over plain HTTP. Outputs written from the page are checked with
python-onnx and ONNX Runtime as the CLI's end-to-end tests do.

Needs: the binary (ONNXSTREAM_BIN), the fixtures (ONNXSTREAM_FIXTURES), tests/e2e and
tests/gui node_modules (scripts/setup_e2e.sh, scripts/setup_gui_tests.sh), /usr/bin/chromium.
Screenshots go to ONNXSTREAM_GUI_ARTIFACTS (default build/gui-screenshots).
"""
from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import refcheck  # noqa: E402

FIXTURES = Path(os.environ.get("ONNXSTREAM_FIXTURES", REPO / "build" / "fixtures"))
ARTIFACTS = Path(os.environ.get("ONNXSTREAM_GUI_ARTIFACTS", REPO / "build" / "gui-screenshots"))
HOSTILE_NAME = '<img src=x onerror="window.pwned=1">'
BIG_TENSORS = 3
BIG_ELEMENTS = 25_000_000  # 100 MB of float each: ~300 MB in all


def make_big_model(folder: Path) -> None:
    """A ~300 MB model with its weights in one external data file, written on the fly."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(1)
    inits = []
    with open(folder / "model.onnx.data", "wb") as data:
        for i in range(BIG_TENSORS):
            offset = data.tell()
            data.write(rng.integers(0, 255, BIG_ELEMENTS * 4, dtype=np.uint8).tobytes())
            t = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[BIG_ELEMENTS])
            t.data_location = TensorProto.EXTERNAL
            for key, value in (("location", "model.onnx.data"), ("offset", str(offset)),
                               ("length", str(BIG_ELEMENTS * 4))):
                t.external_data.add(key=key, value=value)
            inits.append(t)
    nodes = [helper.make_node("Add", ["w0", "w1"], ["s"]), helper.make_node("Add", ["s", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "big", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [BIG_ELEMENTS])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    (folder / "model.onnx").write_bytes(model.SerializeToString())


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A folder with fixtures, a link out of it, and the gui serving it on a free port."""
    base = tmp_path_factory.mktemp("gui")
    root = base / "served"
    root.mkdir()
    shutil.copytree(FIXTURES / "resnet18", root / "resnet18")
    shutil.copytree(FIXTURES / "bad_missing_data", root / "missing")
    shutil.copytree(FIXTURES / "renamed", root / "renamed")  # model.data: found by a common name, a guess
    hostile = root / "hostile"
    hostile.mkdir()
    node = helper.make_node("Identity", [HOSTILE_NAME], ["y"])
    graph = helper.make_graph([node], "<b>graph</b>", [helper.make_tensor_value_info(HOSTILE_NAME, TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, producer_name="<script>window.pwned=2</script>",
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, str(hostile / "model.onnx"))
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not for the page\n")
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "linkdir").symlink_to(outside)
    proc = subprocess.Popen([str(refcheck.binary_path()), "gui", str(root), "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), f"no URL printed: {url!r} {proc.stderr.read() if proc.poll() else ''}"
    parsed = urllib.parse.urlsplit(url)
    # The token is in the fragment, which a browser never sends to a server.
    assert parsed.query == "" and parsed.path == "/", url
    token = urllib.parse.parse_qs(parsed.fragment)["token"][0]
    yield {"root": root, "outside": outside, "port": parsed.port, "token": token, "url": url, "proc": proc,
           "base": base}
    proc.terminate()
    assert proc.wait(timeout=30) in (0, 128 + 15), proc.stderr.read()  # SIGTERM: 143, as the CLI exits on it
    shutil.rmtree(base, ignore_errors=True)


def request(served, method, path, query=None, headers=None, body=None, token=True):
    """One request; the token (the served one for True) goes in X-Onnxstream-Token as the page sends it."""
    q = dict(query or {})
    conn = http.client.HTTPConnection("127.0.0.1", served["port"], timeout=30)
    h = {"Host": f"127.0.0.1:{served['port']}"}
    if token:
        h["X-Onnxstream-Token"] = served["token"] if token is True else token
    if body is None and method == "POST":
        body = b""
    h.update(headers or {})
    if body is not None and "Content-Type" not in h:
        h["Content-Type"] = "application/x-www-form-urlencoded"
    conn.request(method, path + "?" + urllib.parse.urlencode(q), body=body, headers=h)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data, r


# ---------------------------------------------------------------- security, plain HTTP

def test_the_page_and_api_answer_with_the_token(served):
    # The page itself holds no data: a navigation (which cannot send a header) loads it.
    status, body, r = request(served, "GET", "/", token=False)
    assert status == 200 and b"onnxstream" in body
    assert "default-src 'none'" in r.getheader("Content-Security-Policy")
    assert r.getheader("Set-Cookie") is None
    status, body, r = request(served, "GET", "/api/list", {"path": ""})
    assert status == 200 and r.getheader("Set-Cookie") is None
    entries = {e["name"]: e for e in json.loads(body)["entries"]}
    assert not entries["resnet18"]["outside"] and not entries["missing"]["outside"]
    assert entries["link.txt"]["outside"] and entries["linkdir"]["outside"]
    # A cookie (which has no port: every server on this machine would receive it) or a URL
    # (browser history) never carries the token.
    for query, headers in (({"token": served["token"]}, {}),
                           ({}, {"Cookie": f"onnxstream_token_{served['port']}={served['token']}"})):
        status, _, _ = request(served, "GET", "/api/list", dict(query, path=""), headers=headers, token=False)
        assert status == 403, (query, headers)


@pytest.mark.parametrize("token", [False, "0" * 32, "short"])
def test_a_missing_or_wrong_token_is_refused(served, token):
    for path in ("/api/list", "/api/inspect", "/api/file", "/api/actions", "/api/jobs/1/events"):
        status, body, _ = request(served, "GET", path, {"path": "resnet18/model.onnx"}, token=token)
        assert status == 403, path
        assert b"token" in body
    status, _, _ = request(served, "POST", "/api/jobs", token=token,
                           body=urllib.parse.urlencode({"action": "merge", "path": "resnet18/model.onnx"}))
    assert status == 403


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1.nip.io:{port}", "127.0.0.1:1", ""])
def test_a_foreign_host_is_refused(served, host):
    status, _, _ = request(served, "GET", "/api/list", headers={"Host": host.format(port=served["port"])})
    assert status == 403


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://localhost:1", "https://127.0.0.1:{port}"])
def test_a_foreign_origin_cannot_post(served, origin):
    before = sorted(p.name for p in (served["root"] / "resnet18").iterdir())
    status, _, _ = request(served, "POST", "/api/jobs", headers={"Origin": origin.format(port=served["port"])},
                           body=urllib.parse.urlencode({"action": "merge", "path": "resnet18/model.onnx",
                                                        "output": "resnet18/evil.onnx"}))
    assert status == 403
    assert sorted(p.name for p in (served["root"] / "resnet18").iterdir()) == before


@pytest.mark.parametrize("path", ["..", "../outside/secret.txt", "resnet18/../../outside/secret.txt",
                                  "/etc/passwd", str(Path("/etc/passwd")), "link.txt", "linkdir/secret.txt",
                                  "resnet18/\x00x"])
def test_paths_outside_the_folder_are_refused(served, path):
    for route in ("/api/file", "/api/list", "/api/inspect"):
        status, body, _ = request(served, "GET", route, {"path": path})
        assert status in (400, 403), (route, path, status)
        assert b"not for the page" not in body
    status, _, _ = request(served, "GET", "/api/list", {"path": "linkdir"})
    assert status == 403


def test_job_fields_and_uploads_stay_inside_the_folder(served):
    for field, value in (("output", "../outside/x.onnx"), ("output", "/tmp/x.onnx"), ("data", "link.txt"),
                         ("output", "linkdir/x.onnx")):
        status, body, _ = request(served, "POST", "/api/jobs",
                                  body=urllib.parse.urlencode({"action": "merge", "path": "resnet18/model.onnx",
                                                               field: value}))
        assert status == 400, (field, value, body)
        assert json.loads(body)["error"]["code"] == "unsafe_location"
    for name in ("../up.txt", ".hidden", "a/b"):
        status, _, _ = request(served, "POST", "/api/upload", {"dir": "", "name": name}, body=b"x",
                               headers={"Content-Type": "application/octet-stream"})
        assert status in (400, 403), name
    status, _, _ = request(served, "POST", "/api/upload", {"dir": "linkdir", "name": "up.txt"}, body=b"x",
                           headers={"Content-Type": "application/octet-stream"})
    assert status == 403
    assert sorted(p.name for p in served["outside"].iterdir()) == ["secret.txt"]


def sse_until_finished(served, job_id, timeout=120):
    """The job's server-sent events until it finishes; returns them all."""
    conn = http.client.HTTPConnection("127.0.0.1", served["port"], timeout=timeout)
    conn.request("GET", f"/api/jobs/{job_id}/events",
                 headers={"Host": f"127.0.0.1:{served['port']}", "X-Onnxstream-Token": served["token"]})
    r = conn.getresponse()
    assert r.status == 200 and r.getheader("Content-Type").startswith("text/event-stream")
    events = []
    buffer = b""
    while not events or events[-1]["state"] == "running":
        chunk = r.read1(65536)
        assert chunk, "the event stream ended before the job finished"
        buffer += chunk
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            assert event.startswith(b"data: "), event
            events.append(json.loads(event[6:]))
    conn.close()
    return events


def make_sparse_model(folder: Path) -> None:
    """folder/m.onnx over a sparse GiB of weights (w.data): instant to make, seconds to hash
    (and long to repack under wine)."""
    folder.mkdir()
    size = 1 << 30
    with open(folder / "w.data", "wb") as f:
        f.truncate(size)
    t = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[size])
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "w.data"), ("offset", "0"), ("length", str(size))):
        t.external_data.add(key=key, value=value)
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "sparse", [],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [size])], initializer=[t])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(folder / "m.onnx"))


def test_one_job_per_output_and_a_cancel_leaves_nothing(served):
    """Over plain HTTP: a second job for a busy output is refused; Cancel stops the first."""
    folder = served["root"] / "sparse"
    make_sparse_model(folder)
    before = sorted(p.name for p in folder.iterdir())
    job = {"action": "repack", "path": "sparse/m.onnx", "write-checksums": "1", "threads": "1"}
    status, body, _ = request(served, "POST", "/api/jobs", body=urllib.parse.urlencode(job))
    assert status == 200, body
    first = json.loads(body)["id"]
    status, body, _ = request(served, "POST", "/api/jobs", body=urllib.parse.urlencode(job))
    assert status == 409, body
    assert "another job is writing sparse/m.repacked.onnx" in json.loads(body)["error"]["message"]
    status, _, _ = request(served, "POST", f"/api/jobs/{first}/cancel", body="")
    assert status == 200
    events = sse_until_finished(served, first)
    assert events[-1]["state"] == "cancelled", events[-1]
    assert events[-1]["error"]["code"] == "interrupted"
    assert sorted(p.name for p in folder.iterdir()) == before
    # The output is free again once the job ended.
    status, body, _ = request(served, "POST", "/api/jobs", body=urllib.parse.urlencode(dict(job, action="verify")))
    assert status == 200
    assert sse_until_finished(served, json.loads(body)["id"])[-1]["state"] == "done"
    shutil.rmtree(folder)


def test_analyze_is_a_job_with_progress_whose_result_is_kept_per_file(served):
    """The model view's analyze runs as a job (progress in passes, cancellable), says what
    optimize removes (on a torchvision ResNet-18), and opening
    the same file again answers at once from the kept result; a touched file runs again."""
    model = served["root"] / "resnet18" / "model.onnx"
    optimized = json.loads(subprocess.run([str(refcheck.binary_path()), "optimize", str(model), "--dry-run", "--json"],
                                          capture_output=True, text=True, check=True).stdout)
    removed = optimized["before"]["nodes"] - optimized["after"]["nodes"]
    job = urllib.parse.urlencode({"action": "analyze", "path": "resnet18/model.onnx"})
    status, body, _ = request(served, "POST", "/api/jobs", body=job)
    assert status == 200, body
    events = sse_until_finished(served, json.loads(body)["id"])
    assert events[-1]["state"] == "done", events[-1]
    report = events[-1]["result"]
    assert report["summary"]["removable_nodes"] == removed > 0, report["summary"]
    assert report["nodes"] == optimized["before"]["nodes"]
    assert f"{removed} nodes removable in all" in events[-1]["text"]
    assert any(e["state"] == "running" for e in events)

    status, body, _ = request(served, "POST", "/api/jobs", body=job)
    assert status == 200, body
    again = sse_until_finished(served, json.loads(body)["id"])
    assert [e["state"] for e in again] == ["done"]  # no worker: the kept result
    assert again[-1]["result"] == report

    os.utime(model, ns=(model.stat().st_atime_ns, model.stat().st_mtime_ns + 1_000_000_000))
    status, body, _ = request(served, "POST", "/api/jobs", body=job)
    assert status == 200, body
    fresh = sse_until_finished(served, json.loads(body)["id"])
    assert fresh[0]["state"] == "running" and fresh[-1]["state"] == "done"
    assert fresh[-1]["result"]["summary"] == report["summary"]


def test_the_port_is_bound_to_loopback_only(served):
    port = f"{served['port']:04X}"
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                if state == "0A" and local.endswith(":" + port):
                    listening.append(local.split(":")[0])
    assert listening == ["0100007F"], listening


def start_gui(root: Path, *args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([str(refcheck.binary_path()), "gui", str(root), "--no-browser", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    return proc, proc.stdout.readline().strip()


def get(port: int, path: str, host: str, token: str | None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Host": host}
    if token:
        headers["X-Onnxstream-Token"] = token
    conn.request("GET", path, headers=headers)
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, body


def test_a_network_host_works_with_the_token_as_its_guard(tmp_path):
    """Issue 29 item 9: --host 0.0.0.0 answered 403 to every other address."""
    proc, url = start_gui(tmp_path, "--host", "0.0.0.0")
    try:
        assert url.startswith("http://127.0.0.1:") and "/#token=" in url, url
        port, token = urllib.parse.urlsplit(url).port, url.split("#token=")[1]
        # Another machine names this one by its address on the network (a documentation address here).
        for host in (f"192.0.2.7:{port}", f"myhost.local:{port}", f"127.0.0.1:{port}"):
            status, body = get(port, "/api/list?path=", host, token)
            assert status == 200, (host, body)
            status, _ = get(port, "/api/list?path=", host, None)
            assert status == 403, host
        status, body = get(port, "/api/server", f"192.0.2.7:{port}", token)
        assert json.loads(body) == {"ok": True, "network": True}
        # The page says so where it is seen.
        status, body = get(port, "/app.js", f"192.0.2.7:{port}", None)
        assert status == 200 and b"reachable from the network" in body
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "warning: listening on 0.0.0.0" in err and "the token is the only guard" in err, err


def test_a_loopback_server_says_it_is_not_on_the_network(served):
    status, body, _ = request(served, "GET", "/api/server")
    assert status == 200 and json.loads(body) == {"ok": True, "network": False}


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("port", ["free", "0"])
def test_the_port_option_takes_any_port(tmp_path, port):
    """Issue 30 item 10: --port 8765 (the README's example) went through the thread-count
    parser (at most 1024); issue 29 item 9: --port 0 (any free port) was refused."""
    wanted = free_port() if port == "free" else 0
    assert port == "0" or wanted > 1024
    proc, url = start_gui(tmp_path, "--port", str(wanted))
    try:
        assert url.startswith("http://127.0.0.1:"), (url, proc.stderr.read() if proc.poll() is not None else "")
        got = urllib.parse.urlsplit(url).port
        assert got == wanted or (wanted == 0 and got > 0)
        status, _ = get(got, "/api/list?path=", f"127.0.0.1:{got}", url.split("#token=")[1])
        assert status == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.mark.parametrize("port", ["65536", "-1", "80x", "99999999999999999999999"])
def test_a_port_out_of_range_is_a_usage_error(tmp_path, port):
    proc = subprocess.run([str(refcheck.binary_path()), "gui", str(tmp_path), "--no-browser", "--port", port],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 2, refcheck.describe(proc)
    assert proc.stdout == "" and "--port takes a number from 0 to 65535" in proc.stderr, proc.stderr


def test_ctrl_c_stops_the_gui_quietly(tmp_path):
    """Issue 30 item 13: Ctrl-C, the way to stop the gui, printed an error."""
    import signal
    proc, url = start_gui(tmp_path)
    assert url.startswith("http://127.0.0.1:"), url
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "error" not in err and "interrupted" not in err, err


# ---------------------------------------------------------------- the server is a module

GUI_MODULE = "onnxstream-gui.so"


def relocated_binary(folder: Path) -> Path:
    """A copy of the binary in `folder`: a module beside it is the first place tried."""
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / "onnxstream"
    shutil.copy2(refcheck.binary_path(), copy)
    return copy


def mapped_gui_modules(pid: int) -> set[str]:
    """The gui modules process `pid` has mapped, as real paths."""
    with open(f"/proc/{pid}/maps") as f:
        return {str(Path(line.split()[-1]).resolve()) for line in f if line.rstrip().endswith("/" + GUI_MODULE)}


def serve_once(binary: Path, root: Path) -> set[str]:
    """Starts `binary gui root`, checks the page answers, and returns the gui modules it mapped."""
    proc = subprocess.Popen([str(binary), "gui", str(root), "--no-browser"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), f"no URL printed: {url!r}"
        parsed = urllib.parse.urlsplit(url)
        conn = http.client.HTTPConnection("127.0.0.1", parsed.port, timeout=30)
        conn.request("GET", "/api/list?path=", headers={"Host": f"127.0.0.1:{parsed.port}",
                                                        "X-Onnxstream-Token": parsed.fragment.split("token=")[1]})
        assert conn.getresponse().status == 200
        conn.close()
        return mapped_gui_modules(proc.pid)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_the_server_is_a_module_the_other_commands_never_load():
    """cpp-httplib brings libssl (whose start-up runs in every process that links it) and
    three brotli libraries: only `gui` loads them, from onnxstream-gui.so."""
    binary = refcheck.binary_path()
    linked = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    for library in ("httplib", "libssl", "brotli"):
        assert library not in linked, linked
    assert (binary.parent / GUI_MODULE).is_file()


def test_a_module_that_does_not_load_is_a_clear_error(tmp_path):
    copy = relocated_binary(tmp_path / "bin")
    (copy.parent / GUI_MODULE).write_bytes(b"not a shared object\n" * 8)
    proc = subprocess.run([str(copy), "gui", str(tmp_path), "--no-browser"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 1, refcheck.describe(proc)
    assert proc.stdout == ""
    assert "error: onnxstream cannot start the gui: its gui module did not load" in proc.stderr, proc.stderr
    assert GUI_MODULE in proc.stderr and "reinstall onnxstream" in proc.stderr, proc.stderr


def test_a_shared_object_that_is_not_the_gui_module_is_refused(tmp_path):
    copy = relocated_binary(tmp_path / "bin")
    zlib = Path("/lib/x86_64-linux-gnu/libz.so.1")
    if not zlib.exists():
        pytest.skip("no libz.so.1 to stand in for the module")
    shutil.copy(zlib, copy.parent / GUI_MODULE)
    proc = subprocess.run([str(copy), "gui", str(tmp_path), "--no-browser"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 1, refcheck.describe(proc)
    assert f"{copy.parent / GUI_MODULE} is not the gui module of this build of onnxstream" in proc.stderr, proc.stderr


def test_the_module_beside_a_relocated_binary_serves(tmp_path):
    copy = relocated_binary(tmp_path / "bin")
    shutil.copy2(refcheck.binary_path().parent / GUI_MODULE, copy.parent / GUI_MODULE)
    assert serve_once(copy, tmp_path) == {str((copy.parent / GUI_MODULE).resolve())}


def test_an_installed_binary_finds_its_module_under_the_prefix(tmp_path):
    """`cmake --install` under any prefix: the binary in PREFIX/bin loads the module from
    PREFIX/LIBDIR/onnxstream, not the build tree's."""
    build = refcheck.binary_path().parent
    if not (build / "CMakeCache.txt").exists():
        pytest.skip("the binary is not in a build tree")
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", str(build), "--prefix", str(prefix)], capture_output=True, text=True,
                   check=True, timeout=300)
    installed = prefix / "bin" / "onnxstream"
    modules = list(prefix.glob(f"lib*/**/onnxstream/{GUI_MODULE}"))
    assert len(modules) == 1, list(prefix.rglob("*"))
    assert serve_once(installed, tmp_path) == {str(modules[0].resolve())}


# ---------------------------------------------------------------- the page in chromium

@pytest.fixture(scope="module")
def page_run(served):
    """Runs drive.mjs once over the served folder (with a ~300 MB model for the cancel)."""
    if not Path("/usr/bin/chromium").exists():
        pytest.fail("chromium is missing: run scripts/install_deps.sh")
    if not (HERE / "node_modules" / "puppeteer-core").is_dir():
        pytest.fail("puppeteer-core is missing: run scripts/setup_gui_tests.sh")
    root = served["root"]
    shutil.rmtree(ARTIFACTS, ignore_errors=True)  # no screenshot from an earlier run passes for this one
    make_big_model(root / "big")
    big_before = sorted(p.name for p in (root / "big").iterdir())
    result_file = served["base"] / "drive.json"
    env = dict(os.environ, GUI_DROP_MODEL=str(root / "resnet18" / "model.onnx"))
    proc = subprocess.run(["node", str(HERE / "drive.mjs"), f"http://127.0.0.1:{served['port']}", served["token"],
                           str(ARTIFACTS), str(result_file)], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(result_file.read_text())
    # Everything but the repack shown running (big/shown.onnx*) must be as before the cancel.
    big_after = sorted(p.name for p in (root / "big").iterdir() if not p.name.startswith("shown."))
    shutil.rmtree(root / "big")  # ~300 MB, and the repack shown running
    results["big_before"], results["big_after"] = big_before, big_after
    assert "failure" not in results, results["failure"]
    return results


def test_the_page_runs_without_script_errors(page_run):
    assert page_run["console_errors"] == []


def test_the_page_keeps_the_token_out_of_urls_and_cookies(page_run):
    """Issue 29 item 3: the token was a cookie, which every server on 127.0.0.1 received."""
    address = page_run["address"]
    assert "token" not in address["href"] and address["cookie"] == "", address


def test_a_deep_link_shows_the_inputs_and_the_data_file(page_run, served):
    view = page_run["deep_link"]
    model = onnx.load(str(served["root"] / "resnet18" / "model.onnx"), load_external_data=False)
    assert model.graph.input[0].name in view["inputs"]
    assert view["status"] == ["found"]
    assert any("model.onnx.data" in row and "resnet18/model.onnx.data" in row for row in view["data_rows"])
    # How it was found, in words for people: no flag, no stable name from the JSON.
    assert any("resnet18/model.onnx.data (next to the model)" in row for row in view["data_rows"]), view["data_rows"]
    assert "fits in one .onnx file" in view["merged"][0]
    # analyze's one number (the categories overlap: never their sum), and no Analyze button.
    optimized = json.loads(subprocess.run([str(refcheck.binary_path()), "optimize", str(served["root"] / "resnet18" / "model.onnx"),
                                           "--dry-run", "--json"], capture_output=True, text=True, check=True).stdout)
    before, after = optimized["before"]["nodes"], optimized["after"]["nodes"]
    assert view["analyze"][0].startswith(f"Optimize would remove {before - after} of {before} nodes."), view["analyze"]
    assert "Analyze" not in page_run["buttons"]
    assert page_run["keyboard_form"]


def test_a_guessed_data_file_is_named_as_a_guess_in_words_for_people(page_run):
    rows = page_run["guessed"]["data_rows"]
    assert any("renamed/model.data (guessed: a usual name for a model's data)" in row for row in rows), rows
    assert not any("common_name" in row or "--" in row for row in rows), rows


def test_model_text_is_shown_as_text_never_as_markup(page_run):
    hostile = page_run["hostile"]
    assert hostile["pwned"] is None and hostile["injected"] == 0
    assert HOSTILE_NAME in hostile["inputs"]
    assert "<script>window.pwned=2</script>" in hostile["summary"][0]


def test_a_dropped_model_is_found_by_name_and_size_and_others_are_copied_in(page_run, served):
    drop = page_run["drop"]
    assert drop["path"][0].startswith("resnet18/model.onnx")
    assert any("found at resnet18/model.onnx" in s for s in drop["status"])
    assert (served["root"] / "notes.txt").read_text() == "dropped bytes\n"
    assert not [p for p in served["root"].iterdir() if ".upload-" in p.name]


@pytest.fixture
def ort():
    """ONNX Runtime (tests/e2e/node_modules) is needed; fails with the fix when it is not installed."""
    problem = refcheck.ort_problem()
    if problem:
        pytest.fail(problem)


def test_merge_split_and_optimize_from_the_page_write_models_that_run_the_same(page_run, served, ort):
    folder = served["root"] / "resnet18"
    original = folder / "model.onnx"
    expected = refcheck.run_ort(original, refcheck.make_inputs(original, seed=3))
    # The merge's report says where the data came from, in the page's words.
    assert "resnet18/model.onnx.data (next to the model)" in page_run["merge"]["text"], page_run["merge"]["text"]
    for key, name in (("merge", "model.merged.onnx"), ("split", "model.split.onnx"), ("optimize", "model.optimized.onnx")):
        job = page_run[key]
        assert job["state"] == "done", job["text"]
        assert f"resnet18/{name}" in job["outputs"], job["outputs"]
        out = folder / name
        refcheck.check_model(out)
        refcheck.assert_same_outputs(expected, refcheck.run_ort(out, refcheck.make_inputs(original, seed=3)))
    merged = onnx.load(str(folder / "model.merged.onnx"), load_external_data=False)
    assert not any(refcheck.is_external(t) for _, t in refcheck.iter_tensors(merged))
    assert "resnet18/model.split.onnx.data" in page_run["split"]["outputs"]
    refcheck.assert_same_tensors(original, folder / "model.split.onnx")
    assert page_run["downloaded"] == [{"name": "model.merged.onnx", "size": (folder / "model.merged.onnx").stat().st_size}]
    assert page_run["range"] == {"status": 206, "length": 100,
                                 "range": f"bytes 0-99/{(folder / 'model.merged.onnx').stat().st_size}"}


def test_the_forms_come_from_the_parameter_table(page_run, served):
    """Issue 31: labels in words with the flag shown small, a select for a choice, the
    table's defaults filled in; the choice the select makes reaches the library."""
    form = page_run["convert_form"]
    assert form["dtype"] == ["fp16", "bf16"] and form["dtype_value"] == "fp16", form
    assert "Precision --dtype" in form["labels"] and "Alignment --align" in form["labels"], form["labels"]
    assert form["align"] == "", form  # no default value: the help says what happens without one
    assert any("default: 4096 for tensors of at least 1 MiB" in h for h in form["help"]), form["help"]
    split = page_run["split_form"]
    assert split["threshold"] == "1024" and any("(default 1024)" in h for h in split["help"]), split
    run = page_run["convert_bf16"]
    assert run["state"] == "done", run["text"]
    out = served["root"] / "resnet18" / "model.bf16.onnx"
    model = onnx.load(str(out), load_external_data=False)
    assert any(t.data_type == onnx.TensorProto.BFLOAT16 for t in model.graph.initializer)


def test_a_form_shows_the_default_output_offers_the_folders_files_and_says_why_it_cannot_run(page_run, served):
    """Issue 34: the output field shows the name the command line gives the output (the
    server's rule, following the choices made), file fields offer the model's folder
    (models only for a model), and the run button is disabled with the reason beside it
    while a field the action needs is empty."""
    fp16, bf16 = page_run["convert_output_fp16"], page_run["convert_output_bf16"]
    assert fp16["placeholder"] == "resnet18/model.fp16.onnx" and fp16["value"] == "", fp16
    assert bf16["placeholder"] == "resnet18/model.bf16.onnx" and "model.bf16.onnx" in bf16["note"], bf16
    # ... which is the file the job wrote with the field left empty.
    assert page_run["convert_bf16"]["state"] == "done" and (served["root"] / bf16["placeholder"]).is_file()
    empty, filled = page_run["diff_empty"], page_run["diff_filled"]
    assert empty["disabled"] and empty["why"].startswith("fill in ") and empty["why"].endswith(" first"), empty
    assert empty["described"] == "why-diff", empty
    # The folder holds the model, its data and what earlier jobs wrote.
    listed = sorted(f"resnet18/{p.name}" for p in (served["root"] / "resnet18").iterdir() if not p.name.startswith("."))
    assert "resnet18/model.onnx" in empty["lists"]["other"], empty["lists"]
    assert empty["lists"]["other"] == [p for p in listed if p.endswith(".onnx")], empty["lists"]
    assert "resnet18/model.onnx.data" in empty["lists"]["data"] and set(empty["lists"]["data"]) <= set(listed)
    assert not filled["disabled"] and filled["why"] == "" and filled["described"] is None, filled


def test_the_default_output_api_names_what_the_command_line_writes(served):
    status, body, _ = request(served, "GET", "/api/output", {"path": "resnet18/model.onnx", "action": "merge"})
    assert status == 200 and json.loads(body) == {"ok": True, "output": "resnet18/model.merged.onnx"}, body
    status, body, _ = request(served, "GET", "/api/output", {"path": "resnet18/model.onnx", "action": "convert",
                                                              "dtype": "bf16"})
    assert json.loads(body)["output"] == "resnet18/model.bf16.onnx", body
    status, body, _ = request(served, "GET", "/api/output", {"path": "resnet18/model.onnx", "action": "verify"})
    assert status == 200 and json.loads(body)["output"] == "", body  # it writes no model
    status, _, _ = request(served, "GET", "/api/output", {"path": "../outside/secret.txt", "action": "merge"})
    assert status in (400, 403)
    status, _, _ = request(served, "GET", "/api/output", {"path": "resnet18/model.onnx", "action": "merge"}, token=False)
    assert status == 403
    status, body, _ = request(served, "GET", "/api/output", {"path": "resnet18/model.onnx", "action": "no-such"})
    assert status == 400 and "no such action" in json.loads(body)["error"]["message"], body
    status, body, _ = request(served, "GET", "/api/output", {"path": "resnet18/model.onnx", "action": "convert",
                                                              "dtype": "../../x"})
    assert status == 200 and ".." not in json.loads(body)["output"], body  # a bad choice names no file


def test_an_existing_output_is_an_error_worded_for_the_page(page_run):
    job = page_run["merge_again"]
    assert job["state"] == "failed"
    assert "already exists" in job["text"] and "tick 'force'" in job["text"] and "--force" not in job["text"]


def test_a_missing_data_file_shows_the_message(page_run):
    missing = page_run["missing"]
    assert missing["status"] == ["missing"]
    assert any("not found" in p.lower() or "missing" in p.lower() for p in missing["problems"]), missing
    assert "unknown until the problems above are fixed" in missing["merged"][0]
    assert any("drop the file on the page" in p and "--data" not in p for p in missing["problems"]), missing


def test_diff_from_the_page_finds_a_model_equal_to_itself(page_run):
    job = page_run["diff"]
    assert job["state"] == "done" and "the models are equivalent" in job["text"], job["text"]


def test_a_cancelled_job_leaves_nothing_behind(page_run):
    job = page_run["cancel"]
    assert page_run["cancel_clicked"]
    assert job["state"] == "cancelled", job["text"]
    assert "nothing was written" in job["text"]
    assert "of 286.1 MiB" in page_run["cancel_progress"], page_run["cancel_progress"]
    assert page_run["big_after"] == page_run["big_before"] == ["model.onnx", "model.onnx.data"]


def test_the_page_fits_a_phone_width_and_leaves_screenshots(page_run):
    assert page_run["phone_scroll_width"] <= 400
    for name in ("files", "model", "merge-done", "optimize-done", "error", "missing", "drop", "progress", "cancelled",
                 "phone"):
        shot = ARTIFACTS / f"{name}.png"
        assert shot.is_file() and shot.stat().st_size > 5000, name


def run_job(served, fields):
    """Starts a job over the API and returns its last event."""
    status, body, _ = request(served, "POST", "/api/jobs", body=urllib.parse.urlencode(fields))
    assert status == 200, body
    last = sse_until_finished(served, json.loads(body)["id"])[-1]
    last["paths"] = [o["path"] for o in last.get("outputs", [])]
    return last


def test_a_refusal_names_the_page_field_not_the_flag(served):
    """The same library error as the CLI's '--data-name' refusal (tests/e2e/test_split.py),
    worded for the page: the field, and the remedy listed as data."""
    output = served["root"] / "resnet18" / "model.split.onnx"
    # An earlier test of this module may have split the model already: the refused job
    # must leave whatever is there as it was.
    before = output.read_bytes() if output.exists() else None
    last = run_job(served, {"action": "split", "path": "resnet18/model.onnx", "data-name": "sub/x.data"})
    assert last["state"] == "failed", last
    error = last["error"]
    assert "not a path ('sub/x.data')" in error["message"], error
    assert "give the field 'data-name' a plain file name" in error["hint"], error
    assert "--" not in error["message"] + error["hint"], error
    assert {"change": "choose_data_name", "argument": ""} in error["remedies"], error
    assert (output.read_bytes() if output.exists() else None) == before
    assert not (served["root"] / "resnet18" / "sub").exists()


def test_extract_from_the_api_keeps_what_the_output_needs(served):
    """The page's Extract action is the library's command: the output it names, the weights
    copied to a new data file beside the model; a name that is no value is refused by name,
    worded without flags, and writes nothing."""
    folder = served["root"] / "resnet18"
    last = run_job(served, {"action": "extract", "path": "resnet18/model.onnx", "outputs": "logits", "force": "1"})
    assert last["state"] == "done", last
    assert {"resnet18/model.extract.onnx", "resnet18/model.extract.onnx.data"} <= set(last["paths"]), last["paths"]
    extracted = onnx.load(str(folder / "model.extract.onnx"), load_external_data=False)
    assert [o.name for o in extracted.graph.output] == ["logits"]
    before = sorted(p.name for p in folder.iterdir())
    last = run_job(served, {"action": "extract", "path": "resnet18/model.onnx", "outputs": "no_such", "output": "x.onnx"})
    assert last["state"] == "failed", last
    assert "'no_such'" in last["error"]["message"] and "--" not in last["error"]["hint"], last["error"]
    assert sorted(p.name for p in folder.iterdir()) == before


def test_convert_and_exports_from_the_api_write_what_the_references_read(served, ort, tmp_path):
    """The page's Convert and Export actions run the library's commands: ONNX Runtime runs
    the fp16 model close to the original, OpenCV runs the Caffe export within 1e-4, and the
    safetensors file holds every initializer under a header that follows the format."""
    import cv2  # python3-opencv
    folder = served["root"] / "resnet18"
    original = folder / "model.onnx"
    inputs = refcheck.make_inputs(original, seed=5)
    expected = refcheck.run_ort(original, inputs)

    # The precision is required, as on the command line (the page's select always sends it).
    last = run_job(served, {"action": "convert", "path": "resnet18/model.onnx", "dtype": "fp16", "keep-io-types": "1"})
    assert last["state"] == "done", last
    converted = folder / "model.fp16.onnx"
    assert "resnet18/model.fp16.onnx" in last["paths"], last["paths"]
    refcheck.check_model(converted)
    floats = [t for _, t in refcheck.iter_tensors(onnx.load(str(converted), load_external_data=False))
              if t.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16)]
    assert floats and all(t.data_type == TensorProto.FLOAT16 for t in floats)
    got = refcheck.run_ort(converted, inputs)
    for name, want in expected.items():
        assert np.abs(got[name].astype(np.float64) - want).max() <= 1e-2 * max(np.abs(want).max(), 1e-12), name

    last = run_job(served, {"action": "export-caffe", "path": "resnet18/model.onnx"})
    assert last["state"] == "done", last
    assert {"resnet18/model.prototxt", "resnet18/model.caffemodel"} <= set(last["paths"]), last["paths"]
    net = cv2.dnn.readNetFromCaffe(str(folder / "model.prototxt"), str(folder / "model.caffemodel"))
    (name, value), = inputs.items()
    net.setInput(value.astype(np.float32), name)
    (out_name, want), = expected.items()
    got = net.forward().reshape(want.shape).astype(np.float64)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
    # A second job for the same outputs without 'force' is the CLI's refusal, worded for the page.
    last = run_job(served, {"action": "export-caffe", "path": "resnet18/model.onnx"})
    assert last["state"] == "failed" and "already exists" in last["error"]["message"], last

    last = run_job(served, {"action": "export-safetensors", "path": "resnet18/model.onnx"})
    assert last["state"] == "done", last
    data = (folder / "model.safetensors").read_bytes()
    header_length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + header_length])
    assert (8 + header_length) % 8 == 0
    model = onnx.load(str(original))
    for init in model.graph.initializer:
        begin, end = header[init.name]["data_offsets"]
        want = numpy_helper.to_array(init)
        got = np.frombuffer(data[8 + header_length + begin:8 + header_length + end], dtype=want.dtype).reshape(want.shape)
        assert np.array_equal(got, want), init.name
    for name in ("model.fp16.onnx", "model.fp16.onnx.data", "model.prototxt", "model.caffemodel", "model.safetensors"):
        (folder / name).unlink(missing_ok=True)


# ---------------------------------------------------------------- the model's graph and tensors

SILERO = REPO / "tests" / "models" / "node_modules" / "@ricky0123" / "vad-web" / "dist" / "silero_vad_v5.onnx"
PPOCR_DET = REPO / "tests" / "models" / "node_modules" / "@gutenye" / "ocr-models" / "assets" / "ch_PP-OCRv4_det_infer.onnx"
HUGE_SCOPES, HUGE_PER_SCOPE = 2000, 100


def make_huge_model(path: Path) -> None:
    """200 000 nodes in 2000 name scopes of 100 (/model/block.S/Relu_K), no weights."""
    nodes = []
    previous = "x"
    for s in range(HUGE_SCOPES):
        for k in range(HUGE_PER_SCOPE):
            op = "Relu" if k % 2 else "Sigmoid"
            out = f"/model/block.{s}/t{k}"
            nodes.append(helper.make_node(op, [previous], [out], name=f"/model/block.{s}/{op}_{k}"))
            previous = out
    graph = helper.make_graph(nodes, "huge", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [1, 16])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


@pytest.fixture(scope="module")
def graph_run(served):
    """Runs graph.mjs once over a torchvision ResNet-18, Silero VAD v5, PP-OCRv4 det and a 200k-node model."""
    if not Path("/usr/bin/chromium").exists():
        pytest.fail("chromium is missing: run scripts/install_deps.sh")
    for real in (SILERO, PPOCR_DET):
        if not real.is_file():
            pytest.fail(f"{real} is missing: run scripts/setup_models.sh")
    resnet = FIXTURES / "passes" / "resnet18" / "model.onnx"
    if not resnet.is_file():
        pytest.fail(f"{resnet} is missing: run scripts/make_pass_fixtures.py build/fixtures/passes")
    folder = served["root"] / "graphs"
    (folder / "resnet18").mkdir(parents=True)
    (folder / "huge").mkdir()
    shutil.copy(resnet, folder / "resnet18" / "model.onnx")
    shutil.copy(SILERO, folder / "silero_vad_v5.onnx")
    shutil.copy(PPOCR_DET, folder / PPOCR_DET.name)
    make_huge_model(folder / "huge" / "model.onnx")
    (served["root"] / "nested").mkdir()
    make_nested_model(served["root"] / "nested" / "model.onnx")
    result_file = served["base"] / "graph.json"
    proc = subprocess.run(["node", str(HERE / "graph.mjs"), f"http://127.0.0.1:{served['port']}", served["token"],
                           str(ARTIFACTS), str(result_file)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(result_file.read_text())
    shutil.rmtree(folder)
    assert "failure" not in results, results["failure"]
    # The first draw of each model, for the test log (and beside the screenshots).
    timings = {k: {m: results[k][m] for m in ("fetch_ms", "draw_ms", "wall_ms")} for k in ("small", "silero", "ppocr", "huge")}
    timings["huge_search_ms"] = results["huge_find"]["search_ms"]
    (ARTIFACTS / "graph-timings.json").write_text(json.dumps(timings, indent=2))
    print("first draw (ms):", json.dumps(timings), file=sys.stderr)
    return results


def test_the_graph_views_run_without_script_errors(graph_run):
    assert graph_run["console_errors"] == []


def test_a_small_model_draws_every_node_with_shapes_and_weight_badges(graph_run):
    model = onnx.load(str(FIXTURES / "passes" / "resnet18" / "model.onnx"))
    small = graph_run["small"]
    assert small["nodes"] == small["shown_nodes"] == small["node_boxes"] == len(model.graph.node), small
    assert small["group_boxes"] == 0
    # A badge per weight a node reads (at most three drawn a node, the rest as "+k").
    assert small["badges"] > 0
    assert "[1, 3, 64, 64]" in small["edge_labels"], small["edge_labels"]


def test_search_selects_a_node_and_the_details_show_its_shapes_and_weights(graph_run):
    model = onnx.load(str(FIXTURES / "passes" / "resnet18" / "model.onnx"))
    names = [n.name for n in model.graph.node]
    found = graph_run["small_find"]
    assert found["title"] == "Conv" and found["name"] == "/layer1/layer1.0/conv1/Conv"
    assert found["selected"] == [names.index("/layer1/layer1.0/conv1/Conv")]
    weight = next(t for t in model.graph.initializer if t.name == "layer1.0.conv1.weight")
    row = next(r for r in found["inputs"] if r[0] == weight.name)
    assert row[1] == "FLOAT[" + ", ".join(map(str, weight.dims)) + "]", row
    assert "144.0 KiB" in row[2] and "embedded" in row[2], row
    assert "kernel_shape" in found["attributes"] and "INTS[3, 3]" in found["attributes"]
    # A tensor's name finds the node that reads it.
    by_weight = graph_run["small_find_weight"]
    assert by_weight["name"] == "/fc/Gemm" and ["logits", "FLOAT[1, 1000]", "output"] in by_weight["outputs"]


def test_the_tensor_table_sorts_filters_and_says_where_the_bytes_are(graph_run):
    model = onnx.load(str(FIXTURES / "passes" / "resnet18" / "model.onnx"))
    sizes = sorted((numpy_helper.to_array(t).nbytes for t in model.graph.initializer), reverse=True)
    assert graph_run["tensors_default"] == sizes
    assert graph_run["tensors_by_name"] == sorted(t.name for t in model.graph.initializer)
    assert graph_run["tensors_by_bytes"] == sizes
    assert graph_run["tensors_by_bytes_up"] == sizes[::-1]
    assert graph_run["tensors_filtered"] and all("layer4" in n for n in graph_run["tensors_filtered"])
    # layer4 holds 8.4 M of ResNet-18's 11.7 M parameters: the bars say so in percent.
    layer4 = sum(numpy_helper.to_array(t).nbytes for t in model.graph.initializer if t.name.startswith("layer4."))
    share = f"{100 * layer4 / sum(sizes):.1f} %"
    assert any(b.startswith("layer4") and share in b for b in graph_run["bars"]), (share, graph_run["bars"])


def test_silero_draws_its_main_graph_and_an_if_with_its_bodies(graph_run):
    model = onnx.load(str(SILERO))
    silero = graph_run["silero"]
    assert silero["nodes"] == silero["node_boxes"] == len(model.graph.node), silero
    found = graph_run["silero_find"]
    assert found["title"] == "If" and "2 subgraphs" in found["attributes"], found
    assert [r[1] for r in found["inputs"]] == ["BOOL[]"], found  # its condition, a scalar


def test_a_paddle_export_draws_and_search_finds_a_conv_with_its_inputs_as_python_onnx_reads_them(graph_run):
    model = onnx.load(str(PPOCR_DET))
    assert graph_run["ppocr"]["nodes"] == len(model.graph.node), graph_run["ppocr"]
    conv = next(n for n in model.graph.node if n.name == "p2o.Conv.5")
    found = graph_run["ppocr_find"]
    assert found["name"] == conv.name and found["title"] == "Conv", found
    assert len(found["selected"]) == 1, found
    assert [r[0] for r in found["inputs"]] == list(conv.input), found
    assert [r[0] for r in found["outputs"]] == list(conv.output), found


def test_a_200k_node_model_opens_grouped_and_search_opens_the_group_of_a_match(graph_run):
    huge = graph_run["huge"]
    assert huge["nodes"] == HUGE_SCOPES * HUGE_PER_SCOPE
    assert huge["group_boxes"] == HUGE_SCOPES and huge["node_boxes"] == 0, huge
    found = graph_run["huge_find"]
    assert found["name"] == "/model/block.1234/Relu_57"
    assert found["selected"] == [1234 * HUGE_PER_SCOPE + 57]
    assert found["groups"] == HUGE_SCOPES - 1  # its group opened, the others still closed
    assert ["/model/block.1234/t56", "FLOAT[1, 16]", "output"] in found["inputs"], found
    # Enter on a closed group opens it, as a click does.
    assert graph_run["huge_keyboard"]["groups"] == HUGE_SCOPES - 2, graph_run["huge_keyboard"]
    assert graph_run["huge_after"]["shown_nodes"] == 2 * HUGE_PER_SCOPE
    for name in ("graph-small", "graph-200k", "graph-search", "tensors", "graph-nested"):
        shot = ARTIFACTS / f"{name}.png"
        assert shot.is_file() and shot.stat().st_size > 5000, name


def test_model_text_in_the_graph_is_shown_as_text_never_as_markup(graph_run):
    hostile = graph_run["hostile"]
    assert hostile["pwned"] is None and hostile["injected"] == 0, hostile
    assert HOSTILE_NAME in hostile["labels"], hostile["labels"]
    assert graph_run["hostile_find"]["inputs"][0][0] == HOSTILE_NAME


def test_the_page_scripts_load_without_the_token_and_the_graph_api_needs_it(served):
    """A <script src> cannot send the token's header: the page's scripts are static; the
    graph of a model is data, behind the token like every other API."""
    for script in ("/app.js", "/graph.js"):
        status, body, r = request(served, "GET", script, token=False)
        assert status == 200 and r.getheader("Content-Type").startswith("text/javascript"), script
        assert b".innerHTML" not in body and b"insertAdjacentHTML" not in body, script
    status, _, _ = request(served, "GET", "/api/graph", {"path": "resnet18/model.onnx"}, token=False)
    assert status == 403
    status, body, _ = request(served, "GET", "/api/graph", {"path": "../outside/secret.txt"})
    assert status in (400, 403) and b"not for the page" not in body
    status, body, _ = request(served, "GET", "/api/graph", {"path": "resnet18/model.onnx"})
    assert status == 200
    doc = json.loads(body)
    model = onnx.load(str(served["root"] / "resnet18" / "model.onnx"), load_external_data=False)
    assert len(doc["nodes"]) == len(model.graph.node)
    # Each weight says where its bytes are: this model keeps them in model.onnx.data.
    stored = {t[0]: (t[5], doc["files"][t[6]] if t[6] >= 0 else None, t[7]) for t in doc["initializers"]}
    for t in model.graph.initializer:
        if t.data_location == TensorProto.EXTERNAL:
            entry = {e.key: e.value for e in t.external_data}
            assert stored[t.name] == ("external", entry["location"], int(entry.get("offset", "0"))), t.name


# ---------------------------------------------------------------- bodies and local functions as views

NESTED_GRAPH_NAME = "<b>then</b>"


def make_nested_model(path: Path) -> None:
    """An If whose then_branch reads two outer values (one a node's output, one an input) and
    has a node with a hostile name; its else_branch calls a local function (Add, Relu), as
    the main graph does too. Checked against python-onnx by the tests."""
    f = TensorProto.FLOAT
    then_branch = helper.make_graph(
        [helper.make_node("Mul", ["a", "x"], [HOSTILE_NAME], name=HOSTILE_NAME),
         helper.make_node("Neg", [HOSTILE_NAME], ["then_out"], name="then_neg")],
        NESTED_GRAPH_NAME, [], [helper.make_tensor_value_info("then_out", f, [2])])
    else_branch = helper.make_graph(
        [helper.make_node("AddRelu", ["a", "a"], ["else_out"], name="else_call", domain="local")],
        "else", [], [helper.make_tensor_value_info("else_out", f, [2])])
    function = helper.make_function("local", "AddRelu", ["p", "q"], ["r"],
                                    [helper.make_node("Add", ["p", "q"], ["s"], name="fn_add"),
                                     helper.make_node("Relu", ["s"], ["r"], name="fn_relu")],
                                    [helper.make_opsetid("", 13)])
    nodes = [helper.make_node("Add", ["x", "x"], ["a"], name="outer_add"),
             helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_branch, else_branch=else_branch),
             helper.make_node("AddRelu", ["y", "a"], ["z"], name="main_call", domain="local")]
    graph = helper.make_graph(nodes, "nested", [helper.make_tensor_value_info("x", f, [2]),
                                                helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("z", f, [2])])
    model = helper.make_model(graph, functions=[function], ir_version=8,
                              opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("local", 1)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def onnx_graphs(model: onnx.ModelProto) -> dict:
    """Every body (by the path of (node name, attribute) from the main graph) and local
    function (by domain.name) of a model: its node count and the outer names it reads."""
    found = {}

    def defined(g) -> set:
        names = {i.name for i in g.input} | {t.name for t in g.initializer}
        for n in g.node:
            names |= set(n.output)
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    names |= defined(a.g)
        return names

    def read(g) -> set:
        names = {o.name for o in g.output}
        for n in g.node:
            names |= {i for i in n.input if i}
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    names |= read(a.g)
        return names

    def walk(g, path):
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    key = path + ((n.name, a.name),)
                    found[key] = (len(a.g.node), read(a.g) - defined(a.g))
                    walk(a.g, key)

    walk(model.graph, ())
    for fn in model.functions:
        found[f"{fn.domain}.{fn.name}"] = (len(fn.node), set())
    return found


def doc_graphs(doc: dict) -> dict:
    """The same from /api/graph's document."""
    found = {}

    def path(k):
        sub = doc["subgraphs"][k]
        nodes = doc["nodes"] if sub["parent"] < 0 else doc["subgraphs"][sub["parent"]]["nodes"]
        here = ((nodes[sub["node"]][0], sub["attribute"]),)
        return here if sub["parent"] < 0 else path(sub["parent"]) + here

    for k, sub in enumerate(doc["subgraphs"]):
        key = f"{sub['domain']}.{sub['name']}" if sub["kind"] == "function" else path(k)
        found[key] = (len(sub["nodes"]), {doc["values"][v][0] for v in sub["outer"]})
    return found


@pytest.mark.parametrize("which", ["silero", "nested"])
def test_the_graph_api_has_every_body_and_local_function_as_python_onnx_reads_them(served, which, tmp_path):
    folder = served["root"] / f"api_{which}"
    folder.mkdir()
    if which == "silero":
        shutil.copy(SILERO, folder / "model.onnx")
    else:
        make_nested_model(folder / "model.onnx")
    try:
        status, body, _ = request(served, "GET", "/api/graph", {"path": f"api_{which}/model.onnx"})
        assert status == 200, body
        doc = json.loads(body)
        model = onnx.load(str(folder / "model.onnx"))
        assert doc_graphs(doc) == onnx_graphs(model)
        # A node names what it opens: an If its two bodies, a call its function.
        for n, proto in zip(doc["nodes"], model.graph.node):
            opened = [doc["subgraphs"][k] for k in n[5]]
            graphs = [a.name for a in proto.attribute if a.type == onnx.AttributeProto.GRAPH]
            if graphs:
                assert [s["attribute"] for s in opened] == graphs
            elif proto.domain == "local":
                assert [(s["kind"], s["name"]) for s in opened] == [("function", proto.op_type)]
            else:
                assert opened == []
        assert doc["nodes_total"] == sum(c for c, _ in onnx_graphs(model).values()) + len(model.graph.node)
    finally:
        shutil.rmtree(folder)


def test_an_if_opens_its_bodies_as_views_with_a_trail_back_on_silero(graph_run):
    model = onnx.load(str(SILERO))
    if0 = next(n for n in model.graph.node if n.name == "If_0")
    bodies = {a.name: a.g for a in if0.attribute}
    then = graph_run["silero_then"]
    assert then["depth"] == 1 and then["nodes"] == len(bodies["then_branch"].node), then
    assert then["shown_nodes"] + then["groups"] > 0 and not then["crumbs_hidden"]
    assert then["crumbs"] == ["main graph", "If 'If_0' › then_branch"], then["crumbs"]
    # What the body reads from the main graph is drawn as its inputs.
    outer = {i["label"] for i in then["inputs"] if i["outer"]}
    main_names = {i.name for i in model.graph.input} | {o for n in model.graph.node for o in n.output}
    body_reads = {i for n in bodies["then_branch"].node for i in n.input} - {o for n in bodies["then_branch"].node for o in n.output}
    assert outer and outer <= main_names and outer <= body_reads | {o.name for o in bodies["then_branch"].output}, outer
    # A search inside the body finds its If, whose own bodies open one level deeper.
    inner = next(n for n in bodies["then_branch"].node if n.name == "If_0_then_branch__Inline_0__/decoder/If_1")
    inner_else = next(a.g for a in inner.attribute if a.name == "else_branch")
    assert graph_run["silero_find_inner"]["title"] == "If"
    deeper = graph_run["silero_inner"]
    assert deeper["depth"] == 2 and deeper["nodes"] == len(inner_else.node), deeper
    assert deeper["crumbs"][-1].endswith("› else_branch") and len(deeper["crumbs"]) == 3, deeper["crumbs"]
    # The button counts the nodes of the bodies inside it too.
    def every_node(g):
        return len(g.node) + sum(every_node(a.g) for n in g.node for a in n.attribute if a.type == onnx.AttributeProto.GRAPH)
    assert f"{every_node(inner_else)} nodes" in deeper["button"], deeper["button"]
    back = graph_run["silero_back"]
    assert back["depth"] == 0 and back["nodes"] == len(model.graph.node) and back["crumbs_hidden"], back
    shot = ARTIFACTS / "graph-nested.png"
    assert shot.is_file() and shot.stat().st_size > 5000


def test_a_body_shows_its_outer_values_and_a_call_opens_its_local_function(graph_run):
    then = graph_run["nested_then"]
    assert then["depth"] == 1 and then["nodes"] == then["node_boxes"] == 2, then
    assert sorted((i["label"], i["outer"]) for i in then["inputs"]) == [("a", True), ("x", True)], then["inputs"]
    assert any(i["sub"] == "outer · FLOAT[2]" for i in then["inputs"]), then["inputs"]
    assert then["outputs"] == ["then_out"]
    # The hostile node name inside the body is text, never markup.
    assert HOSTILE_NAME in then["labels"] and NESTED_GRAPH_NAME not in then["labels"]
    assert graph_run["nested_then_hostile"] == {"pwned": None, "injected": 0}
    found = graph_run["nested_then_find"]
    assert found["name"] == "then_neg" and found["inputs"][0][0] == HOSTILE_NAME, found
    assert "2 subgraphs" in graph_run["nested_find"]["attributes"]
    assert graph_run["nested_else"]["nodes"] == 1
    assert "open function local.AddRelu, 2 nodes" in graph_run["nested_call"]["attributes"]
    for key in ("nested_function", "nested_main_function"):
        fn = graph_run[key]
        assert fn["nodes"] == fn["node_boxes"] == 2 and fn["crumbs"][-1] == "function local.AddRelu", fn
        assert sorted(i["label"] for i in fn["inputs"]) == ["p", "q"] and fn["outputs"] == ["r"], fn
    assert graph_run["nested_function"]["crumbs"][:2] == ["main graph", "If 'branch' › else_branch"]
    assert graph_run["nested_main_function"]["crumbs"] == ["main graph", "function local.AddRelu"]

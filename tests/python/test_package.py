"""The Python package (python/, installed from the wheel) on the same models as the CLI tests.

- every command's report equals the command line's `--json` report for the same call
  (on torchvision's ResNet-18 with external data, and on one_file);
- a merged model passes python-onnx's checker, holds the original's tensors and gives
  ONNX Runtime's outputs bit for bit;
- failures raise onnxstream.Error with a code, a message and a hint worded as keywords;
  bad keywords and types raise TypeError naming them;
- a cancelled merge (from the progress callback, or by Ctrl-C) leaves nothing behind;
- progress reaches the callback, in order; paths may be os.PathLike;
- the functions' signatures, defaults and docstrings are the library's command table.
"""
from __future__ import annotations

import inspect
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import cases
import refcheck
from refcheck import describe, run_cli

import onnxstream

REAL_MODEL = "resnet18"  # torchvision ResNet-18, seeded weights, tensors in model.onnx.data


def model_of(name: str) -> Path:
    return cases.fixtures_dir() / cases.case_named(name)["model"]


def timing(key: str) -> bool:
    """A field that depends on how fast this run was ("seconds", "opencv_seconds")."""
    return key == "seconds" or key.endswith("_seconds")


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if not timing(k)}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def normalized(report: dict, *folders: Path) -> dict:
    """The report with the output folders named alike and timings left out, so that two
    runs into two folders compare."""
    text = json.dumps(without_timings(report), sort_keys=True)
    for folder in folders:
        text = text.replace(str(folder), "<OUT>")
    return json.loads(text)


def cli_json(args: list) -> dict:
    proc = run_cli([*args, "--json"])
    assert proc.returncode in (0, 1), describe(proc)
    return json.loads(proc.stdout)


def first_output(model) -> str:
    """The name of the model's first graph output (read without the onnx package)."""
    return json.loads(run_cli(["inspect", model, "--json"]).stdout)["outputs"][0]["name"]


# (name, the Python call, the same call on the command line); `out` is a fresh folder.
CALLS = [
    ("inspect", lambda m, out: onnxstream.inspect(m), lambda m, out: ["inspect", m]),
    ("analyze", lambda m, out: onnxstream.analyze(m), lambda m, out: ["analyze", m]),
    ("verify", lambda m, out: onnxstream.verify(m, threads=2), lambda m, out: ["verify", m, "--threads", "2"]),
    ("merge", lambda m, out: onnxstream.merge(m, output=out / "m.onnx"),
     lambda m, out: ["merge", m, "-o", out / "m.onnx"]),
    ("split", lambda m, out: onnxstream.split(m, output=out / "s.onnx", threshold="4K", data_name="w.bin"),
     lambda m, out: ["split", m, "-o", out / "s.onnx", "--threshold", "4K", "--data-name", "w.bin"]),
    ("repack", lambda m, out: onnxstream.repack(m, output=out / "r.onnx", align=65536, dedupe=True,
                                                write_checksums=True),
     lambda m, out: ["repack", m, "-o", out / "r.onnx", "--align", "65536", "--dedupe", "--write-checksums"]),
    ("optimize", lambda m, out: onnxstream.optimize(m, output=out / "o.onnx", passes="dce,fold-constants"),
     lambda m, out: ["optimize", m, "-o", out / "o.onnx", "--passes", "dce,fold-constants"]),
    ("convert", lambda m, out: onnxstream.convert(m, dtype="fp16", output=out / "h.onnx", keep_io_types=True),
     lambda m, out: ["convert", m, "--dtype", "fp16", "-o", out / "h.onnx", "--keep-io-types"]),
    ("export_safetensors", lambda m, out: onnxstream.export_safetensors(m, output=out / "w.safetensors", link=True),
     lambda m, out: ["export", m, "--to", "safetensors", "-o", out / "w.safetensors", "--link"]),
    ("export_caffe", lambda m, out: onnxstream.export_caffe(m, output=out / "net", input_shape=["input=1,3,64,64"]),
     lambda m, out: ["export", m, "--to", "caffe", "-o", out / "net", "--input-shape", "input=1,3,64,64"]),
    ("quantize", lambda m, out: onnxstream.quantize(m, weights="int4", block_size=32, output=out / "q.onnx"),
     lambda m, out: ["quantize", m, "--weights", "int4", "--block-size", "32", "-o", out / "q.onnx"]),
    ("extract", lambda m, out: onnxstream.extract(m, outputs=first_output(m), output=out / "x.onnx"),
     lambda m, out: ["extract", m, "--outputs", first_output(m), "-o", out / "x.onnx"]),
    ("infer_shapes", lambda m, out: onnxstream.infer_shapes(m, output=out / "i.onnx"),
     lambda m, out: ["infer-shapes", m, "-o", out / "i.onnx"]),
]


@pytest.mark.parametrize("case_name", [REAL_MODEL, "one_file"])
@pytest.mark.parametrize("name, in_python, on_cli", CALLS, ids=[c[0] for c in CALLS])
def test_report_equals_cli(fixtures_root, cli, tmp_path, case_name, name, in_python, on_cli):
    if name == "export_caffe" and case_name != REAL_MODEL:
        pytest.skip("one_file's input is not an image (export_caffe runs on the torchvision model)")
    if name == "infer_shapes" and case_name == REAL_MODEL:
        pytest.skip("infer-shapes keeps the data file's location: its output stays beside an external-data model")
    # infer-shapes writes beside an external-data model only: its embedded twin, written anywhere.
    model = model_of("mobilenet_v2_embedded" if name == "infer_shapes" else case_name)
    py_out, cli_out = tmp_path / "py", tmp_path / "cli"
    py_out.mkdir()
    cli_out.mkdir()
    got = in_python(model, py_out)
    expected = cli_json([str(a) for a in on_cli(model, cli_out)])
    assert isinstance(got, dict)
    if name == "convert":
        # The type is named as --dtype and dtype= name it, on every front end.
        assert got["dtype"] == expected["dtype"] == "fp16"
    assert normalized(got, py_out) == normalized(expected, cli_out)
    assert sorted(p.name for p in py_out.iterdir()) == sorted(p.name for p in cli_out.iterdir())


def test_diff_equals_cli(fixtures_root, cli, tmp_path):
    model = model_of(REAL_MODEL)
    merged = tmp_path / "m.onnx"
    onnxstream.merge(model, output=merged)
    got = onnxstream.diff(model, other=merged)
    assert got == cli_json(["diff", str(model), str(merged)])
    assert got["equivalent"] is True and got["byte_identical"] is False
    assert onnxstream.diff(model, model)["byte_identical"] is True


@pytest.mark.parametrize("case_name", [REAL_MODEL, "mobilenet_v2"])
def test_merged_model_checks_out(fixtures_root, ort, tmp_path, case_name):
    case = cases.case_named(case_name)
    merged = tmp_path / "merged.onnx"
    report = onnxstream.merge(Path(fixtures_root / case["model"]), output=merged)
    assert report["ok"] is True
    (entry,) = report["models"]
    assert entry["output"] == str(merged) and entry["tensors_inlined"] > 0
    assert sorted(os.listdir(tmp_path)) == ["merged.onnx"]
    refcheck.check_model(merged)
    cases.assert_self_contained(merged)
    cases.assert_same_model_as_original(case, merged)
    cases.assert_same_ort_outputs(case, merged)


def test_path_like_and_lists(fixtures_root, tmp_path):
    case = cases.case_named("data_dir")
    model = fixtures_root / case["model"]
    data_dirs = [fixtures_root / d for d in case["data_dirs"]]
    assert data_dirs, "the data_dir case names its folder"

    class Where(os.PathLike):  # a PathLike that is not a pathlib.Path
        def __init__(self, path):
            self.path = path

        def __fspath__(self):
            return str(self.path)

    report = onnxstream.merge(Where(model), output=Where(tmp_path / "m.onnx"), data_dir=[Where(d) for d in data_dirs])
    assert report["ok"] is True and (tmp_path / "m.onnx").is_file()
    # One value where a list may go.
    assert onnxstream.inspect(model, data_dir=data_dirs[0])["ok"] is True
    # bytes paths are the operating system's own.
    assert onnxstream.inspect(os.fsencode(model), data_dir=os.fsencode(data_dirs[0]))["ok"] is True


def test_missing_file_raises_error_with_code_and_hint(tmp_path):
    missing = tmp_path / "no-such-model.onnx"
    with pytest.raises(onnxstream.Error) as caught:
        onnxstream.inspect(missing)
    e = caught.value
    assert isinstance(e, Exception)
    assert e.code == "io" and e.number == 1
    assert str(missing) in e.message
    assert e.hint
    assert e.report["ok"] is False and e.report["error"]["code"] == "io"
    assert e.hint in str(e)


def test_missing_data_hint_names_keywords(fixtures_root, tmp_path):
    with pytest.raises(onnxstream.Error) as caught:
        onnxstream.merge(fixtures_root / "bad_missing_data" / "model.onnx", output=tmp_path / "m.onnx")
    assert caught.value.code == "missing_data"
    assert "data=FILE" in caught.value.hint and "data_dir=DIR" in caught.value.hint
    assert "--data" not in caught.value.hint
    assert not list(tmp_path.iterdir())


def test_output_exists_then_force(fixtures_root, tmp_path):
    model = model_of("one_file")
    out = tmp_path / "m.onnx"
    out.write_bytes(b"keep me")
    with pytest.raises(onnxstream.Error) as caught:
        onnxstream.merge(model, output=out)
    assert caught.value.code == "output_exists"
    assert "force=True" in caught.value.hint
    assert out.read_bytes() == b"keep me"
    assert onnxstream.merge(model, output=out, force=True)["ok"] is True
    assert out.stat().st_size > 7


def test_bad_keywords_and_values(fixtures_root):
    model = model_of("one_file")
    with pytest.raises(TypeError, match=r"merge\(\) got an unexpected keyword argument 'data_dirr' \(did you mean data_dir=\?\)"):
        onnxstream.merge(model, data_dirr="x")
    with pytest.raises(TypeError, match="unexpected keyword argument 'dedupe'"):
        onnxstream.split(model, dedupe=True)  # repack's, not split's
    with pytest.raises(TypeError, match="force= takes True or False"):
        onnxstream.merge(model, force="yes")
    with pytest.raises(TypeError, match="output= takes one value"):
        onnxstream.merge(model, output=["a.onnx", "b.onnx"])
    with pytest.raises(TypeError, match="threads= takes int"):
        onnxstream.verify(model, threads=2.5)
    with pytest.raises(TypeError, match="missing a required argument: 'dtype'"):
        onnxstream.convert(model)
    with pytest.raises(TypeError, match="missing a required argument: 'model'"):
        onnxstream.inspect()
    with pytest.raises(ValueError, match="NUL"):
        onnxstream.inspect("model\0.onnx")
    # Values the library refuses name the keyword as Python spells it.
    with pytest.raises(onnxstream.Error) as caught:
        onnxstream.convert(model, dtype="fp8")
    assert caught.value.code == "invalid_argument"
    assert "dtype=" in caught.value.message and "fp16 or bf16" in caught.value.message
    with pytest.raises(onnxstream.Error, match="threshold= takes a size"):
        onnxstream.split(model, threshold="lots")


class Stop(Exception):
    pass


def test_cancel_from_progress_leaves_nothing(fixtures_root, tmp_path):
    model = model_of(REAL_MODEL)
    before = cases.snapshot(model.parent)
    seen = []

    def stop_halfway(stage, done, total, unit):
        seen.append(done)
        if done > 0:
            raise Stop()

    with pytest.raises(Stop):
        onnxstream.merge(model, output=tmp_path / "m.onnx", progress=stop_halfway)
    assert len(seen) >= 2 and 0 < seen[-1] < 46_000_000
    assert not list(tmp_path.iterdir()), "a cancelled merge left files behind"
    cases.assert_unchanged(before, cases.snapshot(model.parent), "the model's folder")
    # The same call, not cancelled, works afterwards.
    assert onnxstream.merge(model, output=tmp_path / "m.onnx")["ok"] is True


def test_ctrl_c_cancels_and_raises_keyboard_interrupt(fixtures_root, tmp_path):
    """A real SIGINT, in a child interpreter: the merge stops, its output is removed, and
    KeyboardInterrupt reaches the caller only once the run is back."""
    model = model_of(REAL_MODEL)
    script = textwrap.dedent(f"""
        import os, signal, sys, time
        import onnxstream
        sent = []
        def interrupt_once(stage, done, total, unit):
            if not sent:
                sent.append(1)
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.5)  # the signal lands in here, on the calling thread
        try:
            onnxstream.merge({str(model)!r}, output={str(tmp_path / 'm.onnx')!r}, progress=interrupt_once)
        except KeyboardInterrupt:
            print("interrupted", sorted(os.listdir({str(tmp_path)!r})))
            sys.exit(0)
        print("not interrupted")
        sys.exit(1)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "interrupted []"


def test_ctrl_c_while_waiting(fixtures_root, tmp_path):
    """SIGINT while the calling thread only waits (no callback): the run is cancelled,
    or it had finished; either way KeyboardInterrupt is raised and no partial file stays."""
    model = model_of(REAL_MODEL)
    script = textwrap.dedent(f"""
        import os, signal, sys, threading
        import onnxstream
        threading.Timer(0.02, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            for i in range(200):
                onnxstream.merge({str(model)!r}, output={str(tmp_path / 'm.onnx')!r}, force=True)
        except KeyboardInterrupt:
            names = os.listdir({str(tmp_path)!r})
            assert names in ([], ["m.onnx"]), names
            print("interrupted")
            sys.exit(0)
        sys.exit(1)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "interrupted"


def test_progress_callback_in_order(fixtures_root, tmp_path):
    events = []
    import threading

    caller = threading.get_ident()

    def record(stage, done, total, unit):
        events.append((stage, done, total, unit, threading.get_ident()))

    onnxstream.merge(model_of(REAL_MODEL), output=tmp_path / "m.onnx", progress=record)
    assert len(events) >= 3
    assert all(e[4] == caller for e in events), "the callback runs on the calling thread"
    stage, _, total, unit, _ = events[0]
    assert stage == "merge model.onnx" and unit == "bytes" and total == (tmp_path / "m.onnx").stat().st_size
    dones = [e[1] for e in events]
    assert dones == sorted(dones) and dones[0] == 0 and dones[-1] == total


def test_progress_bar_on_stderr(fixtures_root, tmp_path):
    script = textwrap.dedent(f"""
        import sys
        sys.modules["tqdm"] = None  # the package's own bar, whatever is installed
        import onnxstream
        onnxstream.merge({str(model_of(REAL_MODEL))!r}, output={str(tmp_path / 'm.onnx')!r}, progress=True)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    stderr = proc.stderr.decode()  # as bytes: text mode would turn the bar's \r into \n
    assert proc.returncode == 0, stderr
    assert proc.stdout == b""
    assert stderr.endswith("\n") and stderr.count("\n") == 1, repr(stderr)
    last = stderr.rstrip("\n").split("\r")[-1]
    assert last.startswith("merge model.onnx") and "100%" in last and "46.7 MB / 46.7 MB" in last, repr(stderr)


def test_functions_follow_the_command_table():
    table = onnxstream.commands()
    names = {c["name"].replace("-", "_") for c in table}
    assert names == {"inspect", "merge", "split", "repack", "analyze", "optimize", "verify", "diff", "convert",
                     "export_caffe", "export_safetensors", "quantize", "extract", "infer_shapes", "edit"}
    for command in table:
        function = getattr(onnxstream, command["name"].replace("-", "_"))
        assert function.__name__ in onnxstream.__all__
        parameters = inspect.signature(function).parameters
        shown = [p for p in command["parameters"] if "python" in p["surfaces"]]
        assert list(parameters) == [p["name"].replace("-", "_") for p in shown if p["positional"]] + \
                                   [p["name"].replace("-", "_") for p in shown if not p["positional"]] + ["progress"]
        for p in shown:
            parameter = parameters[p["name"].replace("-", "_")]
            assert p["help"].split()[0] in function.__doc__
            if p["positional"]:
                assert parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
                continue
            assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
            if p["required"]:
                assert parameter.default is inspect.Parameter.empty
            elif p["kind"] == "flag":
                assert parameter.default is False
            elif p["default"] == "":
                assert parameter.default is None
            else:
                assert str(parameter.default) == p["default"] or parameter.default == float(p["default"])
        # The command line's test hooks are not offered.
        assert "writer" not in parameters and "check_dump" not in parameters
    split = inspect.signature(onnxstream.split).parameters
    assert split["threshold"].default == 1024 and split["align_threshold"].default == "1M"
    assert inspect.signature(onnxstream.export_caffe).parameters["tolerance"].default == 1e-4
    assert "Move large tensors out" in onnxstream.split.__doc__


def test_package_help_lists_every_command():
    """The package's docstring (help(onnxstream)) and docs/python.md name every function
    the table makes (they once stopped at export_safetensors)."""
    listed = onnxstream.__doc__.split("Commands:", 1)[1]
    docs = (Path(__file__).resolve().parents[2] / "docs" / "python.md").read_text(encoding="utf-8")
    for command in onnxstream.commands():
        name = command["name"].replace("-", "_")
        assert f"\n    {name}: {command['summary']}\n" in listed
        assert f"`{name}`" in docs, f"docs/python.md does not list {name}"


def test_installed_package_imports_no_onnx_or_numpy(fixtures_root):
    code = ("import sys, onnxstream; onnxstream.inspect(sys.argv[1]); "
            "print(sorted(m for m in ('onnx', 'numpy') if m in sys.modules)); print(onnxstream.__file__)")
    proc = subprocess.run([sys.executable, "-c", code, str(model_of(REAL_MODEL))], capture_output=True, text=True,
                          cwd="/", timeout=60)
    assert proc.returncode == 0, proc.stderr
    loaded, where = proc.stdout.splitlines()
    assert loaded == "[]"
    assert where.startswith(sys.prefix), f"{where}: not the wheel's install"


def test_version_matches_cli(cli):
    proc = run_cli(["--help"])
    assert f"onnxstream {onnxstream.__version__}:" in proc.stdout


def test_calls_from_several_threads_at_once(fixtures_root, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    model = model_of(REAL_MODEL)
    expected = onnxstream.inspect(model)

    def merge(i):
        return onnxstream.merge(model, output=tmp_path / f"m{i}.onnx", progress=lambda *event: None)

    with ThreadPoolExecutor(4) as pool:
        merges = list(pool.map(merge, range(4)))
        inspects = list(pool.map(lambda _: onnxstream.inspect(model), range(4)))
    assert all(r["ok"] for r in merges)
    assert inspects == [expected] * 4
    sizes = {(tmp_path / f"m{i}.onnx").stat().st_size for i in range(4)}
    assert len(sizes) == 1 and sorted(os.listdir(tmp_path)) == [f"m{i}.onnx" for i in range(4)]


def test_progress_bar_uses_tqdm_when_installed(fixtures_root, tmp_path, monkeypatch):
    import types

    bars = []

    class FakeTqdm:  # records what the package asks of tqdm
        def __init__(self, total, desc, unit, unit_scale, leave, file):
            self.total, self.desc, self.unit, self.n, self.closed = total, desc, unit, 0, False
            bars.append(self)

        def update(self, n):
            self.n += n

        def close(self):
            self.closed = True

    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=FakeTqdm))
    onnxstream.merge(model_of(REAL_MODEL), output=tmp_path / "m.onnx", progress=True)
    assert len(bars) == 1
    (bar,) = bars
    assert bar.desc == "merge model.onnx" and bar.unit == "B" and bar.closed
    assert bar.n == bar.total == (tmp_path / "m.onnx").stat().st_size


def test_type_stub_declares_the_same_functions():
    import ast

    stub = Path(onnxstream.__file__).with_name("__init__.pyi")
    tree = ast.parse(stub.read_text())
    declared = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert set(declared) == {"commands"} | {c["name"].replace("-", "_") for c in onnxstream.commands()}
    for name, node in declared.items():
        if name == "commands":
            continue
        runtime = inspect.signature(getattr(onnxstream, name)).parameters
        positional = [a.arg for a in node.args.args]
        keywords = [a.arg for a in node.args.kwonlyargs]
        assert positional + keywords == list(runtime), name
        for arg, default in zip(node.args.kwonlyargs, node.args.kw_defaults):
            expected = runtime[arg.arg].default
            if default is None:
                assert expected is inspect.Parameter.empty, (name, arg.arg)
            else:
                assert ast.literal_eval(default) == expected, (name, arg.arg)
    merge = declared["merge"]
    assert ast.unparse(merge.args.kwonlyargs[0].annotation) == "Optional[_Path]"
    convert = declared["convert"]
    assert ast.unparse(convert.args.kwonlyargs[0].annotation) == "Literal['fp16', 'bf16']"

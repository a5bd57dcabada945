"""Bad inputs and bad command lines: exit status, error message, nothing written, inputs
untouched (DESIGN.md: 1 the work failed, 2 usage error, never a signal)."""
from __future__ import annotations

import pytest

import cases
from cases import contains, copy_case, data_args, model_path, snapshot
from refcheck import describe, run_cli


def check_error_text(case: dict, proc) -> None:
    """An error line with a hint, holding the case's expected words."""
    cases.assert_error_with_hint(proc)
    stderr = proc.stderr
    if case["error"]:
        assert contains(stderr, case["error"]), f"stderr lacks {case['error']!r}" + describe(proc)
    if case["error_any"]:
        assert any(contains(stderr, s) for s in case["error_any"]), (
            f"stderr has none of {case['error_any']}" + describe(proc))
    for s in case["error_all"]:
        assert contains(stderr, s), f"stderr lacks {s!r}" + describe(proc)


def test_bad_case(bad_run, workdir, onnxstream):
    case, command = bad_run
    root = copy_case(case, workdir)
    before = snapshot(workdir)
    args = [command, model_path(case, root), *data_args(case, root)]
    if command == "merge":
        args += case["args"]
    proc = run_cli(args)
    assert proc.returncode == case["exit_code"], describe(proc)
    check_error_text(case, proc)
    cases.assert_unchanged(before, snapshot(workdir), f"a failed {command}")


def test_bad_case_with_force(workdir, onnxstream):
    """--force does not weaken validation: an existing output stays as it was."""
    case = cases.case_named("bad_truncated_data")
    root = copy_case(case, workdir)
    model = model_path(case, root)
    existing = cases.merged_path(model)
    existing.write_bytes(b"precious")
    before = snapshot(workdir)
    proc = run_cli(["merge", model, "--force"])
    assert proc.returncode == 1, describe(proc)
    cases.assert_unchanged(before, snapshot(workdir), "a failed merge --force")


def test_lenient_variant(lenient_case, workdir, onnxstream):
    """Checksum without --strict, size mismatch with --allow-size-mismatch: a warning, exit 0."""
    lenient = lenient_case["lenient"]
    root = copy_case(lenient_case, workdir)
    model = model_path(lenient_case, root)
    before = snapshot(root)
    proc = run_cli(["merge", model, *data_args(lenient_case, root), *lenient["args"]])
    assert proc.returncode == lenient["exit_code"], describe(proc)
    assert any(contains(proc.stderr, s) for s in lenient["warning_any"]), (
        f"no warning naming any of {lenient['warning_any']}" + describe(proc))
    assert not cases.error_lines(proc.stderr), describe(proc)
    cases.assert_inputs_unchanged(before, snapshot(root))
    assert cases.merged_path(model).is_file()


def test_missing_model_file(workdir, onnxstream):
    workdir.mkdir(parents=True)
    proc = run_cli(["merge", workdir / "nope.onnx"])
    assert proc.returncode == 1, describe(proc)
    cases.assert_error_with_hint(proc)
    assert "nope.onnx" in proc.stderr, describe(proc)
    assert list(workdir.iterdir()) == []


def test_model_is_a_directory(workdir, onnxstream):
    (workdir / "dir.onnx").mkdir(parents=True)
    proc = run_cli(["inspect", workdir / "dir.onnx"])
    assert proc.returncode == 1, describe(proc)
    cases.assert_error_with_hint(proc)


@pytest.fixture
def a_model(workdir):
    case = cases.case_named("embedded")
    return model_path(case, copy_case(case, workdir))


USAGE_ERRORS = {
    "no_command": [],
    "unknown_command": ["frobnicate", "{model}"],
    "unknown_flag": ["merge", "{model}", "--no-such-flag"],
    "unknown_short_flag": ["inspect", "{model}", "-Z"],
    "merge_without_model": ["merge"],
    "split_without_model": ["split"],
    "inspect_without_model": ["inspect"],
    "o_without_value": ["merge", "{model}", "-o"],
    "data_without_value": ["merge", "{model}", "--data"],
    "data_dir_without_value": ["inspect", "{model}", "--data-dir"],
    "split_two_models": ["split", "{model}", "{model}"],
    "bad_size_argument": ["split", "{model}", "--threshold", "lots"],
    "bad_align_argument": ["split", "{model}", "--align", "12Q"],
    "bad_threads_argument": ["merge", "{model}", "--threads", "many"],
    "split_flag_on_merge": ["merge", "{model}", "--threshold", "1K"],
}


@pytest.mark.parametrize("name", sorted(USAGE_ERRORS))
def test_usage_error(name, a_model, workdir, onnxstream):
    args = [a.replace("{model}", str(a_model)) for a in USAGE_ERRORS[name]]
    before = snapshot(workdir)
    proc = run_cli(args)
    assert proc.returncode == 2, describe(proc)
    assert proc.stderr.strip(), "a usage error should say what is wrong on stderr" + describe(proc)
    if name != "no_command":  # a bare `onnxstream` may answer with the usage text alone
        cases.assert_error_with_hint(proc)
    cases.assert_unchanged(before, snapshot(workdir), "a usage error")


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["merge", "--help"], ["split", "--help"],
                                  ["inspect", "--help"], ["repack", "--help"],
                                  ["verify", "--help"], ["diff", "--help"]], ids=" ".join)
def test_help_and_version(args, onnxstream):
    proc = run_cli(args)
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.strip(), describe(proc)


def corruptions(data: bytes, count: int, seed: int) -> list[tuple[str, bytes]]:
    """Deterministic damage: truncations at spread-out points and single-byte changes."""
    import numpy as np
    rng = np.random.default_rng(seed)
    out = []
    for cut in sorted({int(x) for x in np.linspace(1, len(data) - 1, count)}):
        out.append((f"cut{cut}", data[:cut]))
    for position in sorted(int(x) for x in rng.choice(len(data), count, replace=False)):
        damaged = bytearray(data)
        damaged[position] ^= int(rng.integers(1, 256))
        out.append((f"flip{position}", bytes(damaged)))
    return out


@pytest.mark.parametrize("name", ["one_file", "if_subgraph", "everywhere"])
def test_corrupt_models_never_crash(name, workdir, onnxstream):
    """DESIGN: never exit by a signal on any input; damaged models end in 0 or 1, and a
    failure writes nothing."""
    case = cases.case_named(name)
    root = copy_case(case, workdir)
    model = model_path(case, root)
    original = model.read_bytes()
    problems = []
    for label, data in corruptions(original, 24, seed=len(original)):
        model.write_bytes(data)
        for command in ("inspect", "merge"):
            before = snapshot(root)
            proc = run_cli([command, model, "--force"] if command == "merge" else [command, model])
            after = snapshot(root)
            if proc.returncode not in (0, 1):
                problems.append(f"{label} {command}: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
            elif proc.returncode == 1 and (not cases.error_lines(proc.stderr) or after != before):
                problems.append(f"{label} {command}: exit 1 without an error line, or files changed")
            cases.merged_path(model).unlink(missing_ok=True)
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("args,suggestion", [
    (["inspct", "m.onnx"], "did you mean 'onnxstream inspect'"),
    (["mrege", "m.onnx"], "did you mean 'onnxstream merge'"),
    (["merge", "m.onnx", "--forse"], "did you mean --force?"),
    (["verify", "m.onnx", "--jsno"], "did you mean --json?"),
    (["split", "m.onnx", "--threshhold", "1K"], "did you mean --threshold?"),
    (["export", "m.onnx", "--to", "safetensors", "--shard-szie", "1M"], "did you mean --shard-size?"),
])
def test_typos_get_did_you_mean(args, suggestion, tmp_path, onnxstream):
    """Issue 30.13: an unknown command or option names the one it is probably a typo of."""
    proc = run_cli(args, cwd=tmp_path)
    assert proc.returncode == 2, describe(proc)
    assert suggestion in proc.stderr, describe(proc)


def test_no_did_you_mean_for_what_is_nothing_like(tmp_path, onnxstream):
    for args in (["frobnicate"], ["merge", "m.onnx", "--completely-unknown"]):
        proc = run_cli(args, cwd=tmp_path)
        assert proc.returncode == 2 and "did you mean" not in proc.stderr, describe(proc)

"""The package's functions, made at import time from the library's command table
(onnxstream_commands_json): one per command, its keywords, defaults, signature and
docstring taken from the table, so nothing here repeats a default or a choice."""
from __future__ import annotations

import difflib
import inspect
import json
import os
import re
import textwrap
from typing import Any, Callable, Dict, List, Tuple

from . import _native, _progress
from ._errors import Error

# What each kind of parameter accepts from Python, for the docstrings and the messages.
KIND_WORDS = {
    "text": "str",
    "path": "str or os.PathLike",
    "model": "str or os.PathLike (an .onnx file)",
    "size": "int (bytes) or str such as '64K', '1M', '2G'",
    "count": "int",
    "number": "float",
    "flag": "bool",
    "choice": "str",
}


def python_name(name: str) -> str:
    return name.replace("-", "_")


def shown(parameter: Dict[str, Any]) -> bool:
    return "python" in parameter["surfaces"]


def default_of(parameter: Dict[str, Any]) -> Any:
    """The table's default as the Python value it means (None: the library decides)."""
    text, kind = parameter["default"], parameter["kind"]
    if kind == "flag":
        return text in ("1", "true", "on", "True")
    if text == "" or parameter["repeatable"]:
        return None
    if kind in ("size", "count") and text.isdigit():
        return int(text)
    if kind == "number":
        return float(text)
    return text


def _refuse(function: str, name: str, what: str, value: Any) -> TypeError:
    return TypeError(f"{function}(): {name}= takes {what}, not {type(value).__name__}")


def takes_list(parameter: Dict[str, Any]) -> bool:
    # A positional parameter is one model: the command line's several MODELs are a loop
    # the caller writes in Python.
    return parameter["repeatable"] and not parameter["positional"]


def encode(function: str, parameter: Dict[str, Any], value: Any) -> List[bytes]:
    """The values to pass for one keyword, as the C API reads them (bytes, NUL-free)."""
    name = python_name(parameter["name"])
    if isinstance(value, (list, tuple)):
        if not takes_list(parameter):
            raise _refuse(function, name, "one value", value)
        items = list(value)
    else:
        items = [value]
    out = []
    kind = parameter["kind"]
    for item in items:
        if kind == "flag":
            if not isinstance(item, bool):
                raise _refuse(function, name, "True or False", item)
            encoded = b"1" if item else b"0"
        elif kind in ("size", "count", "number"):
            if isinstance(item, bool) or not isinstance(item, (int, float, str)) or (
                    isinstance(item, float) and kind != "number"):
                raise _refuse(function, name, KIND_WORDS[kind], item)
            encoded = (repr(float(item)) if isinstance(item, float) else str(item)).encode()
        elif kind in ("path", "model"):
            if not isinstance(item, (str, bytes, os.PathLike)):
                raise _refuse(function, name, KIND_WORDS[kind], item)
            encoded = os.fsencode(item)
        else:
            if not isinstance(item, str):
                raise _refuse(function, name, "str", item)
            encoded = item.encode("utf-8")
        if b"\0" in encoded:
            raise ValueError(f"{function}(): {name}= holds a NUL character")
        out.append(encoded)
    return out


def docstring(spec: Dict[str, Any], parameters: List[Dict[str, Any]]) -> str:
    lines = [spec["summary"][:1].upper() + spec["summary"][1:] + ".", ""]
    lines += textwrap.wrap(spec["description"], 88) + ["", "Parameters:"]
    for p in parameters:
        what = KIND_WORDS[p["kind"]]
        if takes_list(p):
            what += ", or a list of them"
        default = default_of(p)
        extra = []
        if p["choices"]:
            extra.append("one of " + ", ".join(repr(c) for c in p["choices"]))
        if p["required"]:
            extra.append("required")
        elif default not in (None, False):
            extra.append(f"default {default!r}")
        note = f" ({'; '.join(extra)})" if extra else ""
        lines.append(f"    {python_name(p['name'])}: {what}{note}")
        lines += textwrap.wrap(p["help"], 88, initial_indent=" " * 8, subsequent_indent=" " * 8)
    lines += [
        "    progress: a callable(stage, done, total, unit) called on this thread as the work",
        "        moves on (raising in it cancels the run), or True for a bar on stderr",
        "",
        "Returns the report as a dict (what 'onnxstream ... --json' prints).",
        "Raises onnxstream.Error (with .code, .message and .hint) when the command fails;",
        "Ctrl-C cancels the run, waits for it to remove its partial output, and raises",
        "KeyboardInterrupt.",
    ]
    return "\n".join(lines)


def signature_of(parameters: List[Dict[str, Any]]) -> inspect.Signature:
    positional, keywords = [], []
    for p in parameters:
        name = python_name(p["name"])
        if p["positional"]:
            positional.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD))
        elif p["required"]:
            keywords.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY))
        else:
            keywords.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default_of(p)))
    keywords.append(inspect.Parameter("progress", inspect.Parameter.KEYWORD_ONLY, default=None))
    return inspect.Signature(positional + keywords)


def _closest(function: str, error: TypeError, names: List[str]) -> str:
    match = re.search(r"unexpected keyword argument '([^']*)'", str(error))
    if not match:
        return f"{function}(): {error}"
    close = difflib.get_close_matches(match.group(1), names, n=1)
    hint = f" (did you mean {close[0]}=?)" if close else ""
    return f"{function}() got an unexpected keyword argument '{match.group(1)}'{hint}"


def make(spec: Dict[str, Any]) -> Callable[..., Dict[str, Any]]:
    command = spec["name"]
    function = python_name(command)
    parameters = [p for p in spec["parameters"] if shown(p)]
    by_name = {python_name(p["name"]): p for p in parameters}
    signature = signature_of(parameters)

    def run(*args: Any, **kwargs: Any) -> Dict[str, Any]:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(_closest(function, e, list(by_name))) from None
        # Only what the caller gave: the library applies its own defaults.
        given = dict(bound.arguments)
        progress = given.pop("progress", None)
        pairs: List[Tuple[bytes, bytes]] = []
        for name, value in given.items():
            if value is None:
                continue
            parameter = by_name[name]
            for encoded in encode(function, parameter, value):
                pairs.append((parameter["name"].encode(), encoded))
        if progress is True:
            callback = _progress.bar()
        elif progress is None or progress is False:
            callback = None
        elif callable(progress):
            callback = progress
        else:
            raise _refuse(function, "progress", "a callable, True or None", progress)
        try:
            outcome = _native.run(command, pairs, callback)
        finally:
            _progress.finish(callback)
        if outcome.code != 0:
            try:
                report = json.loads(outcome.report_json) if outcome.report_json else {}
            except ValueError:
                report = {}
            raise Error(outcome.message, code=_native.error_name(outcome.code), number=outcome.code,
                        hint=outcome.hint, report=report)
        return json.loads(outcome.report_json)

    run.__name__ = run.__qualname__ = function
    run.__module__ = "onnxstream"
    run.__doc__ = docstring(spec, parameters)
    run.__signature__ = signature  # type: ignore[attr-defined]
    return run


def table() -> List[Dict[str, Any]]:
    """The commands the package offers, with their parameters, as the library describes them."""
    return [c for c in json.loads(_native.commands_json()) if "python" in c["surfaces"]]


def command_list() -> str:
    """One line per command the package offers: its function's name and the command's summary."""
    return "".join(f"    {python_name(c['name'])}: {c['summary']}\n" for c in table())


def functions() -> Dict[str, Callable[..., Dict[str, Any]]]:
    return {python_name(c["name"]): make(c) for c in table()}

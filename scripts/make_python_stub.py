#!/usr/bin/python3
"""Writes the Python package's type stub (onnxstream/__init__.pyi) from the command table.

    ONNXSTREAM_C_LIBRARY=build/libonnxstream-c.so PYTHONPATH=python scripts/make_python_stub.py OUT.pyi

The package makes its functions at import time, which editors and type checkers cannot
see; the stub declares the same functions, with the same keywords and defaults, typed by
each parameter's kind. scripts/build_wheel.sh runs this into the wheel's staging copy.
"""
from __future__ import annotations

import sys

import onnxstream
from onnxstream import _commands

TYPES = {
    "text": "str",
    "path": "_Path",
    "model": "_Path",
    "size": "Union[int, str]",
    "count": "int",
    "number": "float",
    "flag": "bool",
}


def annotation(p: dict) -> str:
    kind = "Literal[" + ", ".join(repr(c) for c in p["choices"]) + "]" if p["kind"] == "choice" else TYPES[p["kind"]]
    if _commands.takes_list(p):
        kind = f"Union[{kind}, Sequence[{kind}]]"
    return kind


def function(spec: dict) -> str:
    shown = [p for p in spec["parameters"] if _commands.shown(p)]
    positional = [f"{_commands.python_name(p['name'])}: {annotation(p)}" for p in shown if p["positional"]]
    keywords = []
    for p in shown:
        if p["positional"]:
            continue
        name = _commands.python_name(p["name"])
        default = _commands.default_of(p)
        if p["required"]:
            keywords.append(f"{name}: {annotation(p)}")
        elif default is None:
            keywords.append(f"{name}: Optional[{annotation(p)}] = None")
        else:
            keywords.append(f"{name}: {annotation(p)} = {default!r}")
    keywords.append("progress: _Progress = None")
    name = _commands.python_name(spec["name"])
    doc = _commands.docstring(spec, shown).replace('"""', "'''").replace("\\", "\\\\")
    doc = "\n".join(("    " + line) if line else "" for line in doc.splitlines())
    return (f"def {name}({', '.join(positional + ['*'] + keywords)}) -> Dict[str, Any]:\n"
            f'    """\n{doc}\n    """\n')


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: make_python_stub.py OUT.pyi")
    parts = [
        "# Made by scripts/make_python_stub.py from the library's command table; do not edit.\n"
        "import os\n"
        "from typing import Any, Callable, Dict, List, Literal, Optional, Sequence, Union\n\n"
        "_Path = Union[str, bytes, os.PathLike]\n"
        "_Progress = Union[None, bool, Callable[[str, int, int, str], Any]]\n\n"
        "__version__: str\n\n"
        "class Error(Exception):\n"
        "    message: str\n    code: str\n    number: int\n    hint: str\n    report: Dict[str, Any]\n\n"
        "def commands() -> List[Dict[str, Any]]: ...\n",
    ]
    parts += [function(spec) for spec in onnxstream.commands()]
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        out.write("\n".join(parts))


if __name__ == "__main__":
    main()

"""onnxstream: rewrite ONNX models of any size without loading their weights.

    import onnxstream
    report = onnxstream.merge("model.onnx", output="merged.onnx", data=["weights.bin"])
    onnxstream.inspect("model.onnx")["external_data"]

One function per command of the onnxstream command line (listed below). Each takes
the model as its first argument and the command's options as keyword arguments
(data_dir=..., force=True, threshold="1M"), returns the report as a dict, and raises
onnxstream.Error on failure. help(onnxstream.merge) lists a command's keywords.

The functions are made from the library's own command table when the package is imported
(commands() gives it): the defaults, choices and help are the command line's.
"""
from __future__ import annotations

from typing import Any, Dict, List

from . import _commands, _native
from ._errors import Error

__version__ = _native.version()

globals().update(_commands.functions())

# The list of commands is made from the same table, so that it names every function the
# package has (python -OO drops the docstring).
if __doc__ is not None:
    __doc__ += "\nCommands:\n\n" + _commands.command_list()


def commands() -> List[Dict[str, Any]]:
    """Every command and its parameters, as the library describes them (name, kind,
    default, help, choices, repeatable, required ...)."""
    return _commands.table()


__all__ = ["Error", "commands"] + sorted(_commands.python_name(c["name"]) for c in _commands.table())

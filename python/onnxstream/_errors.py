"""onnxstream.Error: a failed command, as the library describes it."""
from __future__ import annotations

from typing import Any, Dict, Optional


class Error(Exception):
    """A command failed: nothing was written (a partial output is removed) and no input changed.

    code     the failure's stable name: "missing_data", "output_exists", "invalid_argument",
             "interrupted" ... (the C API's onnxstream_error_name)
    number   the same as the C API's stable number (ONNXSTREAM_ERROR_*)
    message  what happened (with the byte offset and field path where known)
    hint     what to do about it, remedies named as keyword arguments ("pass force=True");
             may be empty
    report   the error as the JSON report gives it ({"ok": False, "error": {...}})
    """

    def __init__(self, message: str, *, code: str = "", number: int = 0, hint: str = "",
                 report: Optional[Dict[str, Any]] = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.number = number
        self.hint = hint
        self.report = report if report is not None else {}

    def __str__(self) -> str:
        return self.message + (f"\n  hint: {self.hint}" if self.hint else "")

    def __repr__(self) -> str:
        return f"onnxstream.Error(code={self.code!r}, message={self.message!r})"

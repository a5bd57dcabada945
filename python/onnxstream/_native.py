"""The C API (include/onnxstream.h) through ctypes: loading the library and one run.

The library is the wheel's own libonnxstream-c.so.0, beside this file; ONNXSTREAM_C_LIBRARY
names another (a build folder's, for working on the package without a wheel).
"""
from __future__ import annotations

import ctypes
import os
import queue
import threading
from typing import Callable, Optional, Sequence, Tuple

API_VERSION = 1  # the ONNXSTREAM_API_VERSION this module was written against
LIBRARY = "libonnxstream-c.so.0"
INTERRUPTED = 15  # ONNXSTREAM_ERROR_INTERRUPTED

PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64,
                               ctypes.c_char_p)


def _load() -> ctypes.CDLL:
    path = os.environ.get("ONNXSTREAM_C_LIBRARY") or os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY)
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(f"onnxstream: cannot load its library {path}: {e}") from e
    lib.onnxstream_api_version.restype = ctypes.c_int
    lib.onnxstream_api_version.argtypes = []
    if lib.onnxstream_api_version() < API_VERSION:
        raise ImportError(f"onnxstream: {path} has C API version {lib.onnxstream_api_version()}, "
                          f"this package needs {API_VERSION} or later")
    text = ctypes.c_char_p
    handle = ctypes.c_void_p
    signatures = {
        "onnxstream_version": (text, []),
        "onnxstream_error_name": (text, [ctypes.c_int]),
        "onnxstream_commands_json": (text, []),
        "onnxstream_cancel_new": (handle, []),
        "onnxstream_cancel_set": (None, [handle]),
        "onnxstream_cancel_free": (None, [handle]),
        "onnxstream_run": (ctypes.c_int, [text, ctypes.POINTER(text), ctypes.POINTER(text), ctypes.c_size_t, PROGRESS_FN,
                                          handle, handle, ctypes.POINTER(handle)]),
        "onnxstream_result_report_json": (text, [handle]),
        "onnxstream_result_passed": (ctypes.c_int, [handle]),
        "onnxstream_result_error_code": (ctypes.c_int, [handle]),
        "onnxstream_result_error_message": (text, [handle]),
        "onnxstream_result_error_hint": (text, [handle]),
        "onnxstream_result_free": (None, [handle]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    return lib


_lib = _load()


def _text(raw: Optional[bytes]) -> str:
    # Messages quote names from the model, which need not be UTF-8.
    return (raw or b"").decode("utf-8", "backslashreplace")


def version() -> str:
    return _text(_lib.onnxstream_version())


def error_name(code: int) -> str:
    return _text(_lib.onnxstream_error_name(code))


def commands_json() -> str:
    raw = _lib.onnxstream_commands_json()
    if raw is None:
        raise MemoryError("onnxstream: no memory for the command table")
    return _text(raw)


class Outcome:
    """What one run gave: the error number (0: ok), the report (JSON text) and the error's words."""

    def __init__(self, code: int, report_json: str, passed: bool, message: str, hint: str):
        self.code = code
        self.report_json = report_json
        self.passed = passed
        self.message = message
        self.hint = hint


ProgressEvent = Tuple[str, int, int, str]


def run(command: str, pairs: Sequence[Tuple[bytes, bytes]],
        on_progress: Optional[Callable[[str, int, int, str], None]]) -> Outcome:
    """Runs the command on a worker thread while this one waits, so that Ctrl-C reaches
    Python. Progress events are handed to `on_progress` on this thread, one at a time:
    the run waits for each to be handled, so that a callback that raises stops the run
    before it goes on. When the wait or the callback raises, the run is cancelled, this
    thread waits for it to stop (it removes what it started writing), and the exception
    is raised again."""
    count = len(pairs)
    keys = (ctypes.c_char_p * max(count, 1))(*[k for k, _ in pairs])
    values = (ctypes.c_char_p * max(count, 1))(*[v for _, v in pairs])
    cancel = _lib.onnxstream_cancel_new()
    if not cancel:
        raise MemoryError("onnxstream: no memory for a cancellation flag")
    events: "queue.SimpleQueue[Tuple[ProgressEvent, threading.Event]]" = queue.SimpleQueue()
    stop = threading.Event()
    finished = threading.Event()

    def relay(_user, stage, done, total, unit):  # on the run's threads
        if stop.is_set():
            return 1
        handled = threading.Event()
        events.put(((_text(stage), int(done), int(total), _text(unit)), handled))
        # Not a plain wait: an event lost to a Ctrl-C between two lines of the loop
        # below must not keep the run waiting once it is cancelled.
        while not handled.wait(0.05):
            if stop.is_set():
                return 1
        return 1 if stop.is_set() else 0

    callback = PROGRESS_FN(relay) if on_progress is not None else PROGRESS_FN()
    handle = ctypes.c_void_p()

    def work():
        try:
            _lib.onnxstream_run(command.encode(), keys, values, count, callback, None, cancel, ctypes.byref(handle))
        finally:
            finished.set()

    worker = threading.Thread(target=work, name=f"onnxstream {command}", daemon=True)
    raised: Optional[BaseException] = None
    try:
        worker.start()
        while not finished.is_set():
            try:
                event, handled = events.get(timeout=0.05)
            except queue.Empty:
                continue
            try:
                on_progress(*event)  # type: ignore[misc]  (events come only with a callback)
            except BaseException:
                stop.set()  # before the run learns the event was handled
                raise
            finally:
                handled.set()
    except BaseException as e:  # Ctrl-C, or the callback's own exception: stop the run
        raised = e
        stop.set()
        _lib.onnxstream_cancel_set(cancel)
    finally:
        if _wait_for(worker, events, stop, cancel) and raised is None:
            raised = KeyboardInterrupt()
    try:
        result = handle.value
        outcome = Outcome(
            _lib.onnxstream_result_error_code(result),
            _text(_lib.onnxstream_result_report_json(result)),
            bool(_lib.onnxstream_result_passed(result)),
            _text(_lib.onnxstream_result_error_message(result)),
            _text(_lib.onnxstream_result_error_hint(result)),
        )
        _lib.onnxstream_result_free(result)
    finally:
        _lib.onnxstream_cancel_free(cancel)
    if raised is not None:
        raise raised
    return outcome


def _wait_for(worker: threading.Thread, events, stop: threading.Event, cancel) -> bool:
    # The run may be removing its partial output: a second Ctrl-C must not leave that half
    # done (nor free what the run still uses), so the wait goes on until the worker is
    # back, answering the events still queued. True: a Ctrl-C came meanwhile.
    interrupted = False
    while worker.is_alive():
        try:
            while True:
                try:
                    events.get_nowait()[1].set()
                except queue.Empty:
                    break
            worker.join(0.05)
        except KeyboardInterrupt:
            interrupted = True
            stop.set()
            _lib.onnxstream_cancel_set(cancel)
    return interrupted

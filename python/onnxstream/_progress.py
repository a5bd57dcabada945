"""progress=True: a bar per stage on stderr (tqdm's when it is installed)."""
from __future__ import annotations

import sys
import time
from typing import Callable, Optional, Tuple


def safe(text: str) -> str:
    # A stage names files, which may hold anything: nothing reaches the terminal as a control.
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
                   for c in text)


def amount(value: int, unit: str) -> str:
    if unit != "bytes":
        return f"{value} {unit}"
    size = float(value)
    for name in ("B", "KB", "MB", "GB", "TB"):
        if size < 1000 or name == "TB":
            return f"{size:.0f} {name}" if name == "B" else f"{size:.1f} {name}"
        size /= 1000
    return f"{value} B"


class _plain_bar:
    """One line per stage, redrawn at most ten times a second, finished with a newline."""

    def __init__(self, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.stage: Optional[str] = None
        self.last: Optional[Tuple[int, int, str]] = None  # the latest event, drawn or not
        self.drawn_at = 0.0
        self.undrawn = False

    def __call__(self, stage: str, done: int, total: int, unit: str) -> None:
        if stage != self.stage:
            self.close()
            self.stage = stage
        self.last = (done, total, unit)
        self.undrawn = True
        now = time.monotonic()
        if now - self.drawn_at >= 0.1 or (total > 0 and done >= total):
            self.draw()
            self.drawn_at = now

    def draw(self) -> None:
        if self.stage is None or self.last is None:
            return
        done, total, unit = self.last
        width = 30
        filled = min(width * done // total, width) if total > 0 else 0
        percent = min(100 * done // total, 100) if total > 0 else 0
        self.stream.write(f"\r{safe(self.stage)[:40]:<40} [{'#' * filled}{'.' * (width - filled)}] {percent:3d}%  "
                          f"{amount(done, unit)} / {amount(total, unit)}")
        self.stream.flush()
        self.undrawn = False

    def close(self) -> None:
        # A stage may end short of its total (a data file's alignment padding is not
        # counted): its last numbers are drawn before the line is closed.
        if self.undrawn:
            self.draw()
        if self.stage is not None:
            self.stream.write("\n")
            self.stream.flush()
        self.stage = None
        self.last = None


class _tqdm_bar:
    def __init__(self, tqdm):
        self.tqdm = tqdm
        self.bar = None
        self.stage: Optional[str] = None
        self.done = 0

    def __call__(self, stage: str, done: int, total: int, unit: str) -> None:
        if stage != self.stage:
            self.close()
            self.stage = stage
            self.done = 0
            bytes_ = unit == "bytes"
            self.bar = self.tqdm(total=total, desc=safe(stage), unit="B" if bytes_ else f" {unit}",
                                 unit_scale=bytes_, leave=True, file=sys.stderr)
        self.bar.update(done - self.done)
        self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        self.bar = None
        self.stage = None


def bar() -> Callable[[str, int, int, str], None]:
    try:
        from tqdm import tqdm  # optional: only if the user has it
    except ImportError:
        return _plain_bar()
    return _tqdm_bar(tqdm)


def finish(callback) -> None:
    close = getattr(callback, "close", None)
    if callable(close):
        close()

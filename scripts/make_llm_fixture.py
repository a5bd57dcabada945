#!/usr/bin/python3
"""Writes a small GPT-like transformer as a torch large-model export: one file per tensor.

    /usr/bin/python3 scripts/make_llm_fixture.py OUTDIR [--large]

Needs Debian's python3-torch (1.13), python3-onnx (1.12) and python3-numpy (the first
python3 on PATH may lack them). Everything is seeded: two runs write the same bytes.

The model: token and position embeddings, N pre-LayerNorm blocks (causal self-attention,
GELU MLP), a final LayerNorm and a language-model head tied to the token embedding. It is
exported with torch.onnx.export (opset 14), eval mode, constant folding, fixed shapes:
input `input_ids` int64 [1, SEQ], output `logits` float32 [1, SEQ, VOCAB].

The layout is the one torch writes for models over 2 GB: every initializer of at least
1024 bytes in its own file beside the model, named after the tensor, referenced with only
a `location` key (no offset, no length); smaller ones stay embedded. torch does that by
itself past 2 GB (--large); below it, this script moves the tensors out the same way.

Tied weights: torch >= 1.12 stores a tied parameter once. Older exporters (and many
published LLM exports) store it twice, once per use; this script reproduces that on
purpose: the head reads its own initializer `lm_head.weight`, whose file holds the same
bytes as `transformer.wte.weight`, so deduplication has something to find.

OUTDIR receives model.onnx, the tensor files and llm_fixture.json:
  {"generator_sha1", "config", "model", "input": {name, dtype, shape}, "output",
   "tied": [two initializer names with identical bytes], "files": count, "bytes": total}

Default: about 35 MB. --large: about 2.9 GB (for benchmarks; takes a few minutes).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

SEED = 20240611
OPSET = 14
EXTERNAL_THRESHOLD = 1024  # torch's ParamSizeThresholdForExternalStorage
MODEL_NAME = "model.onnx"
INFO_NAME = "llm_fixture.json"
TIED = ("transformer.wte.weight", "lm_head.weight")

CONFIGS = {
    "default": {"vocab": 8192, "d_model": 256, "heads": 4, "layers": 6, "seq": 32},
    "large": {"vocab": 32000, "d_model": 2048, "heads": 16, "layers": 12, "seq": 16},
}


def generator_sha1() -> str:
    """Changes whenever this script changes (stale fixtures)."""
    return hashlib.sha1(Path(__file__).resolve().read_bytes()).hexdigest()


def build_model(config: dict):
    import torch
    from torch import nn
    from torch.nn import functional as F

    class Block(nn.Module):
        def __init__(self, d: int, heads: int, seq: int):
            super().__init__()
            self.heads = heads
            self.d = d
            self.scale = 1.0 / math.sqrt(d // heads)
            self.ln_1 = nn.LayerNorm(d)
            self.c_attn = nn.Linear(d, 3 * d)
            self.c_proj = nn.Linear(d, d)
            self.ln_2 = nn.LayerNorm(d)
            self.c_fc = nn.Linear(d, 4 * d)
            self.mlp_proj = nn.Linear(4 * d, d)
            mask = torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1)
            self.register_buffer("mask", mask, persistent=False)

        def forward(self, x):
            batch, seq, d = x.shape[0], x.shape[1], self.d
            head = d // self.heads
            q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
            q = q.reshape(batch, seq, self.heads, head).transpose(1, 2)
            k = k.reshape(batch, seq, self.heads, head).transpose(1, 2)
            v = v.reshape(batch, seq, self.heads, head).transpose(1, 2)
            scores = torch.matmul(q, k.transpose(2, 3)) * self.scale + self.mask
            attended = torch.matmul(torch.softmax(scores, dim=-1), v)
            x = x + self.c_proj(attended.transpose(1, 2).reshape(batch, seq, d))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self, c: dict):
            super().__init__()
            self.wte = nn.Embedding(c["vocab"], c["d_model"])
            self.wpe = nn.Embedding(c["seq"], c["d_model"])
            self.h = nn.ModuleList(Block(c["d_model"], c["heads"], c["seq"]) for _ in range(c["layers"]))
            self.ln_f = nn.LayerNorm(c["d_model"])
            self.register_buffer("positions", torch.arange(c["seq"]).unsqueeze(0), persistent=False)

        def forward(self, input_ids):
            x = self.wte(input_ids) + self.wpe(self.positions)
            for block in self.h:
                x = block(x)
            x = self.ln_f(x)
            batch, seq = x.shape[0], x.shape[1]
            # The head is tied to the embedding: logits = x W^T, computed as (W x^T)^T so
            # that the exported MatMul reads the embedding matrix itself, not a transposed
            # copy made by constant folding.
            logits = torch.matmul(self.wte.weight, x.reshape(batch * seq, -1).t()).t()
            return logits.reshape(batch, seq, -1)

    class Wrapper(nn.Module):
        """Names parameters like GPT-2 checkpoints: transformer.wte.weight, ..."""

        def __init__(self, c: dict):
            super().__init__()
            self.transformer = GPT(c)

        def forward(self, input_ids):
            return self.transformer(input_ids)

    torch.manual_seed(SEED)
    model = Wrapper(config).eval()
    # LayerNorms start at ones/zeros; give them distinct values so that the only identical
    # tensors are the tied pair (torch would fold identical initializers into one anyway).
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if ".ln_" in name or name.endswith("ln_f.weight") or name.endswith("ln_f.bias"):
                parameter.add_(torch.randn_like(parameter) * 0.05)
    return model


def export(config: dict, out: Path) -> None:
    import torch

    model = build_model(config)
    ids = torch.randint(0, config["vocab"], (1, config["seq"]), generator=torch.Generator().manual_seed(SEED))
    with torch.no_grad():
        torch.onnx.export(model, (ids,), str(out / MODEL_NAME), opset_version=OPSET,
                          input_names=["input_ids"], output_names=["logits"], do_constant_folding=True)


def file_name_for(tensor_name: str) -> str:
    """A tensor's file name, as torch derives it: path separators and odd characters to '_'."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", tensor_name)
    return name if name and name not in (".", "..") else "tensor"


def write_tensor_file(folder: Path, tensor: TensorProto, used: set[str]) -> None:
    """Moves an embedded initializer's bytes into its own file, with only a location key."""
    name = file_name_for(tensor.name)
    while name in used or name == MODEL_NAME or name == INFO_NAME:
        name += "_"
    used.add(name)
    (folder / name).write_bytes(numpy_helper.to_array(tensor).astype(
        numpy_helper.to_array(tensor).dtype.newbyteorder("<"), copy=False).tobytes())
    tensor.ClearField("raw_data")
    for field in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
        tensor.ClearField(field)
    del tensor.external_data[:]
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", name
    tensor.data_location = TensorProto.EXTERNAL


def nbytes(tensor: TensorProto) -> int:
    count = 1
    for d in tensor.dims:
        count *= d
    return count * np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tensor.data_type]).itemsize


def to_per_tensor_layout(folder: Path) -> onnx.ModelProto:
    """torch's large-model layout, whatever torch wrote: per-tensor files, location only."""
    path = folder / MODEL_NAME
    model = onnx.load(str(path), load_external_data=False)
    used = {p.name for p in folder.iterdir()}
    for tensor in model.graph.initializer:
        external = tensor.data_location == TensorProto.EXTERNAL
        if external:
            entries = {e.key: e.value for e in tensor.external_data}
            # torch writes location only; offsets would mean the layout is not torch's.
            assert set(entries) == {"location"}, f"{tensor.name}: unexpected external_data {entries}"
        elif nbytes(tensor) >= EXTERNAL_THRESHOLD:
            write_tensor_file(folder, tensor, used)
    return model


def untie_head(folder: Path, model: onnx.ModelProto) -> None:
    """Gives the head its own copy of the tied embedding, as pre-1.12 torch exports do."""
    wte_name, head_name = TIED
    (wte,) = [t for t in model.graph.initializer if t.name == wte_name]
    users = [n for n in model.graph.node if wte_name in n.input and n.op_type in ("Gemm", "MatMul")]
    assert len(users) == 1, f"expected one head reading {wte_name}, found {[n.op_type for n in users]}"
    assert wte.data_location == TensorProto.EXTERNAL
    source = folder / {e.key: e.value for e in wte.external_data}["location"]
    head_file = file_name_for(head_name)
    shutil.copyfile(source, folder / head_file)
    head = TensorProto()
    head.CopyFrom(wte)
    head.name = head_name
    del head.external_data[:]
    entry = head.external_data.add()
    entry.key, entry.value = "location", head_file
    model.graph.initializer.append(head)
    node = users[0]
    for i, name in enumerate(node.input):
        if name == wte_name:
            node.input[i] = head_name


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--large", action="store_true", help="a > 2 GB model (benchmarks)")
    args = parser.parse_args()
    out: Path = args.outdir.resolve()
    config = CONFIGS["large" if args.large else "default"]
    started = time.monotonic()

    # Build in a fresh folder beside OUTDIR, then swap it in: a failed run leaves no half model.
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        export(config, work)
        model = to_per_tensor_layout(work)
        untie_head(work, model)
        (work / MODEL_NAME).write_bytes(model.SerializeToString())
        onnx.checker.check_model(str(work / MODEL_NAME))
        files = [p for p in work.iterdir() if p.name != MODEL_NAME]
        info = {
            "generator_sha1": generator_sha1(),
            "config": config,
            "large": args.large,
            "model": MODEL_NAME,
            "input": {"name": "input_ids", "dtype": "int64", "shape": [1, config["seq"]],
                      "high": config["vocab"]},
            "output": "logits",
            "tied": list(TIED),
            "files": len(files),
            "bytes": sum(p.stat().st_size for p in files) + (work / MODEL_NAME).stat().st_size,
        }
        (work / INFO_NAME).write_text(json.dumps(info, indent=1) + "\n")
        if out.exists():
            shutil.rmtree(out)
        os.replace(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    print(f"make_llm_fixture: {info['files']} tensor files, {info['bytes'] / 1e6:.1f} MB in {out} "
          f"({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

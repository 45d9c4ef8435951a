#!/usr/bin/env python3
"""docs/onnx.md's table: memfold's arenas for models exported from PyTorch
(python/tests/onnx_models.py, torch.onnx.export) beside the memory ONNX Runtime's own run
takes, measured in the same run.

ONNX Runtime exposes no arena statistics from Python, so its figure is measured: a fresh
process creates the session (one thread, memory patterns and the CPU arena on, as by default),
reads its peak resident set (VmHWM), runs the model twice and reads the peak again; the growth
is what running took (activations, the kernels' scratch, the arena's rounding), to 4 KiB pages.
memfold's figures are planned arenas, every plan verified and run checked against the
unplanned run. Usage: PYTHONPATH=build/release/python build/venv/bin/python scripts/onnx_table.py
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python", "tests"))
import memfold  # noqa: E402
import onnx_models  # noqa: E402

ORT_PROBE = r"""
import sys, numpy as np, onnxruntime as ort
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
so = ort.SessionOptions()
so.intra_op_num_threads = 1
so.inter_op_num_threads = 1
s = ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
x = np.load(sys.argv[2])
before = hwm()
for _ in range(2):
    s.run(None, {s.get_inputs()[0].name: x})
print(hwm() - before)
"""


def ort_growth(path, x, tmp):
    np.save(os.path.join(tmp, "x.npy"), x)
    out = subprocess.run([sys.executable, "-c", ORT_PROBE, path, os.path.join(tmp, "x.npy")],
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def row(name, tmp):
    path = os.path.join(tmp, name + ".onnx")
    x = onnx_models.export(name, path).numpy()
    arenas = {p: memfold.plan(path, planner=p).arena_bytes for p in ("naive", "greedy", "diagonal")}
    best = memfold.run(path, planner="best", inputs=[x.tobytes()])
    assert best["identical_to_unplanned"], name
    arenas["best"] = best["arena_bytes"]
    arenas["input"] = x.nbytes
    arenas["ort"] = min(ort_growth(path, x, tmp) for _ in range(3))
    return arenas


def main():
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in onnx_models.MODELS:
            rows[name] = row(name, tmp)
            print(name, json.dumps(rows[name]), flush=True)
    print()
    print("| model (input) | memfold naive | memfold greedy (TFLM) | memfold diagonal | "
          "memfold best | ONNX Runtime, measured growth |")
    print("|---|---|---|---|---|---|")
    for name, r in rows.items():
        shape = "x".join(map(str, onnx_models.MODELS[name][1]))
        print(f"| {name} ({shape}) | {r['naive']:,} | {r['greedy']:,} | {r['diagonal']:,} | "
              f"**{r['best']:,}** | {r['ort']:,} |")


if __name__ == "__main__":
    main()

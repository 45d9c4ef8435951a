#!/usr/bin/env python3
"""docs/onnx.md's table: memfold's arenas for models exported from PyTorch
(python/tests/onnx_models.py, torch.onnx.export), float32 and statically quantised (ONNX
Runtime's quantiser, QDQ form, int8 activations and per-channel weights), beside the memory ONNX
Runtime's own run takes, measured in the same run.

ONNX Runtime reports no arena statistics, so its figure is measured: a child process with
scripts/heap_peak.c preloaded (it counts every heap byte the process holds) creates the session
(one thread, memory patterns on, its CPU arena off so that each run allocates what it needs
instead of keeping a 1 MiB chunk), runs the model once to warm up, then reports the most heap
bytes a run held beyond what was held before it, the lowest of two runs: its planned
activations, its kernels' scratch and the outputs; the caller's input is not counted.
memfold's figures are planned arenas (the input included, as TFLM counts it), every plan
verified and `best` run checked against the unplanned run.
Usage: PYTHONPATH=build/release/python build/venv/bin/python scripts/onnx_table.py
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
import ctypes, sys, numpy as np, onnxruntime as ort
heap = ctypes.CDLL(None)
for name in ("heap_peak_bytes", "heap_held_bytes"):
    getattr(heap, name).restype = ctypes.c_longlong
so = ort.SessionOptions()
so.intra_op_num_threads = 1
so.inter_op_num_threads = 1
so.enable_cpu_mem_arena = False
s = ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
x = np.load(sys.argv[2])
feed = {s.get_inputs()[0].name: x}
s.run(None, feed)
peaks = []
for _ in range(2):
    held = heap.heap_held_bytes()
    heap.heap_peak_reset()
    s.run(None, feed)
    peaks.append(heap.heap_peak_bytes() - held)
print(min(peaks))
"""


def heap_library(tmp):
    library = os.path.join(tmp, "heap_peak.so")
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", library,
                    os.path.join(HERE, "heap_peak.c")], check=True)
    return library


def ort_run_bytes(path, x, tmp, library):
    np.save(os.path.join(tmp, "x.npy"), x)
    out = subprocess.run([sys.executable, "-c", ORT_PROBE, path, os.path.join(tmp, "x.npy")],
                         capture_output=True, text=True, check=True,
                         env=dict(os.environ, LD_PRELOAD=library))
    return int(out.stdout.strip().splitlines()[-1])


def row(name, tmp, quantized, library):
    float_path = os.path.join(tmp, name + ".onnx")
    x = onnx_models.export(name, float_path).numpy()
    path = float_path
    if quantized:
        path = os.path.join(tmp, name + "_int8.onnx")
        onnx_models.quantize(float_path, path, x)
    arenas = {p: memfold.plan(path, planner=p).arena_bytes for p in ("naive", "greedy", "diagonal")}
    best = memfold.run(path, planner="best", inputs=[x.tobytes()])
    assert best["identical_to_unplanned"], name
    arenas["best"] = best["arena_bytes"]
    arenas["input"] = x.nbytes
    arenas["ort"] = ort_run_bytes(path, x, tmp, library)
    return arenas


def main():
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        library = heap_library(tmp)
        for quantized in (False, True):
            for name in onnx_models.MODELS:
                key = name + (" int8 (QDQ)" if quantized else "")
                rows[key] = row(name, tmp, quantized, library)
                print(key, json.dumps(rows[key]), flush=True)
    print()
    print("| model (input) | memfold naive | memfold greedy (TFLM) | memfold diagonal | "
          "memfold best | ONNX Runtime, heap of a run |")
    print("|---|---|---|---|---|---|")
    for name, r in rows.items():
        shape = "x".join(map(str, onnx_models.MODELS[name.split()[0]][1]))
        print(f"| {name} ({shape}) | {r['naive']:,} | {r['greedy']:,} | {r['diagonal']:,} | "
              f"**{r['best']:,}** | {r['ort']:,} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes tests/golden/tflm_reference.json: what TensorFlow Lite Micro itself plans and computes
for every shared model (../shared/models and ../shared/anchors), through TFLM's Python
interpreter (memfold.tflm.reference), so the reference the tests compare with is generated,
never typed. `make tflm-reference` runs it; python/tests/test_tflm.py checks that the file is
what TFLM prints today. Usage: scripts/tflm_reference.py [OUT]
"""
import json
import os
import sys
from importlib import metadata

import memfold.tflm

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SHARED = os.environ.get("MEMFOLD_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
OUT = os.path.join(ROOT, "tests", "golden", "tflm_reference.json")
INPUT_RULE = ("contract default input: int8 ((7k+3) mod 256)-128; uint8 (7k+3) mod 256; int16 "
              "((7k+3) mod 65536)-32768; int32 (7k+3) mod 1000; float32 sin(0.01k)")
NOTE = ("head_bytes = TFLM's planned non-persistent arena (activations + kernel scratch buffers), "
        "arena_used_bytes = head + persistent tail, min_arena_bytes = smallest arena (8-byte "
        "steps) AllocateTensors accepts, all on this 64-bit host; outputs for the default input; "
        "ok false: TFLM refuses the model, error its message")


def shared_models():
    """Every .tflite file of the shared models and anchors, by file name."""
    models = {}
    for folder in ("models", "anchors"):
        for directory, _, files in sorted(os.walk(os.path.join(SHARED, folder))):
            for name in sorted(files):
                if name.endswith(".tflite"):
                    models[name] = os.path.join(directory, name)
    return models


def generate():
    version = metadata.version("tflite-micro")
    return {"source": f"TensorFlow Lite Micro's Python interpreter, tflite-micro {version}",
            "input_rule": INPUT_RULE, "note": NOTE,
            "models": {name: memfold.tflm.reference(path)
                       for name, path in sorted(shared_models().items())}}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else OUT
    with open(out, "w") as f:
        json.dump(generate(), f, indent=1)
        f.write("\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

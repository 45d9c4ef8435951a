#!/usr/bin/env python3
"""Prints the patch-based inference table of the README (issue 17): for each model, TFLM's
greedy arena, memfold's best plan without splitting, and `--planner best` with the input
resident and streamed (--stream-input), at the default 10 % recompute budget and at 2 %
(where cached halos, which recompute nothing, must carry the split). The PyTorch-layout
MobileNet v2 is written with memfold's TFLite writer (`memfold inspect --write-tflite`) and
planned from that file. Every figure comes from
`memfold plan --json`; planning time is the wall time of that command.

Usage: scripts/patch_table.py [path/to/memfold]
"""
import json
import os
import subprocess
import sys
import tempfile
import time

SHARED = "../shared/models"
PYTORCH_V2 = "zoo:mobilenet_v2,dtype=i8,pads=explicit"
MODELS = [
    ("MobileNet v2 1.0/224 int8 (zoo)", "zoo:mobilenet_v2,dtype=i8"),
    ("MobileNet v2 1.0/224 int8, PyTorch layout (a PAD before every stride-2 window), "
     "written as .tflite", "PYTORCH_V2"),
    ("MobileNet v1 1.0/224 int8 (zoo)", "zoo:mobilenet_v1,dtype=i8"),
    ("MobileNet v1 0.25/128 int8 (zoo, DMO paper)", "zoo:mobilenet_v1,alpha=0.25,res=128,dtype=i8"),
    ("TinyEngine `vww.tflite`", f"{SHARED}/tinyengine/vww.tflite"),
    ("TFLM `person_detect.tflite`", f"{SHARED}/tflite-micro/person_detect.tflite"),
    ("MLPerf Tiny `vww_96_int8.tflite`", f"{SHARED}/mlcommons-tiny/vww_96_int8.tflite"),
]


def plan(memfold, model, *flags):
    start = time.monotonic()
    out = subprocess.run([memfold, "plan", model, "--planner", "best", "--json", *flags],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out), time.monotonic() - start


def cell(result):
    data, _ = result
    return f"{data['arena_bytes']:,} (+{100 * data['recompute_fraction']:.1f} %)"


def main():
    memfold = sys.argv[1] if len(sys.argv) > 1 else "build/release/memfold"
    written = os.path.join(tempfile.mkdtemp(), "mobilenet_v2_pytorch_i8.tflite")
    subprocess.run([memfold, "inspect", PYTORCH_V2, "--write-tflite", written], check=True,
                   capture_output=True)
    print("| model | TFLM greedy | no split | best, resident | best, streamed "
          "| streamed, ≤ 2 % recompute | planning s |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for name, model in MODELS:
        model = written if model == "PYTORCH_V2" else model
        resident = plan(memfold, model)
        streamed = plan(memfold, model, "--stream-input")
        cached = plan(memfold, model, "--stream-input", "--max-recompute", "0.02")
        steps = {s["step"]: s["arena_bytes"] for s in resident[0]["steps"]}
        slowest = max(resident[1], streamed[1], cached[1])
        print(f"| {name} | {steps['greedy']:,} | {steps['concat']:,} | {cell(resident)} "
              f"| {cell(streamed)} | {cell(cached)} | {slowest:.1f} |", flush=True)


if __name__ == "__main__":
    main()

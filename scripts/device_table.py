#!/usr/bin/env python3
"""Compiled RAM, flash and speed on the emulated Cortex-M4 next to TFLM and CMSIS-NN.

For every shared model TFLM ran (int8 and float32) and the int8 zoo MobileNets, runs
`memfold compile MODEL --planner P --run --json` for greedy, diagonal and best and prints two
markdown tables (docs/device.md): RAM and flash beside TFLM's minimum arena, instructions
per inference beside the anchors issue 31 measured with the same method (each model's layer
shapes through TFLM's reference kernels and through CMSIS-NN's s8 DSP path, built with
memfold's flags, counted under QEMU -icount), and the best plan's flash by part. Usage: scripts/device_table.py [MEMFOLD_BINARY]
[WORK_DIR]
"""
import json
import os
import subprocess
import sys

MEMFOLD = sys.argv[1] if len(sys.argv) > 1 else "build/release/memfold"
WORK = sys.argv[2] if len(sys.argv) > 2 else "build/release/device/table"
SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared")
REFERENCE = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                      "golden", "tflm_reference.json")))["models"]
PLANNERS = ["greedy", "diagonal", "best"]
# Millions of instructions per inference (issue 31's anchors): TFLM reference kernels, CMSIS-NN.
ANCHORS = {"person_detect.tflite": (95.9, 22.9), "vww_96_int8.tflite": (100.5, 24.1),
           "kws_ref_model.tflite": (43.0, 7.70), "pretrainedResnet_quant.tflite": (107.4, 29.9),
           "ad01_int8.tflite": (1.95, 0.58)}
ZOO = ["zoo:mobilenet_v1,alpha=0.25,res=128,dtype=i8", "zoo:mobilenet_v2,alpha=0.35,res=96,dtype=i8",
       "zoo:mobilenet_v2,dtype=i8", "zoo:mobilenet_v1,dtype=i8"]


def shared_models():
    models = []
    for folder in sorted(os.listdir(os.path.join(SHARED, "models"))):
        directory = os.path.join(SHARED, "models", folder)
        if not os.path.isdir(directory):
            continue
        for name in sorted(os.listdir(directory)):
            entry = REFERENCE.get(name, {})
            if name.endswith(".tflite") and entry.get("ok"):
                models.append(os.path.join(directory, name))
    return models


def compile_and_run(model, planner):
    out_dir = os.path.join(WORK, "".join(c if c.isalnum() else "_" for c in os.path.basename(model)) + "_" + planner)
    run = subprocess.run([MEMFOLD, "compile", model, "--planner", planner, "-o", out_dir, "--run", "--json"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        lines = run.stderr.strip().splitlines()
        overflow = [line for line in lines if "overflowed by" in line]  # the linker's figure
        why = overflow[-1].split("region ")[-1] if overflow else lines[-1].split(model + ": ", 1)[-1]
        return None, f"{planner}: {why}"
    return json.loads(run.stdout), None


def cell(bytes_):
    return f"{bytes_:,}"


def millions(instructions):
    return f"{instructions / 1e6:.2f}"


def main():
    print("| model | TFLM min arena | memfold greedy RAM | diagonal RAM | best RAM (arena) | flash (best) | outputs |")
    print("|---|---:|---:|---:|---:|---:|---|")
    speed, flash = [], []
    for model in shared_models() + ZOO:
        name = os.path.basename(model) if not model.startswith("zoo:") else "`" + model + "`"
        entry = REFERENCE.get(os.path.basename(model))
        tflm = cell(entry["min_arena_bytes"]) if entry else "–"
        cells, runs, agrees, failures, instructions = [], {}, True, [], {}
        for planner in PLANNERS:
            run, failure = compile_and_run(model, planner)
            if run is None:
                cells.append(f"not compiled: {failure}")
                failures.append(failure)
                continue
            runs[planner] = run
            cells.append(cell(run["ram_bytes"]))
            instructions[planner] = run["instructions"]
            agrees = agrees and run["identical_to_host"]
            if entry:
                agrees = agrees and [o["sha256"] for o in run["outputs"]] == [o["sha256"] for o in entry["outputs"]]
        if not runs:
            print(f"| {name} | {tflm} | not compiled: {failures[0]} | | | | |")
            continue
        best = runs.get("best")
        if best:
            cells[-1] += f" ({cell(best['arena_bytes'])})"
        verdict = ("= host and TFLM" if entry else "= host") if agrees else "DIFFER"
        flash_cell = cell(best["flash_bytes"]) if best else "–"
        print(f"| {name} | {tflm} | " + " | ".join(cells) + f" | {flash_cell} | {verdict} |")
        if len(instructions) == len(PLANNERS):
            speed.append((name, instructions, ANCHORS.get(os.path.basename(model))))
        if best:
            flash.append((name, best["flash_bytes"], best["flash_by_part"]))
    print()
    print("| model | memfold greedy (M instr) | diagonal | best | TFLM reference kernels | CMSIS-NN |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, instructions, anchor in speed:
        ours = " | ".join(millions(instructions[p]) for p in PLANNERS)
        theirs = f"{anchor[0]} | {anchor[1]}" if anchor else "– | –"
        print(f"| {name} | {ours} | {theirs} |")
    print()
    print("| model | flash (best) | code | tables | weights | test input |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, total, part in flash:
        parts = " | ".join(cell(part[k]) for k in ("code", "tables", "weights", "input"))
        print(f"| {name} | {cell(total)} | {parts} |")


if __name__ == "__main__":
    main()

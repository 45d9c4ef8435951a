#!/usr/bin/env python3
"""memfold against TensorFlow Lite Micro on a folder of your own .tflite files: for each file,
whether TFLM runs it, whether memfold reads it, whether every tensor TFLM keeps equals memfold's
(memfold.tflm.compare_values), and whether memfold's greedy and diagonal plans, loaded into TFLM
as offline plans, run to TFLM's own outputs with TFLM's head equal to memfold's arena
(memfold.tflm.compare_plan). Prints one line per file that is not alike and a summary.

Usage: PYTHONPATH=build/release/python build/venv/bin/python scripts/tflm_compare.py DIR
"""
import collections
import glob
import os
import sys

import memfold
import memfold.tflm as tflm


def verdict(path):
    """(outcome, detail) of one file."""
    with open(path, "rb") as f:
        data = f.read()
    if not tflm.runs(data):
        return "TFLM does not run it", ""
    try:
        _, differences = tflm.compare_values(path)
    except ValueError as error:
        return "memfold refuses", str(error)
    if differences:
        return "tensors differ", str(differences[:3])
    notes = []
    for planner in ("greedy", "diagonal"):
        arena, head, identical = tflm.compare_plan(path, planner)
        if not identical:
            return "plan differs inside TFLM", planner
        if arena != head:
            notes.append(f"{planner}: arena {arena:,}, TFLM head {head:,}")
    return "alike", "; ".join(notes)


def main():
    counts = collections.Counter()
    for path in sorted(glob.glob(os.path.join(sys.argv[1], "**", "*.tflite"), recursive=True)):
        outcome, detail = verdict(path)
        counts[outcome] += 1
        if outcome != "alike" or detail:
            print(f"{os.path.relpath(path, sys.argv[1])}: {outcome} {detail}".rstrip(), flush=True)
    print(dict(counts))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Prints the full-size training table of the README (issue 18): for each model, one process
runs `memfold train MODEL --strategy all --steps K --json` -- each strategy's first step checked
against its unplanned twin, then K planned steps of none, mirror and echo interleaved (the order
rotating every round) -- and the table gives per strategy the planned footprint, the peak
resident memory the OS measured for its planned session (measured_peak_bytes), the median
step's operator time and its overhead against `none`. A model whose steps do not fit in the
memory available is reported with memfold's refusal instead of being run.

Usage: scripts/training_table.py [--steps K] [path/to/memfold] [model ...]
"""
import json
import subprocess
import sys

MODELS = ["zoo:resnet", "zoo:transformer", "zoo:nmt", "zoo:deepspeech2"]


def mib(n):
    return f"{n / 2**20:,.0f} MiB"


def interleaved(memfold, model, steps):
    run = subprocess.run([memfold, "train", model, "--strategy", "all", "--steps", str(steps),
                          "--json"], capture_output=True, text=True)
    if run.returncode != 0:
        return None, run.stderr.strip().splitlines()[-1]
    return json.loads(run.stdout), None


def main():
    args = sys.argv[1:]
    steps = 3
    if args[:1] == ["--steps"]:
        steps, args = int(args[1]), args[2:]
    memfold = args[0] if args else "build/release/memfold"
    models = args[1:] or MODELS
    print("| model | strategy | planned | measured peak RSS | step (median) | vs none |")
    print("|---|---|---:|---:|---:|---:|")
    for model in models:
        result, error = interleaved(memfold, model, steps)
        if result is None:
            print(f"| `{model}` | all | refused: {error} | | | |", flush=True)
            continue
        for s in result["strategies"]:
            runs = ", ".join(f"{ms / 1000:.1f}" for ms in s["step_ms_runs"])
            print(f"| `{model}` | {s['strategy']} (kept: {s['chosen_strategy']}) | "
                  f"{mib(s['total_bytes'])} | {mib(s['measured_peak_bytes'])} | "
                  f"{s['step_ms'] / 1000:.1f} s ({runs}) | "
                  f"{100 * (s['step_vs_none'] - 1):+.1f} % |", flush=True)


if __name__ == "__main__":
    main()

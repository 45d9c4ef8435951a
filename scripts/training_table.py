#!/usr/bin/env python3
"""Prints the full-size training table of the README (issue 18): for each model and strategy,
one checked training step executed by `memfold train MODEL --strategy S --steps 1 --json` -- the
planned footprint, the peak resident memory the OS measured for the planned session
(measured_peak_bytes), the planned step's operator time (step_ms) and its overhead against
`none`. A model whose checked step does not fit in the memory available is reported with
memfold's refusal instead of being run.

Usage: scripts/training_table.py [path/to/memfold] [model ...]
"""
import json
import subprocess
import sys

MODELS = ["zoo:resnet", "zoo:transformer", "zoo:nmt", "zoo:deepspeech2"]
STRATEGIES = ["none", "mirror", "echo"]


def mib(n):
    return f"{n / 2**20:,.0f} MiB"


def step(memfold, model, strategy):
    run = subprocess.run([memfold, "train", model, "--strategy", strategy, "--steps", "1",
                          "--json"], capture_output=True, text=True)
    if run.returncode != 0:
        return None, run.stderr.strip().splitlines()[-1]
    return json.loads(run.stdout), None


def main():
    memfold = sys.argv[1] if len(sys.argv) > 1 else "build/release/memfold"
    models = sys.argv[2:] or MODELS
    print("| model | strategy | planned | measured peak RSS | step (operators) | vs none |")
    print("|---|---|---:|---:|---:|---:|")
    for model in models:
        none_ms = None
        for strategy in STRATEGIES:
            result, error = step(memfold, model, strategy)
            if result is None:
                print(f"| `{model}` | {strategy} | refused: {error} | | | |", flush=True)
                continue
            ms = result["step_ms"]
            none_ms = ms if strategy == "none" else none_ms
            overhead = f"{100 * (ms / none_ms - 1):+.1f} %" if none_ms else "-"
            print(f"| `{model}` | {strategy} (kept: {result['chosen_strategy']}) | "
                  f"{mib(result['total_bytes'])} | {mib(result['measured_peak_bytes'])} | "
                  f"{ms / 1000:.1f} s | {overhead} |", flush=True)


if __name__ == "__main__":
    main()

"""memfold against TFLM on models the real TFLite converter made (tests/converter_models,
written by scripts/converter_models.py: one case per operator, float32, int8 and 16x8). Every
model TFLM runs, memfold runs with every tensor equal to TFLM's, and its greedy and diagonal
plans run inside TFLM to TFLM's outputs; but for the files listed in GAPS, which memfold plans
and refuses to run, naming the operator. Each is compared on the contract's default input and
two random ones. The coverage table's converter column (`memfold ops`) is exactly what these
runs check."""
import json
import os
import subprocess

import numpy as np
import pytest

import memfold
import memfold.tflm as tflm

FOLDER = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "converter_models")
MEMFOLD = os.environ.get("MEMFOLD_BINARY", "memfold")
# file -> what memfold's refusal names: operators memfold reads but has no kernel for in that
# type. Each must still be refused (a kernel added must leave this list).
GAPS = {
    "log_softmax_i8.tflite": "(log_softmax) has no i8 kernel",
}


def manifest():
    """(file, form, its TFLite operators) of every file the converter wrote."""
    rows = []
    with open(os.path.join(FOLDER, "MANIFEST.txt")) as f:
        for line in f:
            fields = [field.strip() for field in line.split("|")]
            if line.startswith("#") or fields[2].startswith("refused"):
                continue
            rows.append((f"{fields[0]}_{fields[1]}.tflite", fields[1], fields[3].split()))
    return rows


FILES = manifest()


def random_inputs(data, count=2):
    """`count` inputs of random values for the model (seeded by the file) beyond the default
    input, so that the kernels' tables and fixed-point paths are compared over their range:
    random bytes, or uniform in [-3, 3] for float32 inputs (random bytes would be NaNs)."""
    rng = np.random.default_rng(len(data))
    io = memfold.model_io(data)
    inputs = []
    for _ in range(count):
        drawn = []
        for size, dtype in zip(map(len, memfold.default_inputs(data)), io["input_dtypes"]):
            if dtype == "f32":
                drawn.append(rng.uniform(-3, 3, size // 4).astype(np.float32).tobytes())
            else:
                drawn.append(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
        inputs.append(drawn)
    return inputs


def checked(file):
    """Whether memfold runs `file` as TFLM does: every tensor and its plans inside TFLM."""
    path = os.path.join(FOLDER, file)
    data = open(path, "rb").read()
    if not tflm.runs(data):
        return False
    if file in GAPS:
        with pytest.raises(ValueError, match=GAPS[file].replace("(", r"\(").replace(")", r"\)")):
            memfold.values(data)
        return False
    for inputs in [None, *random_inputs(data)]:
        compared, differences = tflm.compare_values(path, inputs)
        assert differences == [], file
        assert compared >= 2
    for planner in ("greedy", "diagonal"):
        arena, head, identical = tflm.compare_plan(path, planner)
        assert identical and head == arena, (file, planner)
    return True


def test_every_converter_model_tflm_runs_memfold_runs_alike():
    results = {file: checked(file) for file, _, _ in FILES}
    assert sum(results.values()) >= 100  # of 153 files
    # The converter column: the forms in which each TFLite operator was checked.
    forms = {}
    for file, form, builtins in FILES:
        for builtin in builtins if results[file] else []:
            forms.setdefault(builtin, set()).add(form)
    table = json.loads(subprocess.run([MEMFOLD, "ops", "--json"], capture_output=True, text=True,
                                      check=True).stdout)["operators"]
    claimed = {row["tflite"]: set(row["converter"]) for row in table if row["converter"]}
    assert claimed == forms


def test_the_manifest_names_the_operators_memfold_reads():
    """The manifest's operators are the files' (each maps to the registry op memfold reads)."""
    table = json.loads(subprocess.run([MEMFOLD, "ops", "--json"], capture_output=True, text=True,
                                      check=True).stdout)["operators"]
    op_of = {row["tflite"]: row["op"] or f"tflite:{row['tflite']}" for row in table}
    for file, _, builtins in FILES:
        inspected = json.loads(subprocess.run(
            [MEMFOLD, "inspect", os.path.join(FOLDER, file), "--json"], capture_output=True,
            text=True, check=True).stdout)
        assert {op["op"] for op in inspected["ops"]} == {op_of[b] for b in builtins}, file

"""memfold.plan / run / compile: the library's one entry point, from Python, on a real
.tflite file (MLCommons Tiny's keyword-spotting model), its bytes and a zoo model.

Checks the planned program against TensorFlow Lite Micro's own figures (the shared reference:
its greedy head size, its outputs' sha256), that a checked run compares every read and that
the compiled tree runs on the emulated Cortex-M4 with the host's outputs."""
import json
import os
import shutil
import tempfile

import pytest

import memfold

SHARED = os.environ.get("MEMFOLD_SHARED_DIR",
                        os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared"))
KWS = os.path.join(SHARED, "models", "mlcommons-tiny", "kws_ref_model.tflite")


REFERENCE = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden",
                         "tflm_reference.json")  # scripts/tflm_reference.py


def tflm(model_file):
    with open(REFERENCE) as f:
        return json.load(f)["models"][model_file]


def reference_models():
    with open(REFERENCE) as f:
        models = json.load(f)["models"]
    paths = {}
    for root, _, files in os.walk(os.path.join(SHARED, "models")):
        paths.update({name: os.path.join(root, name) for name in files})
    return [(name, paths[name]) for name, m in sorted(models.items())
            if m["ok"] and name in paths]


@pytest.mark.parametrize("name,path", reference_models(), ids=lambda v: str(v).split("/")[-1])
def test_every_shared_model_plans_like_tflm_and_runs_to_its_outputs(name, path):
    """The converter's real files: explicit PADs, QUANTIZE at the input, float and int8."""
    expected = tflm(name)
    assert memfold.plan(path, planner="greedy").arena_bytes == expected["head_bytes"]
    run = memfold.run(path, planner="diagonal")
    assert run["identical_to_unplanned"], run["first_difference"]
    assert [o["sha256"] for o in run["outputs"]] == [o["sha256"] for o in expected["outputs"]]


def test_greedy_plan_is_tflms_and_runs_to_tflms_outputs():
    program = memfold.plan(KWS, planner="greedy")
    assert program.arena_bytes == tflm("kws_ref_model.tflite")["head_bytes"]
    assert program.lower_bound_bytes <= program.arena_bytes
    # every buffer is inside the arena and no two live ones overlap (what the verifier proved)
    buffers = program.buffers
    assert buffers and all(b["offset"] + b["bytes"] <= program.arena_bytes for b in buffers)
    for a in buffers:
        for b in buffers:
            if a is b or a["last"] < b["first"] or b["last"] < a["first"]:
                continue
            assert a["offset"] + a["bytes"] <= b["offset"] or b["offset"] + b["bytes"] <= a["offset"]
    run = program.run()
    assert run["identical_to_unplanned"] and run["first_difference"] is None
    assert run["values_checked"] > len(buffers)
    expected = tflm("kws_ref_model.tflite")["outputs"][0]
    assert run["outputs"][0]["sha256"] == expected["sha256"]
    assert list(run["outputs"][0]["shape"]) == expected["shape"]


def test_best_rewrites_and_keeps_every_decision():
    greedy = memfold.plan(KWS, planner="greedy")
    best = memfold.plan(KWS, planner="best")
    assert best.arena_bytes < greedy.arena_bytes
    steps = best.steps
    assert [s["step"] for s in steps][0] == "greedy"
    assert steps[0]["arena_bytes"] == greedy.arena_bytes
    assert min(s["arena_bytes"] for s in steps) == best.arena_bytes
    assert memfold.run(KWS, planner="best")["identical_to_unplanned"]
    # balanced: within 5 % of the smallest arena, with less extra work on KWS
    balanced = memfold.plan(KWS, planner="best", objective="balanced")
    assert best.arena_bytes <= balanced.arena_bytes <= best.arena_bytes * 1.05
    with pytest.raises(ValueError, match="objective"):
        memfold.plan(KWS, planner="best", objective="fastest")


def test_sources_bytes_zoo_and_custom_inputs():
    with open(KWS, "rb") as f:
        data = f.read()
    from_bytes = memfold.plan(data, planner="diagonal")
    assert from_bytes.arena_bytes == memfold.plan(KWS, planner="diagonal").arena_bytes
    zoo = memfold.run("zoo:mobilenet_v2", planner="diagonal")
    assert zoo["identical_to_unplanned"]
    # other inputs give other outputs, still identical to the unplanned run
    program = memfold.plan(KWS, planner="diagonal")
    size = 1
    default = program.run()["outputs"][0]["sha256"]
    n = 49 * 10  # kws_ref_model: one int8 input of 1x49x10x1
    other = program.run([bytes((k * 37) % 256 for k in range(n * size))])
    assert other["identical_to_unplanned"]
    assert other["outputs"][0]["sha256"] != default


def test_plan_written_into_the_tflite_file_is_what_tflm_would_load():
    diagonal = memfold.plan(KWS, planner="diagonal")
    planned = memfold.tflite_with_plan(KWS, planner="diagonal")
    # the file's own offline plan, read back and verified, is memfold's plan
    offline = memfold.plan(planned, planner="offline")
    assert offline.arena_bytes == diagonal.arena_bytes
    assert [b["offset"] for b in offline.buffers] == [b["offset"] for b in diagonal.buffers]
    assert offline.run()["identical_to_unplanned"]
    with pytest.raises(ValueError, match="zoo models have no file"):
        memfold.tflite_with_plan("zoo:mobilenet_v2")


def test_bad_input_is_a_value_error_not_a_crash():
    with pytest.raises(ValueError, match="not-there.tflite"):
        memfold.plan("not-there.tflite")
    with pytest.raises(ValueError, match="planner"):
        memfold.plan(KWS, planner="nonsense")
    with pytest.raises(ValueError):
        memfold.plan(b"\x00" * 64)
    with pytest.raises(ValueError, match="bytes"):
        memfold.plan(KWS).run([b"\x00" * 3])
    assert "best" in memfold.planners() and "greedy" in memfold.planners()
    out = tempfile.mkdtemp(prefix="memfold-py-refused-")
    try:
        with pytest.raises(ValueError, match="B of flash"):  # 16.9 MB of weights on a 4 MB board
            memfold.compile("zoo:mobilenet_v1", out)
        assert os.listdir(out) == []  # nothing written for a program refused
    finally:
        shutil.rmtree(out, ignore_errors=True)


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None or
                    shutil.which("qemu-system-arm") is None,
                    reason="the Cortex-M toolchain and QEMU are installed by make deps")
def test_compiled_tree_runs_on_the_board_with_the_hosts_outputs():
    out = tempfile.mkdtemp(prefix="memfold-py-compile-")
    try:
        result = memfold.compile(KWS, out, planner="diagonal", name="kws", run=True)
        assert result["identical_to_host"]
        assert result["ram_bytes"] >= result["arena_bytes"]
        assert result["outputs"][0]["sha256"] == tflm("kws_ref_model.tflite")["outputs"][0]["sha256"]
        assert any(f.endswith("kws.cc") for f in result["files"])
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_streamed_plan_compiles_with_an_input_source():
    out = tempfile.mkdtemp(prefix="memfold-py-streamed-")
    try:
        memfold.plan(KWS, planner="best", stream_input=True).compile(out, name="kws_streamed")
        with open(os.path.join(out, "model", "kws_streamed.h")) as f:
            header = f.read()
        assert "typedef struct memfold_input_source" in header
        assert "memfold_kws_streamed_invoke_from(const memfold_input_source* source" in header
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_pareto_curve_is_monotone_and_every_plan_runs_identically():
    curve = memfold.pareto("zoo:mobilenet_v2,alpha=0.35,res=64,dtype=i8", max_recompute=0.3,
                           points=3)
    assert len(curve) >= 2
    for before, after in zip(curve, curve[1:]):
        assert after["arena_bytes"] < before["arena_bytes"]
        assert after["recompute_fraction"] > before["recompute_fraction"]
    assert all(p["identical_to_unplanned"] and p["values_checked"] > 0 for p in curve)
    assert all(p["recompute_fraction"] <= 0.3 for p in curve)
    resident = memfold.plan("zoo:mobilenet_v2,alpha=0.35,res=64,dtype=i8", planner="best")
    assert curve[-1]["arena_bytes"] < resident.arena_bytes  # the input streamed, not held

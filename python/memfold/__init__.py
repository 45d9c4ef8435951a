"""memfold: memory planning for neural networks, from Python.

Inference: one call plans any model source (a .tflite path or the file's bytes, or
"zoo:NAME") into one verified, immutable program; the program runs checked against an
unplanned run (every read compared) and compiles to a bare-metal tree for a micro-controller.

    program = memfold.plan("model.tflite", planner="best")
    program.arena_bytes, program.buffers, program.steps
    memfold.run("model.tflite", planner="diagonal")["identical_to_unplanned"]
    memfold.compile("model.tflite", "out/", planner="diagonal", run=True)["ram_bytes"]
    open("planned.tflite", "wb").write(memfold.tflite_with_plan("model.tflite"))  # for TFLM
    memfold.values("model.tflite")[k]["data"]  # tensor k of one unplanned run
    memfold.pareto("model.tflite", max_recompute=1.0)  # arena against extra work, checked

Training: memfold.torch makes Echo (recomputation chosen over the whole joint forward and
backward graph) the partitioner of PyTorch's AOTAutograd. The C++ core is memfold._memfold.
"""
from memfold._memfold import (Program, default_inputs, model_io, pareto, plan, planners,
                              tflite_with_plan, values, write_tflite)

__all__ = ["Program", "plan", "planners", "run", "compile", "pareto", "tflite_with_plan", "values",
           "default_inputs", "model_io", "write_tflite"]


def run(model, planner="greedy", inputs=None, **options):
    """Plans `model` and runs it in its arena and unplanned, compared at every read.

    `inputs`: None for the contract's default input, else one bytes-like object (a numpy
    array, say) per model input. Returns arena_bytes, identical_to_unplanned, values_checked,
    first_difference and outputs (name, dtype, shape, data, sha256)."""
    return plan(model, planner=planner, **options).run(inputs)


def compile(model, output, planner="greedy", name="model", target="cortex-m4", run=False,
            inputs=None, **options):
    """Plans `model` and writes its bare-metal C++ tree under `output`; with run=True builds
    it with the cross toolchain and runs it under QEMU, outputs compared with the host's."""
    return plan(model, planner=planner, **options).compile(output, name=name, target=target,
                                                           run=run, inputs=inputs)

"""memfold beside TensorFlow Lite Micro itself, through TFLM's Python interpreter
(the `tflite-micro` package: TFLM's own C++ allocator and reference kernels).

    report = memfold.tflm.compare("model.tflite")   # outputs, intermediates, offline plans
    memfold.tflm.reference("model.tflite")          # what TFLM plans and prints for it

compare() runs the model in TFLM keeping every tensor (TFLM's kPreserveAllTensors) and in
memfold, unplanned, from the same inputs, and compares every output and every intermediate
tensor TFLM holds, bit for bit; then it loads each planner's plan into TFLM as the file's
offline memory plan (OfflineMemoryAllocation), so that TFLM places every tensor at memfold's
offset, and compares that run's outputs with TFLM's own unplanned ones. TFLM's Python
interpreter allocates its arena itself, so it cannot be prefilled with a poison pattern: each
planned interpreter first runs a different input, which leaves that input's values in every
arena byte the plan uses, then (after TFLM's reset of its variable tensors, the state of LSTM
and SVDF models) the compared input. Every tensor but the outputs is unreadable
when TFLM follows a plan (GetTensor needs kPreserveAllTensors, which ignores the plan).

Cost: one TFLM run per model and input, two per plan; the plans' own (memfold.plan);
reference() adds a binary search of TFLM's smallest arena, one child process per probe. TFLM's
package is imported when first used, so `import memfold` does not need it.
"""
import contextlib
import hashlib
import os
import subprocess
import sys
import tempfile

import numpy as np

import memfold

_NUMPY_DTYPES = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "i32": np.int32,
                 "i64": np.int64, "f32": np.float32, "bool": np.bool_, "u32": np.uint32}
# Enough for every tensor of the models memfold tests, kept (kPreserveAllTensors); pages TFLM
# never touches cost nothing.
_ARENA_BYTES = 64 << 20


def _runtime():
    from tflite_micro.python.tflite_micro import runtime  # noqa: PLC0415 (optional dependency)
    return runtime


def _model_bytes(model):
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    if model.startswith("zoo:"):
        return memfold.write_tflite(model)
    with open(model, "rb") as f:
        return f.read()


def interpreter(model_bytes, preserve=False, arena_size=_ARENA_BYTES):
    """TFLM's interpreter of the file `model_bytes` (raises if TFLM refuses it)."""
    runtime = _runtime()
    config = (runtime.InterpreterConfig.kPreserveAllTensors if preserve
              else runtime.InterpreterConfig.kAllocationRecording)
    return runtime.Interpreter.from_bytes(model_bytes, arena_size=arena_size,
                                          intrepreter_config=config)


def invoke(interp, inputs, outputs):
    """Runs `interp` on `inputs` (one bytes-like object per model input); returns its first
    `outputs` outputs as numpy arrays."""
    for k, data in enumerate(inputs):
        detail = interp.get_input_details(k)
        interp.set_input(np.frombuffer(bytes(data), dtype=detail["dtype"])
                         .reshape(detail["shape"]), k)
    interp.invoke()
    return [np.array(interp.get_output(k)) for k in range(outputs)]


def _output_count(model_bytes):
    return len(memfold.model_io(model_bytes)["outputs"])


def runs(model_bytes):
    """Whether TFLM's interpreter runs the file on the contract's default input (it refuses some
    operators and types, and fails some at Invoke)."""
    try:
        with captured_stderr():
            interp = interpreter(model_bytes)
            invoke(interp, memfold.default_inputs(model_bytes), 0)
        return True
    except Exception:  # TFLM refuses the file: its message went to the captured stderr
        return False


def tensors(interp, count):
    """The first `count` tensors of subgraph 0 of a kPreserveAllTensors interpreter after a run,
    as numpy arrays (None where TFLM holds no data)."""
    out = []
    for index in range(count):
        try:
            out.append(np.array(interp.GetTensor(index, 0)["tensor_data"]))
        except Exception:  # no data: a tensor no operator uses
            out.append(None)
    return out


@contextlib.contextmanager
def captured_stderr():
    """Captures what C++ code prints to file descriptor 2 (TFLM's MicroPrintf)."""
    with tempfile.TemporaryFile(mode="w+") as sink:
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        text = []
        try:
            yield text
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            text.append(sink.read())


def allocations(model_bytes):
    """TFLM's recording allocator's figures for the file: head (the planned tensors and scratch
    buffers), tail (persistent) and total bytes."""
    interp = interpreter(model_bytes)
    with captured_stderr() as text:
        interp.print_allocations()
    figures = {}
    for line in text[0].splitlines():
        words = line.split()
        if "Arena allocation" in line and len(words) >= 6:
            figures[words[3]] = int(words[4])
    return figures


_PROBE = """
import sys
from tflite_micro.python.tflite_micro import runtime
runtime.Interpreter.from_bytes(sys.stdin.buffer.read(), arena_size=int(sys.argv[1]))
"""


def _allocates(model_bytes, arena_size):
    """Whether TFLM's interpreter allocates the model in `arena_size` bytes, asked in a child
    process: TFLM's interpreter crashes in some arenas just large enough (seen on
    keyword_scrambled.tflite, whose SVDF state is reset when the interpreter starts)."""
    probe = subprocess.run([sys.executable, "-c", _PROBE, str(arena_size)], input=model_bytes,
                           capture_output=True, check=False)
    return probe.returncode == 0


def min_arena_bytes(model_bytes, used):
    """The smallest arena (8-byte steps) in which TFLM's interpreter allocates the model, `used`
    the recording allocator's total: searched from half of it to its double."""
    low, high = used // 2 // 8 * 8, used * 2  # low fails, high succeeds
    while high - low > 8:
        middle = (low + high) // 2 // 8 * 8
        if _allocates(model_bytes, middle):
            high = middle
        else:
            low = middle
    return high


def _output_record(name, array):
    data = array.tobytes()
    return {"name": name, "dtype": array.dtype.name.upper(), "shape": list(array.shape),
            "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "values": array.flatten()[:16].tolist()}


def reference(model, search_min_arena=True):
    """What TFLM plans and computes for `model` from the contract's default input: a record of
    tests/golden/tflm_reference.json (scripts/tflm_reference.py writes them); without
    min_arena_bytes unless `search_min_arena`."""
    data = _model_bytes(model)
    failure = None
    with captured_stderr() as printed:
        try:
            interp = interpreter(data)
            outputs = invoke(interp, memfold.default_inputs(data), _output_count(data))
        except Exception as error:  # TFLM refuses the model: that is the record
            failure = str(error)
    if failure is not None:
        return {"ok": False, "error": " ".join((printed[0] + " " + failure).split())}
    figures = allocations(data)
    names = memfold.model_io(data)["output_names"]
    record = {"ok": True, "head_bytes": figures["head"], "arena_used_bytes": figures["total"],
              "outputs": [_output_record(n, a) for n, a in zip(names, outputs)]}
    if search_min_arena:
        record["min_arena_bytes"] = min_arena_bytes(data, figures["total"])
    return record


def compare_values(model, inputs=None):
    """memfold's unplanned run against TFLM's, every tensor TFLM holds. Returns (compared,
    differences), where differences lists (tensor index, name) of tensors that differ."""
    data = _model_bytes(model)
    inputs = memfold.default_inputs(data) if inputs is None else inputs
    ours = memfold.values(data, inputs)
    interp = interpreter(data, preserve=True)
    invoke(interp, inputs, 0)
    compared, differences = 0, []
    for index, (mine, theirs) in enumerate(zip(ours, tensors(interp, len(ours)))):
        if mine is None or theirs is None:
            continue
        compared += 1
        if theirs.tobytes() != mine["data"]:
            differences.append((index, mine["name"]))
    return compared, differences


def _other_inputs(inputs):
    """Inputs of the same sizes with other bytes, to fill the arena before the compared run."""
    return [bytes((b * 37 + 11) % 256 for b in bytes(x)) for x in inputs]


def compare_plan(path, planner, inputs=None, **options):
    """The .tflite file at `path` with memfold's `planner` plan (and best's `options`) as its
    offline plan, run in TFLM after a different input. Returns (memfold's arena bytes as read
    back from the file, TFLM's head bytes, identical): identical when the outputs equal TFLM's
    unplanned outputs bit for bit."""
    data = _model_bytes(path)
    inputs = memfold.default_inputs(data) if inputs is None else inputs
    outputs = _output_count(data)
    expected = invoke(interpreter(data), inputs, outputs)
    planned_file = memfold.tflite_with_plan(path, planner, **options)
    interp = interpreter(planned_file)
    invoke(interp, _other_inputs(inputs), outputs)
    interp.reset()  # variable tensors (LSTM state) back to their start; the arena keeps its bytes
    got = invoke(interp, inputs, outputs)
    same = all(a.tobytes() == b.tobytes() for a, b in zip(expected, got))
    arena = memfold.plan(planned_file, planner="offline").arena_bytes
    return arena, allocations(planned_file)["head"], same

"""ONNX models exported from PyTorch run in memfold's planned arena and in ONNX Runtime from the
same input, and agree; the planned run equals memfold's unplanned run read by read.

Tolerance: float32 results differ from ONNX Runtime's only by summation order (its MLAS
kernels block and vectorise the dot products; memfold's follow TFLite's loops) and by batch
norm folded into a scale and shift at import, so each output is compared within a few float32
roundings of its magnitude: |memfold - ort| <= 1e-5 * max(1, max |ort|)."""
import json
import os
import subprocess

import numpy as np
import onnxruntime as ort
import pytest
import torch

import memfold
import onnx_models

MEMFOLD = os.environ.get("MEMFOLD_BINARY", "memfold")


def _cli(*args):
    done = subprocess.run([MEMFOLD, *map(str, args)], capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def _ort_outputs(path, x):
    """ONNX Runtime's outputs with every node run as the file writes it (ONNX's semantics). Its
    graph optimisations fuse QDQ chains into integer kernels whose results depend on the CPU
    (x86 without VNNI multiplies u8 by s8 in pairs that can saturate): on a 2-core AVX2 machine
    they moved QDQ MobileNet v2's outputs by 33 steps and the transformer's by 36."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})


def _memfold_outputs(result, reference):
    return [np.frombuffer(o["data"], dtype=r.dtype).reshape(r.shape)
            for o, r in zip(result["outputs"], reference)]


def _exported(name, tmp_path, quantized, fmt="QDQ"):
    """The model exported to ONNX in tmp_path (statically quantised in `fmt` when `quantized`):
    (the float export's path, the path of the model to test, its input)."""
    float_path = tmp_path / f"{name}.onnx"
    x = onnx_models.export(name, float_path).numpy()
    if not quantized:
        return float_path, float_path, x
    path = tmp_path / f"{name}_{fmt}.onnx"
    onnx_models.quantize(float_path, path, x, fmt)
    return float_path, path, x


def _check_against_ort(path, x, planner):
    reference = _ort_outputs(path, x)
    result = memfold.run(str(path), planner=planner, inputs=[x.tobytes()])
    assert result["identical_to_unplanned"], result["first_difference"]
    assert result["values_checked"] > 0
    outputs = _memfold_outputs(result, reference)
    assert [list(o.shape) for o in outputs] == [list(o["shape"]) for o in result["outputs"]]
    for got, want in zip(outputs, reference):
        scale = max(1.0, float(np.abs(want).max()))
        assert np.abs(got - want).max() <= 1e-5 * scale
    return result


@pytest.mark.parametrize("name", sorted(onnx_models.MODELS))
def test_exported_model_matches_onnx_runtime(name, tmp_path):
    path = tmp_path / f"{name}.onnx"
    x = onnx_models.export(name, path).numpy()
    result = _check_against_ort(path, x, "best")
    naive = memfold.plan(str(path), planner="naive").arena_bytes
    assert result["arena_bytes"] < naive


@pytest.mark.parametrize("name,dynamo,opset", [
    ("resnet", False, 13), ("transformer", False, 14), ("unet", False, 17), ("gru", True, 18),
    ("recurrent", False, 14), ("mobilenet_v2", True, 21)])
def test_exporters_and_opsets_match_onnx_runtime(name, dynamo, opset, tmp_path):
    # Opsets 13-21 from both of PyTorch's exporters (the default export above is opset 20).
    # The TorchScript exporter leaves shape arithmetic (Shape, Gather, Concat, Mod) in the
    # graph; memfold folds it at import.
    path = tmp_path / f"{name}.onnx"
    x = onnx_models.export(name, path, dynamo=dynamo, opset=opset).numpy()
    _check_against_ort(path, x, "diagonal")


def test_window_layout_costs_no_transpose_inside_the_network(tmp_path):
    # Convolutions, pools, batch norm, residual adds and the global pool all stay channels-last:
    # the only transpose is the one of the NCHW input.
    path = tmp_path / "resnet.onnx"
    onnx_models.export("resnet", path)
    code, out, err = _cli("inspect", path, "--json")
    assert code == 0, err
    histogram = json.loads(out)["op_histogram"]
    assert histogram.get("transpose") == 1
    assert histogram["conv2d"] == 9 and "relu" not in histogram  # fused into the convolutions and adds


CORPUS = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fuzz_corpus", "onnx")


@pytest.mark.parametrize("seed", sorted(f for f in os.listdir(CORPUS)
                                         if f.endswith(".onnx") and f != "opaque.onnx"))
def test_written_model_matches_onnx_runtime(seed):
    # Models written with onnx.helper (scripts/onnx_fuzz_seeds.py): ConvTranspose, Resize, GRU,
    # depthwise Conv, Clip, BatchNormalization and shape arithmetic as exporters rarely write them.
    path = os.path.join(CORPUS, seed)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    shape = session.get_inputs()[0].shape
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    _check_against_ort(path, x, "best")


def test_unknown_operator_is_named_and_planned(tmp_path):
    path = os.path.join(CORPUS, "opaque.onnx")
    code, out, err = _cli("inspect", path, "--json")
    assert code == 0, err
    assert json.loads(out)["op_histogram"]["onnx:Mystery"] == 1
    code, out, err = _cli("plan", path, "--planner", "diagonal", "--json")
    assert code == 0, err
    assert json.loads(out)["verified"]
    code, _, err = _cli("run", path)
    assert code == 2 and "onnx:Mystery" in err and "\n" not in err.strip()


def test_qdq_relu_after_transposed_convolution_is_applied(tmp_path):
    # DequantizeLinear -> ConvTranspose -> Relu -> QuantizeLinear whose zero point leaves room
    # for negative values: the Relu folds into the int8 transposed convolution, which must
    # apply it (the output's range alone would not clamp).
    from onnx import TensorProto, helper, numpy_helper
    import onnx
    rng = np.random.default_rng(3)
    consts = [numpy_helper.from_array(np.array(s, np.float32), n)
              for n, s in (("xs", 0.02), ("ys", 0.05))]
    consts += [numpy_helper.from_array(np.array(0, np.int8), "zp"),
               numpy_helper.from_array(rng.integers(-100, 100, (3, 4, 3, 3)).astype(np.int8), "wq"),
               numpy_helper.from_array(np.array(0.01, np.float32), "ws")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "zp"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "zp"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "zp"], ["wd"]),
             helper.make_node("ConvTranspose", ["xd", "wd"], ["c"], strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "ys", "zp"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "zp"], ["y"])]
    info = helper.make_tensor_value_info
    graph = helper.make_graph(nodes, "qdq_relu", [info("x", TensorProto.FLOAT, [1, 3, 5, 5])],
                              [info("y", TensorProto.FLOAT, [1, 4, 9, 9])], consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "qdq_relu.onnx"
    onnx.save(model, str(path))
    x = rng.standard_normal((1, 3, 5, 5)).astype(np.float32)
    want = _ort_outputs(path, x)[0]
    assert want.min() == 0 and want.max() > 0
    result = memfold.run(str(path), planner="best", inputs=[x.tobytes()])
    assert result["identical_to_unplanned"], result["first_difference"]
    got = _memfold_outputs(result, [want])[0]
    assert got.min() >= 0 and np.abs(got - want).max() <= 0.05 * (1 + 1e-5)


def test_one_dimensional_window_memfold_cannot_run_stays_opaque_with_its_shapes(tmp_path):
    # A grouped ConvTranspose1d (no kernel for it) is lifted to 2-D like any 1-D window; the
    # importer leaves it opaque, with the shapes the file states restated for the 4-D form, and
    # a MaxPool1d whose indices are read is left 1-D: both plan, and `run` names what it lacks.
    from onnx import TensorProto, helper, numpy_helper
    import onnx
    weight = numpy_helper.from_array(np.ones((4, 1, 3), np.float32), "w")
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["c"], group=4, strides=[2]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p", "i"], kernel_shape=[2], strides=[2])]
    info = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes, "opaque_1d", [info("x", TensorProto.FLOAT, [1, 4, 8])],
        [info("p", TensorProto.FLOAT, [1, 4, 8]), info("i", TensorProto.INT64, [1, 4, 8])],
        [weight], value_info=[info("c", TensorProto.FLOAT, [1, 4, 17]),
                              info("r", TensorProto.FLOAT, [1, 4, 17])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "opaque_1d.onnx"
    onnx.save(model, str(path))
    code, out, err = _cli("inspect", path, "--json")
    assert code == 0, err
    histogram = json.loads(out)["op_histogram"]
    assert histogram["onnx:ConvTranspose"] == 1 and histogram["onnx:MaxPool"] == 1
    code, out, err = _cli("plan", path, "--planner", "diagonal", "--json")
    assert code == 0 and json.loads(out)["verified"], err
    code, _, err = _cli("run", path)
    assert code == 2 and "onnx:ConvTranspose" in err


@pytest.mark.parametrize("name,quantized", [("mobilenet_v2", True), ("transformer", False)])
def test_export_runs_on_the_emulated_cortex_m4(name, quantized, tmp_path):
    # PyTorch -> ONNX (-> ONNX Runtime's static quantiser) -> memfold compile: the kernels on
    # the board, outputs equal to the host's (int8), or close to them (float32: the softmax's
    # expf is newlib's there, docs/device.md, and the transformer carries its last-bit
    # differences through layer norms to outputs near zero: 128 ulp, 5e-7), and to ONNX
    # Runtime's within the tolerances above.
    _, path, x = _exported(name, tmp_path, quantized)
    result = memfold.compile(str(path), str(tmp_path / "device"), planner="best", name=name,
                             run=True, inputs=[x.tobytes()])
    if quantized:
        assert result["identical_to_host"]
    assert result["arena_bytes"] <= result["ram_bytes"] <= result["arena_bytes"] + 16384
    reference = _ort_outputs(path, x)
    got = _memfold_outputs(result, reference)[0]
    step = _output_scale(path) if quantized else 1e-5 * max(1.0, float(np.abs(reference[0]).max()))
    assert np.abs(got - reference[0]).max() <= step * (1 + 1e-5)
    host = memfold.run(str(path), planner="best", inputs=[x.tobytes()])
    on_host = _memfold_outputs(host, reference)[0]
    assert np.abs(got - on_host).max() <= 1e-6 * max(1.0, float(np.abs(on_host).max()))


def _output_scale(path):
    """The scale of the DequantizeLinear that makes the graph's first output, or None."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(str(path))
    constants = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    out = model.graph.output[0].name
    producer = next(n for n in model.graph.node if out in n.output)
    if producer.op_type != "DequantizeLinear":
        return None
    return float(constants[producer.input[1]])


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
@pytest.mark.parametrize("name", sorted(onnx_models.MODELS))
def test_statically_quantized_model_matches_onnx_runtime(name, fmt, tmp_path):
    # ONNX Runtime's quantiser, both forms. QDQ: memfold folds each DequantizeLinear -> op ->
    # QuantizeLinear into the op's int8 kernel; QOperator: QLinearConv, QLinearMatMul and
    # com.microsoft's QGemm, QLinearAdd, QLinearConcat, ... map to the same kernels. The
    # arithmetic is TFLite's (fixed-point requantisation, where ONNX Runtime multiplies in
    # float), and what has no int8 kernel runs float between a dequantize and a quantize.
    # Measured: MobileNet v2, the GRU and the LSTM/GRU stack equal ONNX Runtime's outputs
    # exactly, the ResNet within 1 step of the output's scale, the U-Net 2-3, the transformer 1-2.
    float_path, path, x = _exported(name, tmp_path, True, fmt)
    reference = _ort_outputs(path, x)
    result = memfold.run(str(path), planner="best", inputs=[x.tobytes()])
    assert result["identical_to_unplanned"], result["first_difference"]
    got = _memfold_outputs(result, reference)[0]
    step = _output_scale(path)
    assert step is not None
    assert np.abs(got - reference[0]).max() <= 4 * step * (1 + 1e-5)
    if name in ("mobilenet_v2", "resnet", "unet"):  # int8 feature maps: a smaller arena
        assert result["arena_bytes"] < memfold.plan(str(float_path), planner="best").arena_bytes


@pytest.mark.parametrize("name,quantized", [("resnet", True), ("mobilenet_v2", False),
                                            ("keyword_spotter", True)])
def test_onnx_model_reaches_tflm(name, quantized, tmp_path):
    # `memfold inspect model.onnx --write-tflite OUT`: the converted graph as a TFLite file
    # (ONNX's symmetric pads before strided windows written as PAD / PADV2, as the TFLite
    # converter writes them). TFLM's own interpreter runs it: every tensor it holds equals
    # memfold's, and with memfold's diagonal plan as the file's offline plan its outputs are
    # unchanged.
    import memfold.tflm
    _, path, x = _exported(name, tmp_path, quantized)
    tflite = tmp_path / f"{name}.tflite"
    code, _, err = _cli("inspect", path, "--write-tflite", tflite)
    assert code == 0, err
    compared, differences = memfold.tflm.compare_values(str(tflite), [x.tobytes()])
    assert compared > 10 and differences == []
    arena, _, identical = memfold.tflm.compare_plan(str(tflite), "diagonal", [x.tobytes()])
    assert identical and arena > 0
    reference = _ort_outputs(path, x)
    ours = memfold.run(str(tflite), inputs=[x.tobytes()])
    assert ours["outputs"][0]["data"] == memfold.run(str(path), inputs=[x.tobytes()])["outputs"][0]["data"]
    assert np.frombuffer(ours["outputs"][0]["data"], np.float32).shape == (reference[0].size,)


def _run_hwc_against_ort(program, path, x, quantized):
    """Runs an --input-layout nhwc program checked on the HWC copy of NCHW image `x`; its
    output equals ONNX Runtime's on `x` (within one output step when int8). The result."""
    hwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    result = program.run([hwc.tobytes()])
    assert result["identical_to_unplanned"], result["first_difference"]
    want = _ort_outputs(path, x)[0]
    got = _memfold_outputs(result, [want])[0]
    step = _output_scale(path) if quantized else 1e-5 * max(1.0, float(np.abs(want).max()))
    assert np.abs(got - want).max() <= step * (1 + 1e-5)
    return result


@pytest.mark.parametrize("name,quantized",
                         [("mobilenet_v2", False), ("mobilenet_v2", True), ("resnet", True)])
def test_nhwc_input_layout_streams_a_pytorch_export(name, quantized, tmp_path):
    # A PyTorch export takes NCHW images and transposes them first; that transpose holds the
    # image and its copy whole, so streaming the input gains nothing. input_layout="nhwc"
    # takes HWC images, as a camera delivers them: the transpose goes, the first layers stream
    # and split, and the arena shrinks (MobileNet v2 float 94,208 -> 38,400 B at 10 %; int8
    # 24,576 -> 9,408 B, its float head, dequantize and mean, in channel groups; the int8
    # ResNet 24,576 -> 8,704 B). The plan runs checked, and its outputs equal ONNX Runtime's
    # on the same image in NCHW.
    _, path, x = _exported(name, tmp_path, quantized)
    options = dict(planner="best", stream_input=True, max_recompute=0.1)
    as_declared = memfold.plan(str(path), **options)
    program = memfold.plan(str(path), input_layout="nhwc", **options)
    assert program.arena_bytes * 2 < as_declared.arena_bytes
    result = _run_hwc_against_ort(program, path, x, quantized)
    # The layout is the model's interface now: an NCHW image gives other outputs.
    assert program.run([x.tobytes()])["outputs"][0]["data"] != result["outputs"][0]["data"]


def test_nhwc_input_layout_names_why_it_does_not_apply(tmp_path):
    # A TFLite model takes NHWC already: the option is an error that says so, not a no-op.
    code, _, err = _cli("plan", "zoo:mobilenet_v1,alpha=0.25,res=64", "--input-layout", "nhwc")
    assert code == 2
    assert "TFLite models take NHWC already" in err and "not transposed" in err
    with pytest.raises(Exception, match="NCHW-to-NHWC"):
        memfold.plan("zoo:mobilenet_v1,alpha=0.25,res=64", input_layout="nhwc")
    with pytest.raises(Exception, match="choose model or nhwc"):
        memfold.plan("zoo:mobilenet_v1,alpha=0.25,res=64", input_layout="nchw")


class _MeanHead(torch.nn.Module):
    """A head as users write it: a wide 1x1 convolution, then `x.mean((2, 3))` (ReduceMean
    without keepdims) into the classifier."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(),
                                      nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                                      nn.Conv2d(32, 256, 1), nn.ReLU())
        self.fc = nn.Linear(256, 10)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))


@pytest.mark.parametrize("quantized", [False, True])
def test_spatial_mean_head_reduces_in_place_and_in_channel_groups(quantized, tmp_path):
    # The mean over H and W of a channels-last map leaves [N, C] in ONNX's order, so it needs
    # no transpose of the 16x16x256 map (the input's is the only one); and the head (the 1x1
    # convolution, the QDQ export's dequantize to float, the mean) runs in channel groups, so
    # neither the 65,536 B int8 map nor its 262,144 B float copy is ever whole: the streamed
    # arena is 10,800 B (int8) and 41,984 B (float). Checked, and equal to ONNX Runtime.
    torch.manual_seed(0)
    x = torch.randn(1, 3, 64, 64)
    path = tmp_path / "head.onnx"
    torch.onnx.export(_MeanHead().eval(), (x,), str(path), dynamo=True)
    x = x.numpy()
    if quantized:
        onnx_models.quantize(path, tmp_path / "head_qdq.onnx", x)
        path = tmp_path / "head_qdq.onnx"
    code, out, err = _cli("inspect", path, "--json")
    assert code == 0, err
    assert [op["op"] for op in json.loads(out)["ops"]].count("transpose") == 1
    program = memfold.plan(str(path), planner="best", stream_input=True, input_layout="nhwc")
    assert program.arena_bytes < 65536
    assert any("channel groups" in step["detail"] for step in program.steps)
    _run_hwc_against_ort(program, path, x, quantized)


class _MobileNetV3(torch.nn.Module):
    """MobileNet v3's pieces as users write them: hard-swish, SiLU and leaky ReLU activations,
    squeeze-and-excitation (a global mean, two 1x1 convolutions, hard-sigmoid, a broadcast
    multiply), residual adds, and `x.mean((2, 3))` into the classifier."""

    class _Block(torch.nn.Module):
        def __init__(self, cin, cout, stride, act):
            super().__init__()
            nn = torch.nn
            h = cin * 3
            self.expand = nn.Sequential(nn.Conv2d(cin, h, 1, bias=False), nn.BatchNorm2d(h), act(),
                                        nn.Conv2d(h, h, 3, stride, 1, groups=h, bias=False),
                                        nn.BatchNorm2d(h), act())
            self.squeeze, self.excite = nn.Conv2d(h, h // 4, 1), nn.Conv2d(h // 4, h, 1)
            self.project = nn.Sequential(nn.Conv2d(h, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            y = self.expand(x)
            w = torch.relu(self.squeeze(torch.nn.functional.adaptive_avg_pool2d(y, 1)))
            y = self.project(y * torch.nn.functional.hardsigmoid(self.excite(w)))
            return x + y if self.residual else y

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.Hardswish(),
                                      self._Block(16, 16, 1, nn.SiLU),
                                      self._Block(16, 24, 2, nn.Hardswish),
                                      self._Block(24, 24, 1, lambda: nn.LeakyReLU(0.1)),
                                      nn.Conv2d(24, 96, 1), nn.Hardswish())
        self.classifier = nn.Linear(96, 10)

    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))


def test_quantized_mobilenet_v3_runs_its_activations_in_int8(tmp_path):
    # ONNX Runtime's QDQ quantiser puts QuantizeLinear/DequantizeLinear around HardSwish,
    # LeakyRelu, Sigmoid (SiLU's), Mul (SiLU's and squeeze-and-excitation's broadcast) and ReduceMean:
    # each becomes memfold's int8 kernel (sigmoid's into TFLite's fixed 1/256 output, then
    # requantized into the file's), so the maps stay int8 instead of four times as large in
    # float. The plan runs checked; the outputs are ONNX Runtime's within two output steps,
    # and TFLM runs the model as memfold writes it.
    import memfold.tflm
    torch.manual_seed(0)
    model = _MobileNetV3().eval()
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_var.uniform_(0.5, 2.0)
    x = torch.randn(1, 3, 64, 64)
    float_path, path = tmp_path / "mnv3.onnx", tmp_path / "mnv3_qdq.onnx"
    torch.onnx.export(model, (x,), str(float_path), dynamo=True)
    x = x.numpy()
    onnx_models.quantize(float_path, path, x)
    code, out, err = _cli("inspect", path, "--json")
    assert code == 0, err
    graph = json.loads(out)
    values = {v["name"]: v for v in graph["values"]}
    float_maps = [op["op"] for op in graph["ops"]
                  if values[op["outputs"][0]]["dtype"] == "f32"
                  and np.prod(values[op["outputs"][0]]["shape"]) > 1024]
    # The head's hard-swish alone, which the quantiser leaves float (a mean follows).
    assert float_maps == ["dequantize", "hard_swish"]
    as_float = memfold.plan(str(float_path), planner="best")
    program = memfold.plan(str(path), planner="best")
    assert program.arena_bytes * 3 < as_float.arena_bytes
    result = program.run([x.tobytes()])
    assert result["identical_to_unplanned"], result["first_difference"]
    want = _ort_outputs(path, x)[0]
    got = _memfold_outputs(result, [want])[0]
    assert np.abs(got - want).max() <= 2 * _output_scale(path) * (1 + 1e-5)
    # Written as TFLite (LOGISTIC, QUANTIZE, HARD_SWISH, MUL, MEAN in int8), TFLM's own
    # interpreter holds every tensor equal to memfold's.
    tflite = tmp_path / "mnv3.tflite"
    code, _, err = _cli("inspect", path, "--write-tflite", tflite)
    assert code == 0, err
    compared, differences = memfold.tflm.compare_values(str(tflite), [x.tobytes()])
    assert compared > 50 and differences == []
    # The blocks split up to their squeeze-and-excitation (its mean needs the whole expanded
    # map, so the segment search cuts beside every operator no tile can run): 80,896 B against
    # 114,688 B unsplit; and so does the plan streamed from HWC rows.
    unsplit = memfold.plan(str(path), planner="diagonal")
    assert program.arena_bytes * 4 < unsplit.arena_bytes * 3
    streamed = memfold.plan(str(path), planner="best", stream_input=True, input_layout="nhwc")
    assert streamed.arena_bytes <= program.arena_bytes
    _run_hwc_against_ort(streamed, path, x, True)

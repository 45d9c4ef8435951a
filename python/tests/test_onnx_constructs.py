"""Layers and functions as PyTorch users write them, each in a tiny model exported by both of
PyTorch's exporters (they write different operators: the TorchScript exporter Erf for GELU,
Softplus and Tanh for Mish, Trilu for a causal mask; the dynamo exporter Gelu, Mish, ...) and
run by memfold in its planned arena, checked read by read against its unplanned run, and
against ONNX Runtime (every node as the file writes it) within a few float32 roundings."""
import json
import os
import subprocess

import numpy as np
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import memfold
import onnx
import onnx_models
from onnx import numpy_helper


class Construct(nn.Module):
    def __init__(self, forward, *layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.body = forward

    def forward(self, x):
        return self.body(self.layers, x)


# name -> (forward(layers, x), layers, input shape)
CONSTRUCTS = {
    "conv1d_batchnorm_maxpool": (lambda m, x: m[2](F.relu(m[1](m[0](x)))),
                                 [nn.Conv1d(8, 16, 3, padding=1), nn.BatchNorm1d(16),
                                  nn.MaxPool1d(2)], (1, 8, 32)),
    "conv1d_strided_dilated_avgpool": (lambda m, x: F.avg_pool1d(m[0](x), 3, 2, padding=1),
                                       [nn.Conv1d(4, 6, 5, stride=2, dilation=2, padding=4)],
                                       (1, 4, 40)),
    "conv_transpose_padded": (lambda m, x: m[1](m[0](x).flatten(2)),
                              [nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1,
                                                  output_padding=1),
                               nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1,
                                                  output_padding=1)], (1, 3, 5, 5)),
    "conv_transpose_relu": (lambda m, x: F.relu(m[0](x)),
                            [nn.ConvTranspose2d(3, 4, 4, stride=2, padding=1)], (1, 3, 6, 6)),
    "conv_transpose1d": (lambda m, x: m[0](x), [nn.ConvTranspose1d(4, 4, 4, stride=2, padding=1)],
                         (1, 4, 16)),
    "gelu_exact_and_tanh": (lambda m, x: F.gelu(m[0](x)) + F.gelu(x, approximate="tanh"),
                            [nn.Linear(8, 8)], (1, 4, 8)),
    "mish_softplus_softsign": (lambda m, x: F.mish(m[0](x)) + F.softplus(x) + F.softsign(x),
                               [nn.Linear(8, 8)], (1, 4, 8)),
    "selu_sign": (lambda m, x: F.selu(x) + torch.sign(x), [], (1, 4, 8)),
    "instance_and_group_norm": (lambda m, x: m[2](m[1](m[0](x))),
                                [nn.Conv2d(3, 8, 3), nn.InstanceNorm2d(8, affine=True),
                                 nn.GroupNorm(2, 8)], (1, 3, 12, 12)),
    "pixel_shuffle_unshuffle": (lambda m, x: F.pixel_unshuffle(F.pixel_shuffle(m[0](x), 2), 2),
                                [nn.Conv2d(3, 8, 3, padding=1)], (1, 3, 6, 6)),
    "normalize_logsumexp": (lambda m, x: F.normalize(x, dim=-1)  # exp(200 x) overflows float32
                            + torch.logsumexp(200 * x, -1, True) / 200
                            + torch.logsumexp(x, (1, 2)) + x.norm(p=1, dim=-1, keepdim=True),
                            [], (1, 4, 8)),
    "std_var": (lambda m, x: x.std(-1, keepdim=True) + x.var(1, keepdim=True), [], (1, 4, 8)),
    "argmax_cumsum": (lambda m, x: torch.cumsum(x, 1) + torch.argmax(x, -1, keepdim=True),
                      [], (1, 6, 4)),
    "einsum": (lambda m, x: torch.einsum("bqk,bkd->bqd", torch.einsum("bqd,bkd->bqk", x, x), x)
               + torch.einsum("bqd,ed->bqe", x, m[0].weight)
               + torch.einsum("bij->bj", x)[:, None, :], [nn.Linear(8, 8)], (1, 4, 8)),
    "causal_mask_repeat": (lambda m, x: torch.softmax(
        (x @ x.transpose(-1, -2)).masked_fill(
            torch.triu(torch.ones(6, 6, dtype=torch.bool), 1), float("-inf")), -1).repeat(1, 2, 1),
        [], (1, 6, 8)),
}


def _export(name, path, dynamo=True):
    forward, layers, shape = CONSTRUCTS[name]
    torch.manual_seed(0)
    model = Construct(forward, *layers).eval()
    x = torch.randn(*shape)
    torch.onnx.export(model, (x,), str(path), dynamo=dynamo, input_names=["x"],
                      **({} if dynamo else {"opset_version": 17}))
    return x.numpy()


def _run_both(path, x):
    """(memfold's outputs of its checked `best` run, ONNX Runtime's, every node as written)."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": x})
    result = memfold.run(str(path), planner="best", inputs=[x.tobytes()])
    assert result["identical_to_unplanned"], result["first_difference"]
    got = [np.frombuffer(o["data"], dtype=r.dtype).reshape(r.shape)
           for o, r in zip(result["outputs"], want)]
    return got, want


@pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])
@pytest.mark.parametrize("name", sorted(CONSTRUCTS))
def test_construct_matches_onnx_runtime(name, dynamo, tmp_path):
    path = tmp_path / f"{name}.onnx"
    x = _export(name, path, dynamo)
    for got, reference in zip(*_run_both(path, x)):
        scale = max(1.0, float(np.abs(reference).max()))
        assert np.abs(got - reference).max() <= 1e-5 * scale


@pytest.mark.parametrize("name", ["conv1d_batchnorm_maxpool", "conv_transpose_relu"])
def test_quantized_construct_runs_int8(name, tmp_path):
    # ONNX Runtime's QDQ quantiser: the lifted Conv1d and a ConvTranspose with its ReLU folded
    # in run on int8 kernels (one quantize in, one dequantize out) and agree with ONNX Runtime
    # within a step of the output's scale.
    float_path, path = tmp_path / f"{name}.onnx", tmp_path / f"{name}_qdq.onnx"
    x = _export(name, float_path)
    onnx_models.quantize(float_path, path, x)
    got, want = _run_both(path, x)
    done = subprocess.run([os.environ.get("MEMFOLD_BINARY", "memfold"), "inspect", str(path),
                           "--json"], capture_output=True, text=True, timeout=120)
    histogram = json.loads(done.stdout)["op_histogram"]
    assert histogram.get("quantize") == 1 and histogram.get("dequantize") == 1, histogram
    graph = onnx.load(str(path)).graph
    scale = next(numpy_helper.to_array(i) for i in graph.initializer
                 if i.name == graph.node[-1].input[1])
    assert np.abs(got[0] - want[0]).max() <= float(scale) * (1 + 1e-5)

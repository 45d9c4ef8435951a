"""memfold.torch's Echo partitioner against AOTAutograd's default partition: the backward pass
runs, outputs, gradients and batch-norm running statistics are bit-identical, fewer bytes cross
from forward to backward, unknown ops stay, random draws are never redrawn."""

import copy
import json
import os
import subprocess

import pytest
import torch
from torch import nn
from functorch.compile import aot_module, default_partition, make_boxed_func

import memfold.torch as mt
from models import MODELS, deepspeech2, nmt


def _keep(fx_module, _inputs):
    return make_boxed_func(fx_module)


class SavedBytes:
    """Wraps a partitioner and records the bytes its forward module saves for backward."""

    def __init__(self, partition):
        self.partition = partition
        self.saved = None
        self.saved_names = []

    def __call__(self, joint_module, joint_inputs):
        fwd, bwd = self.partition(joint_module, joint_inputs)
        n_saved = len([n for n in bwd.graph.nodes
                       if n.op == "placeholder" and not n.name.startswith("tangents")])
        outputs = next(n for n in fwd.graph.nodes if n.op == "output").args[0]
        saved = outputs[len(outputs) - n_saved:]
        self.saved_names = [n.name for n in saved]
        self.saved = sum(_nbytes(n) for n in saved if n.op != "placeholder")
        return fwd, bwd


def _views_an_input(node):
    """Whether the node's result is a view of a graph input (a parameter's transpose): it holds
    no storage of its own."""
    schema = getattr(node.target, "_schema", None)
    aliases = schema is not None and schema.returns and schema.returns[0].alias_info is not None
    source = node.args[0] if node.args else None
    while aliases and isinstance(source, torch.fx.Node) and source.op == "call_function":
        inner = getattr(source.target, "_schema", None)
        if inner is None or not inner.returns or inner.returns[0].alias_info is None:
            return False
        source = source.args[0]
    return bool(aliases) and isinstance(source, torch.fx.Node) and source.op == "placeholder"


def _nbytes(node):
    if _views_an_input(node):
        return 0
    meta = node.meta["tensor_meta"]
    return meta.shape.numel() * torch.empty((), dtype=meta.dtype).element_size()


def train_step(model, partition, inputs, seed=1):
    """One AOT step; returns (output, gradients, buffers) after it."""
    compiled = aot_module(model, fw_compiler=_keep, bw_compiler=_keep, partition_fn=partition)
    torch.manual_seed(seed)
    out = compiled(*inputs)
    out.float().pow(2).mean().backward()
    return (out.detach(), [p.grad for p in model.parameters()],
            [b.clone() for b in model.buffers()])


def identical(a, b):
    return len(a) == len(b) and all(
        (x is None and y is None) or (x is not None and y is not None and torch.equal(x, y))
        for x, y in zip(a, b))


def compare(model, inputs):
    """Trains a copy under each partition; returns the two SavedBytes and the Echo partitioner."""
    default, echo_partitioner = SavedBytes(default_partition), mt.EchoPartitioner()
    echo = SavedBytes(echo_partitioner)
    out_d, grads_d, bufs_d = train_step(copy.deepcopy(model), default, inputs)
    out_e, grads_e, bufs_e = train_step(copy.deepcopy(model), echo, inputs)
    assert torch.equal(out_d, out_e)
    assert identical(grads_d, grads_e)
    assert identical(bufs_d, bufs_e)
    return default, echo, echo_partitioner


# Each model once (tracing is the slow part): the partition is exact, batch-norm statistics
# move once, and the bytes saved stay under a bound: Echo's reductions on NMT (recomputed
# attention) and ResNet-18 (recomputed batch norm and ReLU), never more than the default.
# (DeepSpeech2 at 24 frames: its unrolled LSTMs make tracing the slow part of the suite.)
SIZED = dict(MODELS, deepspeech2=lambda: deepspeech2(frames=24))


@pytest.mark.parametrize("name,bound", [("nmt", 0.6), ("resnet18", 0.75), ("transformer", 1.0),
                                        ("deepspeech2", 1.0)])
def test_partition_is_exact_and_saves_less(name, bound):
    torch.manual_seed(0)
    model, inputs, _ = SIZED[name]()
    before = [b.clone() for b in model.buffers() if b.dtype.is_floating_point]
    default, echo, partitioner = compare(model, inputs)  # statistics equal the default's
    assert echo.saved <= bound * default.saved
    assert partitioner.last["chosen_strategy"] in ("echo", "mirror", "none")
    if bound < 1.0:
        assert partitioner.last["recomputed_nodes"] > 0
    if before:  # the copies trained; the statistics of a fresh step move (and only once)
        train_step(model, mt.EchoPartitioner(), inputs)
        after = [b for b in model.buffers() if b.dtype.is_floating_point]
        assert any(not torch.equal(x, y) for x, y in zip(before, after))


class Dropped(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.drop = nn.Dropout(0.3)
        self.fc2 = nn.Linear(256, 8)

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.fc1(x))))


def test_dropout_mask_is_saved_in_one_bit_and_never_redrawn():
    torch.manual_seed(0)
    model, x = Dropped(), torch.randn(32, 64)
    partitioner = mt.EchoPartitioner()
    fwd_graphs = []

    def spy(joint_module, joint_inputs):
        fwd, bwd = partitioner(joint_module, joint_inputs)
        fwd_graphs.append(fwd)
        bwd_targets = {str(n.target) for n in bwd.graph.nodes if n.op == "call_function"}
        assert not any("bernoulli" in t for t in bwd_targets)  # never redrawn
        return fwd, bwd

    default, echo = SavedBytes(default_partition), SavedBytes(spy)
    out_d, grads_d, _ = train_step(copy.deepcopy(model), default, (x,))
    out_e, grads_e, _ = train_step(copy.deepcopy(model), echo, (x,))
    assert torch.equal(out_d, out_e) and identical(grads_d, grads_e)
    # The draw crosses packed: one byte per eight elements of the [32, 256] mask.
    outputs = next(n for n in fwd_graphs[0].graph.nodes if n.op == "output").args[0]
    packed = [n for n in outputs if isinstance(n, torch.fx.Node) and
              n.meta.get("tensor_meta") is not None and
              n.meta["tensor_meta"].dtype is torch.uint8]
    assert [tuple(n.meta["tensor_meta"].shape) for n in packed] == [(32 * 256 // 8,)]
    assert echo.saved < default.saved
    assert "aten.bernoulli_.float" in partitioner.last["opaque_forward"]


class Erf(nn.Module):
    """erf is not in memfold's table: it must be kept, never recomputed, and reported."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return self.fc(torch.erf(self.fc(x)) * x)


def test_unknown_ops_are_kept_and_reported():
    torch.manual_seed(0)
    partitioner = mt.EchoPartitioner()
    default = SavedBytes(default_partition)
    model, x = Erf(), torch.randn(8, 16)
    out_d, grads_d, _ = train_step(copy.deepcopy(model), default, (x,))
    out_e, grads_e, _ = train_step(copy.deepcopy(model), partitioner, (x,))
    assert torch.equal(out_d, out_e) and identical(grads_d, grads_e)
    assert partitioner.last["opaque_forward"].get("aten.erf.default") == 1


class Spectrum(nn.Module):
    """Complex intermediates: memfold cannot plan complex64."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        z = torch.view_as_complex(self.fc(x).reshape(8, 8, 2))
        return torch.view_as_real(z * z).reshape(8, 16)


def test_a_graph_memfold_refuses_trains_with_the_default_partition():
    torch.manual_seed(0)
    model, x = Spectrum(), torch.randn(8, 16)
    partitioner = mt.EchoPartitioner()
    out_d, grads_d, _ = train_step(copy.deepcopy(model), default_partition, (x,))
    out_e, grads_e, _ = train_step(copy.deepcopy(model), partitioner, (x,))
    assert torch.equal(out_d, out_e) and identical(grads_d, grads_e)
    assert "complex64" in partitioner.last["refused"]


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


class WithCustomFunction(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return self.fc(Square.apply(torch.tanh(self.fc(x))))


def test_custom_autograd_function_still_trains():
    """memfold.torch.compile on a model with its own autograd.Function: same output and
    gradients as the default partition, bit for bit, and close to eager's."""
    torch.manual_seed(0)
    model, x = WithCustomFunction(), torch.randn(8, 16)
    compiled = copy.deepcopy(model)
    out = mt.compile(compiled)(x)
    out.pow(2).mean().backward()
    out_d, grads_d, _ = train_step(copy.deepcopy(model), default_partition, (x,))
    assert torch.equal(out.detach(), out_d)
    assert identical([p.grad for p in compiled.parameters()], grads_d)
    eager = copy.deepcopy(model)
    eager(x).pow(2).mean().backward()
    for p, q in zip(compiled.parameters(), eager.parameters()):
        assert torch.allclose(p.grad, q.grad, rtol=1e-5, atol=1e-6)


def test_export_is_read_by_the_cli(tmp_path):
    torch.manual_seed(0)
    model, inputs, _ = nmt(hidden=32, batch=4, vocab=64)
    path = tmp_path / "nmt.json"
    before = [b.clone() for b in model.buffers()]
    mt.export(model, inputs, str(path))
    assert identical(before, list(model.buffers()))  # the model's own state is untouched
    assert json.loads(path.read_text())["format"] == "memfold-joint-graph"
    binary = os.environ.get("MEMFOLD_BINARY")
    if not binary:
        pytest.skip("MEMFOLD_BINARY is set by ctest")
    run = subprocess.run([binary, "train", str(path), "--strategy", "echo", "--plan-only",
                          "--json"], capture_output=True, text=True, check=True)
    out = json.loads(run.stdout)
    assert out["strategy"] == "echo" and out["recomputed_nodes"] > 0
    assert out["echo_own_total_bytes"] <= out["total_bytes"] or out["chosen_strategy"] != "echo"
    refused = subprocess.run([binary, "train", str(path), "--steps", "1"], capture_output=True,
                             text=True)
    assert refused.returncode == 2 and "memfold.torch.compile" in refused.stderr

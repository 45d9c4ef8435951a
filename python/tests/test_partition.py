"""memfold.torch's partition in detail: dropout masks cross in one bit and are never re-drawn,
batch-norm statistics move once per step, operators of unknown cost are kept and reported,
a graph memfold refuses keeps PyTorch's partition, custom autograd functions still train, the
choice is never worse than PyTorch's own, explain() says what happened, and the joint graph
exported for the CLI is read there."""

import copy
import json
import logging
import os
import subprocess

import pytest
import torch
from torch import nn
from functorch.compile import default_partition

import memfold.torch as mt
from conftest import aot, identical, partitioned_run, train
from zoo import ZOO


class Dropped(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.drop, self.fc2 = nn.Linear(64, 256), nn.Dropout(0.3), nn.Linear(256, 8)

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.fc1(x))))


def test_dropout_masks_cross_in_one_bit_and_are_never_redrawn():
    torch.manual_seed(0)
    model, x = Dropped(), torch.randn(32, 64)
    partitioner = mt.EchoPartitioner(strategy="echo")
    assert identical(partitioned_run(model, partitioner, (x,), steps=3),
                     partitioned_run(model, default_partition, (x,), steps=3))
    report = partitioner.last
    assert report["chosen"] in ("echo", "mirror", "memfold")
    assert report["kept_forward"] == {"aten.native_dropout.default": 1}
    assert not any("dropout" in target and "backward" not in target
                   for _name, target in report["recomputed"])
    # The [32, 256] mask crosses as 1024 bytes (one bit each), not 8192 booleans.
    assert report["saved_bytes"][report["chosen"]] < report["saved_bytes"]["min-cut"]
    assert report["saved_bytes"]["default"] - report["saved_bytes"][report["chosen"]] >= 7168


def test_the_generator_advances_as_in_eager():
    """The backward pass draws nothing: after a step the generator is where eager leaves it
    (AOT's default partition re-runs dead dropout draws in its backward module)."""
    model, inputs, _ = ZOO["tabular_mlp"]()

    def state_after_step(runner):
        torch.manual_seed(1)
        runner(*inputs).float().pow(2).mean().backward()
        return torch.get_rng_state()

    eager = state_after_step(copy.deepcopy(model))
    assert torch.equal(state_after_step(aot(copy.deepcopy(model), mt.EchoPartitioner())), eager)


def test_batch_norm_statistics_move_exactly_once_per_step():
    model, inputs, _ = ZOO["resnet_cifar"]()
    before = [b.clone() for b in model.buffers()]
    echo = partitioned_run(model, mt.EchoPartitioner(), inputs, steps=2)
    assert identical(echo, partitioned_run(model, default_partition, inputs, steps=2))
    moved = [not torch.equal(a, b) for a, b in zip(before, echo[2])]
    assert all(moved)  # running means, variances and step counts of every batch norm


class Distances(nn.Module):
    """torch.cdist has no FLOP formula memfold knows: kept, never recomputed, reported."""

    def __init__(self):
        super().__init__()
        self.fc, self.out = nn.Linear(16, 16), nn.Linear(8, 4)

    def forward(self, x):
        return self.out(torch.tanh(torch.cdist(self.fc(x), x)))


def test_operators_of_unknown_cost_are_kept_and_reported_once(caplog):
    torch.manual_seed(0)
    model, x = Distances(), torch.randn(8, 16)
    partitioner = mt.EchoPartitioner()
    with caplog.at_level(logging.WARNING, logger="memfold.torch"):
        assert identical(partitioned_run(model, partitioner, (x,)),
                         partitioned_run(model, default_partition, (x,)))
    assert partitioner.last["unknown"] == {"aten._cdist_forward.default": 1}
    assert not any("cdist" in t for _n, t in partitioner.last["recomputed"])
    warned = [r for r in caplog.records if "_cdist_forward" in r.getMessage()]
    assert len(warned) <= 1  # once per process, whichever test met it first


class Spectrum(nn.Module):
    """Complex intermediates: memfold cannot plan complex64."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        z = torch.view_as_complex(self.fc(x).reshape(8, 8, 2))
        return torch.view_as_real(z * z).reshape(8, 16)


def test_a_graph_memfold_refuses_keeps_pytorchs_partition():
    torch.manual_seed(0)
    model, x = Spectrum(), torch.randn(8, 16)
    partitioner = mt.EchoPartitioner()
    assert identical(partitioned_run(model, partitioner, (x,)),
                     partitioned_run(model, default_partition, (x,)))
    assert "complex64" in partitioner.last["refused"]
    assert partitioner.last["chosen"] in ("default", "min-cut")


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


def test_custom_autograd_function_trains_like_eager():
    torch.manual_seed(0)
    model, x = WithCustomFunction(), torch.randn(8, 16)
    compiled_model = copy.deepcopy(model)
    got = train(compiled_model, mt.compile(compiled_model), (x,))
    assert identical(got, partitioned_run(model, default_partition, (x,)))
    eager = copy.deepcopy(model)
    expected = train(eager, eager, (x,))
    for a, b in zip(got[1], expected[1]):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6)


def test_explain_names_what_was_recomputed_and_what_blocked_it():
    model, inputs, _ = ZOO["resnet_cifar"]()
    explanation = mt.explain(model, *inputs)
    text = str(explanation)
    report = explanation.graphs[0]
    assert report["saved_bytes"][report["chosen"]] < report["saved_bytes"]["min-cut"]
    assert "relu" in text and "_native_batch_norm_legit.no_stats" in text
    assert "saved, compute-heavy" in text and "convolution" in text
    assert "x of what is kept" in text


def test_a_forced_strategy_is_kept_and_exact():
    model, inputs, _ = ZOO["gated_mlp"]()
    expected = partitioned_run(model, default_partition, inputs)
    for strategy in ("default", "min-cut", "mirror"):
        partitioner = mt.EchoPartitioner(strategy=strategy)
        assert identical(partitioned_run(model, partitioner, inputs), expected)
        assert partitioner.last["chosen"] == strategy


def test_export_is_read_by_the_cli(tmp_path):
    model, inputs, _ = ZOO["nmt"]()
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
    refused = subprocess.run([binary, "train", str(path), "--steps", "1"], capture_output=True,
                             text=True)
    assert refused.returncode == 2 and "memfold.torch.compile" in refused.stderr

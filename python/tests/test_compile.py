"""memfold.torch under torch.compile: the backend trains bit-identically to torch.compile with
AOTAutograd's default partition and saves less; a memory budget is met with the fewest
recomputed FLOPs; graph breaks give several graphs, each partitioned."""

import copy

import torch
from torch import nn
from torch._dynamo.backends.common import aot_autograd
from functorch.compile import default_partition, make_boxed_func

import memfold.torch as mt
from conftest import identical, partitioned_run, train
from zoo import ZOO


def _keep(fx_module, _inputs):
    return make_boxed_func(fx_module)


def compiled_run(model, backend, inputs, steps=2):
    copied = copy.deepcopy(model)
    torch._dynamo.reset()
    return train(copied, torch.compile(copied, backend=backend, dynamic=False), inputs, steps)


def test_torch_compile_backend_is_exact_and_saves_less():
    model, inputs, _ = ZOO["nanogpt"]()
    partitioner = mt.EchoPartitioner()
    default = aot_autograd(fw_compiler=_keep, bw_compiler=_keep, partition_fn=default_partition)
    assert identical(compiled_run(model, mt.backend(partitioner), inputs),
                     compiled_run(model, default, inputs))
    report = partitioner.last
    assert report["saved_bytes"][report["chosen"]] < report["saved_bytes"]["min-cut"]


class Broken(nn.Module):
    """A graph break (a Python-side print of a tensor-free value) splits the model in two."""

    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh())
        self.b = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 8))

    def forward(self, x):
        h = self.a(x)
        torch._dynamo.graph_break()
        return self.b(h)


def test_every_graph_of_a_broken_model_is_partitioned():
    torch.manual_seed(0)
    model, x = Broken(), torch.randn(16, 32)
    partitioner = mt.EchoPartitioner()
    default = aot_autograd(fw_compiler=_keep, bw_compiler=_keep, partition_fn=default_partition)
    assert identical(compiled_run(model, mt.backend(partitioner), (x,)),
                     compiled_run(model, default, (x,)))
    assert len(partitioner.log) == 2


def test_symbolic_shapes_keep_pytorchs_partition_and_say_why():
    model, inputs, _ = ZOO["gated_mlp"]()
    partitioner = mt.EchoPartitioner()
    copied = copy.deepcopy(model)
    torch._dynamo.reset()
    got = train(copied, torch.compile(copied, backend=mt.backend(partitioner), dynamic=True),
                inputs)
    assert identical(got, partitioned_run(model, default_partition, inputs))
    assert "symbolic shape" in partitioner.last["refused"]
    assert partitioner.last["chosen"] in ("default", "min-cut")


def test_a_budget_is_met_with_the_fewest_recomputed_flops():
    model, inputs, _ = ZOO["gated_mlp"]()
    unbounded = mt.EchoPartitioner()
    expected = partitioned_run(model, default_partition, inputs)
    assert identical(partitioned_run(model, unbounded, inputs), expected)
    smallest = min(unbounded.last["saved_bytes"].values())
    default_bytes = unbounded.last["saved_bytes"]["default"]
    # A generous budget: nothing dear is recomputed, and less than Echo recomputes.
    generous = mt.EchoPartitioner(budget=0.9)
    assert identical(partitioned_run(model, generous, inputs), expected)
    kept = generous.last["saved_bytes"][generous.last["chosen"]]
    assert kept <= 0.9 * default_bytes
    flops = generous.last["recompute_flops"]
    assert flops[generous.last["chosen"]] <= min(flops[c] for c in flops
                                                  if generous.last["saved_bytes"][c] <= kept)
    # A tight budget, below what Echo alone reaches: matrix products are recomputed to meet it.
    tight = mt.EchoPartitioner(budget=int(0.6 * smallest))
    assert identical(partitioned_run(model, tight, inputs), expected)
    report = tight.last
    assert report["chosen"] == "budget"
    assert report["saved_bytes"]["budget"] <= int(0.6 * smallest)
    assert any("mm" in target for _name, target in report["recomputed"])

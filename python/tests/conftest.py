import copy
import os
import sys

import pytest
import torch
from functorch.compile import aot_module, make_boxed_func

# The zoo of user-style models is shared with the benchmarks.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
torch.set_num_threads(1)  # ctest runs suites side by side; one thread each is steadier


def _keep(fx_module, _inputs):
    return make_boxed_func(fx_module)


def aot(model, partition):
    return aot_module(model, fw_compiler=_keep, bw_compiler=_keep, partition_fn=partition)


def train(model, runner, inputs, steps=2):
    """`steps` SGD steps of `runner` (the model itself, or a compiled wrapper of it), the loss
    the mean square of the output (the sum over outputs for several); returns the last
    outputs, the gradients and the buffers
    (batch-norm statistics), so that statistic and weight updates over several steps are
    compared too. Each step starts from its own seed: AOTAutograd's default partition copies
    dead dropout draws into its backward module, which advance the generator there (eager and
    memfold's partitions do not), so only a step's own draws are comparable."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(steps):
        torch.manual_seed(1 + step)
        optimizer.zero_grad(set_to_none=True)
        out = runner(*inputs)
        outputs = out if isinstance(out, (tuple, list)) else [out]
        sum(o.float().pow(2).mean() for o in outputs).backward()
        grads = [None if p.grad is None else p.grad.clone() for p in model.parameters()]
        optimizer.step()
    return [o.detach() for o in outputs], grads, [b.clone() for b in model.buffers()]


def identical(a, b):
    """Bit-identical results of train()."""
    def same(x, y):
        if isinstance(x, (list, tuple)):
            return len(x) == len(y) and all(same(p, q) for p, q in zip(x, y))
        if x is None or y is None:
            return x is None and y is None
        return torch.equal(x, y)
    return same(list(a), list(b))


def partitioned_run(model, partition, inputs, steps=2):
    """train() of a copy of `model` under AOTAutograd with `partition`."""
    copied = copy.deepcopy(model)
    return train(copied, aot(copied, partition), inputs, steps)


@pytest.fixture(autouse=True)
def _fresh_compile_state():
    torch._dynamo.reset()
    yield

"""memfold.torch under DistributedDataParallel: two processes on this machine (gloo), each
training its own shard of data with memfold's partition on its rank, as users compile a DDP
model (torch.compile(DDP(model)): dynamo's DDP optimizer splits graphs at DDP's buckets). Losses and gradients are
bit-identical to the same run with AOTAutograd's default partition, and the ranks' gradients
agree (DDP averaged them)."""

import copy
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch._dynamo.backends.common import aot_autograd
from functorch.compile import default_partition, make_boxed_func

import memfold.torch as mt
from zoo import ZOO

STEPS = 2


def _keep(fx_module, _inputs):
    return make_boxed_func(fx_module)


def _train(rank, model, backend, inputs):
    """STEPS steps of torch.compile(DDP(model)); the losses and last gradients."""
    torch._dynamo.reset()
    ddp = DDP(copy.deepcopy(model))
    compiled = torch.compile(ddp, backend=backend, dynamic=False)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    losses = []
    for step in range(STEPS):
        torch.manual_seed(100 * step + rank)
        optimizer.zero_grad(set_to_none=True)
        loss = compiled(*inputs)
        loss.backward()
        losses.append(loss.detach())
        grads = [p.grad.clone() for p in ddp.parameters()]
        optimizer.step()
    return losses, grads


def _rank(rank, port, failures):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        torch.set_num_threads(1)
        model, inputs, _ = ZOO["nanogpt"]()  # the same weights on both ranks
        torch.manual_seed(rank)              # each rank its own batch
        inputs = tuple(torch.randint_like(t, 0, 128) for t in inputs)
        partitioner = mt.EchoPartitioner()
        ours = _train(rank, model, mt.backend(partitioner), inputs)
        default = _train(rank, model,
                         aot_autograd(fw_compiler=_keep, bw_compiler=_keep,
                                      partition_fn=default_partition), inputs)
        problems = []
        if not all(torch.equal(a, b) for a, b in zip(ours[0], default[0])):
            problems.append("losses differ from the default partition's")
        if not all(torch.equal(a, b) for a, b in zip(ours[1], default[1])):
            problems.append("gradients differ from the default partition's")
        if not any(r["saved_bytes"][r["chosen"]] < r["saved_bytes"]["default"]
                   for r in partitioner.log):
            problems.append("memfold saved nothing")
        gathered = [torch.zeros(len(ours[1])) for _ in range(2)]
        dist.all_gather(gathered, torch.stack([g.double().sum().float() for g in ours[1]]))
        if not torch.equal(gathered[0], gathered[1]):
            problems.append("the ranks' gradients differ: DDP did not average them")
        if problems:
            failures.put("rank %d: %s" % (rank, "; ".join(problems)))
    finally:
        dist.destroy_process_group()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ddp_with_memfolds_partition_is_bit_identical_to_the_default():
    context = mp.get_context("spawn")
    failures = context.SimpleQueue()
    mp.start_processes(_rank, args=(_free_port(), failures), nprocs=2, start_method="spawn")
    problems = []
    while not failures.empty():
        problems.append(failures.get())
    assert not problems, problems

"""memfold's Echo inside PyTorch 2.x: recomputation chosen over the whole joint forward and
backward graph, as the partitioner of AOTAutograd (and so of torch.compile).

    model = memfold.torch.compile(model)                                  # aot_module
    model = torch.compile(model, backend=memfold.torch.backend())        # torch.compile
    aot_module(model, ..., partition_fn=memfold.torch.echo_partition)     # one's own set-up

Outputs and gradients are bit-identical to AOTAutograd's default partition; the forward pass
saves no more than min(default, min-cut) for the backward pass. explain(model, *inputs) says
what was recomputed and why.
"""

from functorch.compile import aot_module, make_boxed_func

from memfold.torch._partition import EchoPartitioner, echo_partition


def _keep_graph(fx_module, _inputs):
    return make_boxed_func(fx_module)


def compile(model, partitioner=None):
    """`model` wrapped to train with Echo's partition (same call signature as the model)."""
    return aot_module(model, fw_compiler=_keep_graph, bw_compiler=_keep_graph,
                      partition_fn=partitioner or EchoPartitioner())


def backend(partitioner=None):
    """A torch.compile backend: AOTAutograd with Echo's partition, graphs run as traced."""
    from torch._dynamo.backends.common import aot_autograd
    return aot_autograd(fw_compiler=_keep_graph, bw_compiler=_keep_graph,
                        partition_fn=partitioner or EchoPartitioner())


__all__ = ["EchoPartitioner", "backend", "compile", "echo_partition"]

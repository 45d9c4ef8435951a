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

from memfold.torch._explain import Explanation, explain
from memfold.torch._partition import EchoPartitioner, echo_partition


def _keep_graph(fx_module, _inputs):
    return make_boxed_func(fx_module)


def compile(model, partitioner=None, budget=None):
    """`model` wrapped to train with Echo's partition (same call signature as the model).
    `budget`: the bytes the forward pass may save for the backward pass, or a fraction of what
    AOT's default partition saves (see EchoPartitioner)."""
    return aot_module(model, fw_compiler=_keep_graph, bw_compiler=_keep_graph,
                      partition_fn=partitioner or EchoPartitioner(budget=budget))


def backend(partitioner=None, budget=None):
    """A torch.compile backend: AOTAutograd with Echo's partition, graphs run as traced."""
    from torch._dynamo.backends.common import aot_autograd
    return aot_autograd(fw_compiler=_keep_graph, bw_compiler=_keep_graph,
                        partition_fn=partitioner or EchoPartitioner(budget=budget))


def export(model, inputs, path, name=None):
    """Traces the training step of `model` on `inputs` (a tuple) and writes its joint graph to
    `path`, for `memfold train PATH --strategy echo --plan-only`. The model's own state (batch
    norm statistics) is untouched. Returns the JointExport."""
    import copy
    from torch._functorch.partitioners import default_partition
    from memfold.torch import _export, _graph, _rewrite
    captured = {}

    def capture(joint_module, joint_inputs, *, num_fwd_outputs, **kwargs):
        joint = _graph.copy_module(joint_module)
        _rewrite.express_dropout_outputs(joint)
        captured["export"] = _export.JointExport(joint, _graph.forward_names(joint),
                                                 num_fwd_outputs, name or type(model).__name__)
        return default_partition(joint_module, joint_inputs, num_fwd_outputs=num_fwd_outputs,
                                 **kwargs)

    aot_module(copy.deepcopy(model), fw_compiler=_keep_graph, bw_compiler=_keep_graph,
               partition_fn=capture)(*inputs)
    with open(path, "w") as f:
        f.write(captured["export"].text())
    return captured["export"]


__all__ = ["EchoPartitioner", "Explanation", "backend", "compile", "echo_partition", "explain",
           "export"]

"""Facts about AOTAutograd's joint fx graphs that every part of memfold.torch reads: which
nodes are the forward pass, which results are views of another node's storage, how many bytes a
partition's saved values hold, and the FLOPs of a call.

Saved bytes are counted one way for every partition (AOT's default, min-cut, memfold's): the
distinct storages the forward module hands to the backward module, each counted once however
many of its views are saved, graph inputs (parameters, data, buffers) not counted since the
caller holds them anyway. O(nodes) per call.
"""

import copy
import operator
import warnings

import torch
from torch import fx
from torch._functorch.partitioners import (_has_tag_is_forward, _is_fwd_seed_offset,
                                           _is_primal, _is_tangent)
from torch.utils.flop_counter import flop_registry

_aten = torch.ops.aten
# Ops whose results share their input's storage although their schemas do not say so.
_UNANNOTATED_VIEWS = {_aten._unsafe_view.default, _aten.unsafe_split.Tensor,
                      _aten.unsafe_split_with_sizes.default, _aten.unsafe_chunk.default}


def copy_module(module):
    """A deep copy of a graph module, without the FutureWarning PyTorch 2.13's own pickling of
    its tree specs raises (a deprecation inside torch, nothing the caller did)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        return copy.deepcopy(module)


def forward_names(joint):
    """The names of the forward nodes, as AOT's default partition finds them: every node that
    is not a tangent, up to the last one tagged forward."""
    last = None
    for node in joint.graph.nodes:
        if _has_tag_is_forward(node) or _is_primal(node) or _is_fwd_seed_offset(node):
            last = node
    names = set()
    for node in joint.graph.nodes:
        if not _is_tangent(node) and node.op != "output":
            names.add(node.name)
        if node is last:
            break
    return names


def tensor_value(node):
    """The traced tensor (a fake one) a node produces, or None for tuples, symbols and None."""
    val = node.meta.get("val")
    return val if isinstance(val, torch.Tensor) else None


def nbytes(node):
    val = tensor_value(node)
    return 0 if val is None else val.numel() * val.element_size()


def is_view_op(target):
    """Whether every result of `target` shares the storage of its first argument."""
    if target in _UNANNOTATED_VIEWS:
        return True
    schema = getattr(target, "_schema", None)
    if schema is None or not schema.returns:
        return False
    alias = schema.returns[0].alias_info
    return alias is not None and not alias.is_write


def viewed(node):
    """The node whose storage `node`'s result views, or None when it has storage of its own."""
    if node.op != "call_function":
        return None
    if node.target is operator.getitem:
        producer = node.args[0]
        return producer.args[0] if is_view_op(producer.target) else None
    if is_view_op(node.target) and node.args and isinstance(node.args[0], fx.Node):
        return node.args[0]
    return None


def storage(node):
    """The node that owns the storage `node`'s result lives in (itself unless a view)."""
    while (base := viewed(node)) is not None:
        node = base
    return node


def bytes_of(nodes):
    """Bytes of the distinct storages `nodes` hold, graph inputs excluded."""
    owners = {storage(n) for n in nodes if isinstance(n, fx.Node) and tensor_value(n) is not None}
    return sum(nbytes(owner) for owner in owners if owner.op != "placeholder")


def saved_nodes(fwd_module, num_fwd_outputs):
    """The values a forward module saves for the backward pass: its outputs after the first
    num_fwd_outputs (the model's own outputs)."""
    output = next(n for n in fwd_module.graph.nodes if n.op == "output")
    return [n for n in output.args[0][num_fwd_outputs:] if isinstance(n, fx.Node)]


def saved_bytes(fwd_module, num_fwd_outputs):
    return bytes_of(saved_nodes(fwd_module, num_fwd_outputs))


def lazy_order(nodes, is_lazy):
    """`nodes` (a topological order) with each node `is_lazy` accepts moved just before its
    first reader among them, its own lazy inputs first; lazy nodes nobody reads go last.
    O(nodes + edges)."""
    ordered, pending = [], {}

    def emit(node):
        for arg in node.all_input_nodes:
            if arg in pending:
                emit(pending.pop(arg))
        ordered.append(node)

    for node in nodes:
        if is_lazy(node):
            pending[node] = node
        else:
            emit(node)
    while pending:
        emit(pending.pop(next(iter(pending))))
    return ordered


def _fake(arg):
    return tensor_value(arg) if isinstance(arg, fx.Node) else arg


def registered_flops(node):
    """PyTorch's own FLOP count for the call (matrix products, convolutions, attention), or None
    when torch.utils.flop_counter has no formula for it."""
    packet = getattr(node.target, "overloadpacket", None)
    formula = flop_registry.get(packet)
    if formula is None:
        return None
    args, kwargs = fx.node.map_aggregate((node.args, node.kwargs), _fake)
    try:
        return float(formula(*args, out_val=node.meta.get("val"), **kwargs))
    except Exception:  # a formula that does not take this overload's arguments
        return None

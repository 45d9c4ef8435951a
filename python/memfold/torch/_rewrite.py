"""Rewrites of AOTAutograd's joint graph and of the modules partitioned from it that let Echo
recompute more, exactly (every result bit-identical to AOT's default partition):

* dropout's output is re-expressed from its input and its 0/1 mask (input * mask * scale, the
  same arithmetic ATen's CPU kernel does), so it can be recomputed while the draw is not;
* a recomputed batch norm re-runs without running statistics (its output, mean and inverse
  standard deviation are the same bits), since the statistics it read are updated in place
  after the forward pass;
* boolean tensors the backward pass keeps (dropout's masks) cross packed, one bit per element;
* the backward module runs each recomputed node just before its first reader (extracted from
  the joint graph, they would all run first and live through the whole backward pass).

Each rewrite is O(nodes) and keeps the fx graph's metadata (traced values) on the nodes it adds.
"""

import operator

import torch
from torch import fx

from memfold.torch import _graph

_aten = torch.ops.aten
_DROPOUT = _aten.native_dropout.default
_BATCH_NORM = _aten._native_batch_norm_legit_functional.default
_BATCH_NORM_NO_STATS = _aten._native_batch_norm_legit.no_stats
# Saved masks smaller than this stay bytes: packing them saves less than the ops it adds cost.
_MIN_PACKED_ELEMENTS = 256


def _getitems(node):
    return {u.args[1]: u for u in node.users if u.target is operator.getitem}


def _call_like(graph, target, args, like):
    """A call whose result has the same traced metadata as `like`."""
    node = graph.call_function(target, args)
    node.meta = dict(like.meta)
    return node


def express_dropout_outputs(joint):
    """Every training-mode dropout's output becomes mul(mul(x, mask), 1 / (1 - p)); the draw
    itself stays (it is never re-drawn). Returns the number rewritten."""
    graph, count = joint.graph, 0
    for node in list(graph.nodes):
        if node.target is not _DROPOUT or len(node.args) < 3 or node.args[2] is False:
            continue
        items = _getitems(node)
        if 0 not in items or 1 not in items:
            continue
        keep = 1.0 - float(node.args[1])
        scale = 0.0 if keep == 0 else 1.0 / keep
        with graph.inserting_after(items[1]):
            masked = _call_like(graph, _aten.mul.Tensor, (node.args[0], items[1]), items[0])
        with graph.inserting_after(masked):
            scaled = _call_like(graph, _aten.mul.Tensor, (masked, scale), items[0])
        items[0].replace_all_uses_with(scaled)
        graph.erase_node(items[0])
        count += 1
    if count:
        graph.lint()
        joint.recompile()
    return count


def rerun_batch_norms_without_statistics(graph, recomputed, forward):
    """For each recomputed batch norm, a copy that takes no running statistics serves the
    backward pass and the recomputed nodes; it replaces the original in `recomputed` (a set
    of nodes, updated). Returns the copies."""
    copies = []
    for node in [n for n in recomputed if n.target is _BATCH_NORM]:
        recomputed.discard(node)
        x, weight, bias, _mean, _var, training, momentum, eps = node.args[:8]
        items = _getitems(node)
        with graph.inserting_after(node):
            rerun = graph.call_function(_BATCH_NORM_NO_STATS,
                                        (x, weight, bias, training, momentum, eps))
        rerun.meta = {k: v for k, v in node.meta.items() if k != "val"}
        rerun.meta["val"] = tuple(node.meta["val"][:3]) if "val" in node.meta else None
        recomputed.add(rerun)
        for index in (0, 1, 2):
            if index not in items:
                continue
            with graph.inserting_after(rerun):
                item = graph.call_function(operator.getitem, (rerun, index))
            item.meta = dict(items[index].meta)
            recomputed.add(item)
            for user in list(items[index].users):
                if user.name not in forward or user in recomputed:
                    user.replace_input_with(items[index], item)
        copies.append(rerun)
    return copies


def run_recomputation_late(bwd_module, forward):
    """Moves every recomputed forward node of the backward module just before its first
    reader (memfold's own recomputation places its clones the same way)."""
    graph = bwd_module.graph
    calls = [n for n in graph.nodes if n.op not in ("placeholder", "output")]
    order = _graph.lazy_order(calls, lambda n: n.name in forward)
    anchor = next((n for n in reversed(graph.nodes) if n.op == "placeholder"), None)
    for node in order:
        if anchor is None:
            next(iter(graph.nodes)).prepend(node)
        else:
            anchor.append(node)
        anchor = node
    graph.lint()
    bwd_module.recompile()


def _pack_bits(graph, mask):
    """Nodes packing a boolean tensor into ceil(n / 8) bytes: bit j of byte i is element
    8 i + j. Returns the packed uint8 node."""
    count = int(_graph.tensor_value(mask).numel())
    call = graph.call_function
    flat = call(_aten.reshape.default, (call(_aten._to_copy.default, (mask,),
                                              {"dtype": torch.uint8}), [count]))
    rows = call(_aten.view.default, (call(_aten.constant_pad_nd.default,
                                          (flat, [0, -count % 8], 0)), [-1, 8]))
    weights = call(_aten.pow.Scalar, (2, call(_aten.arange.default, (8,),
                                              {"dtype": torch.uint8})))
    packed = call(_aten.sum.dim_IntList, (call(_aten.mul.Tensor, (rows, weights)), [1]),
                  {"dtype": torch.uint8})
    packed.meta["val"] = torch.empty((count + 7) // 8, dtype=torch.uint8, device="meta")
    return packed


def _unpack_bits(graph, packed, shape):
    """The inverse of _pack_bits: the boolean tensor of `shape`."""
    count = int(torch.Size(shape).numel())
    call = graph.call_function
    shifts = call(_aten.arange.default, (8,), {"dtype": torch.uint8})
    bits = call(_aten.bitwise_and.Scalar, (call(_aten.bitwise_right_shift.Tensor, (
        call(_aten.unsqueeze.default, (packed, 1)), shifts)), 1))
    flat = call(_aten.slice.Tensor, (call(_aten.view.default, (bits, [-1])), 0, 0, count))
    return call(_aten.view.default, (call(_aten._to_copy.default, (flat,), {"dtype": torch.bool}),
                                     list(shape)))


def pack_saved_masks(fwd_module, bwd_module, num_fwd_outputs):
    """Saved boolean tensors cross from the forward module to the backward one packed one bit
    per element, unpacked just before their first reader. Returns the number packed."""
    fwd_out = next(n for n in fwd_module.graph.nodes if n.op == "output")
    outs = list(fwd_out.args[0])
    bwd_inputs = [n for n in bwd_module.graph.nodes if n.op == "placeholder"]
    saved_tensors = [k for k in range(num_fwd_outputs, len(outs))
                     if isinstance(outs[k], fx.Node) and _graph.tensor_value(outs[k]) is not None]
    first_tensor_input = next(k for k, n in enumerate(bwd_inputs)
                              if _graph.tensor_value(n) is not None) if saved_tensors else 0
    packed_count = 0
    for position, k in enumerate(saved_tensors):
        value = _graph.tensor_value(outs[k])
        if value.dtype is not torch.bool or value.numel() < _MIN_PACKED_ELEMENTS:
            continue
        saved = bwd_inputs[first_tensor_input + position]
        if not saved.users:
            continue
        with fwd_module.graph.inserting_before(fwd_out):
            outs[k] = _pack_bits(fwd_module.graph, outs[k])
        first_reader = next(n for n in bwd_module.graph.nodes if n in saved.users)
        readers = list(saved.users)
        with bwd_module.graph.inserting_before(first_reader):
            restored = _unpack_bits(bwd_module.graph, saved, value.shape)
        for reader in readers:
            reader.replace_input_with(saved, restored)
        saved.meta["val"] = torch.empty((value.numel() + 7) // 8, dtype=torch.uint8,
                                        device="meta")
        packed_count += 1
    if packed_count:
        fwd_out.args = (tuple(outs),)
        fwd_module.recompile()
        bwd_module.recompile()
    return packed_count

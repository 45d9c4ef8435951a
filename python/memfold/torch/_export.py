"""The joint graph in memfold's joint-graph format (src/memfold/joint/joint_graph.h, version 2).

Every aten call is modelled as memory, whatever its operator: its traced result types, which
forward values it reads (the gradient data-dependencies come straight from the joint graph),
whether its result is a view of its input's storage, and its FLOPs, so that memfold's Echo
recomputes cheap operators and never compute-heavy ones:

* matrix products, convolutions and attention: PyTorch's own FLOP formulas;
* element-wise operators, reductions, normalisations, softmax, losses, pooling, padding,
  indexing, copies and constants: one FLOP per element (cheap);
* random draws and in-place updates must not run twice: kept, never recomputed;
* any other operator: kept, never recomputed, and named in `unknown` (its cost is not known).

Views (detach, view, transpose, split, select, expand, ...) are aliases: no bytes of their own.
A multi-output view (split, unbind, chunk) becomes one view per result. A backward view is
placed just before its first reader (PyTorch may trace detach-of-detach chains early), so a
value is not seen read before the backward pass really needs it. O(nodes + edges).
"""

import json
import operator

import torch
from torch import fx

from memfold.torch import _graph

# Operators (by overload packet name) whose work is linear in the elements they touch.
_LINEAR_WORK = set("""
sum mean amax amin max min var std var_mean prod argmax argmin logsumexp norm linalg_vector_norm
any all cumsum cumprod native_layer_norm native_group_norm native_batch_norm
_native_batch_norm_legit _native_batch_norm_legit_functional _native_batch_norm_legit_no_training
_softmax _log_softmax _safe_softmax nll_loss_forward nll_loss2d_forward mse_loss l1_loss
smooth_l1_loss huber_loss binary_cross_entropy binary_cross_entropy_with_logits kl_div
soft_margin_loss cat stack clone _to_copy copy constant_pad_nd reflection_pad1d reflection_pad2d
reflection_pad3d replication_pad1d replication_pad2d replication_pad3d index index_select gather
scatter scatter_add scatter_reduce index_put index_add embedding _embedding_bag masked_fill
where repeat tril triu flip roll zeros ones full arange scalar_tensor empty zeros_like ones_like
full_like empty_like new_zeros new_ones new_full new_empty fill lift_fresh_copy _unsafe_index
max_pool1d max_pool2d_with_indices max_pool3d_with_indices avg_pool1d avg_pool2d avg_pool3d
_adaptive_avg_pool2d _adaptive_avg_pool3d adaptive_max_pool2d upsample_nearest1d
upsample_nearest2d upsample_nearest3d upsample_bilinear2d upsample_linear1d grid_sampler_2d
sort topk searchsorted rsub clamp clamp_min clamp_max hardtanh elu leaky_relu softplus gelu silu
mish hardswish hardsigmoid glu threshold logit triu_indices tril_indices bucketize one_hot
slice_scatter select_scatter diagonal_scatter as_strided_scatter index_copy index_fill
masked_scatter repeat_interleave pixel_shuffle pixel_unshuffle im2col col2im upsample_bicubic2d
upsample_trilinear3d _upsample_bilinear2d_aa argsort kthvalue median std_mean linspace eye
empty_strided new_empty_strided _unsafe_index_put _weight_norm_interface renorm prelu
_prelu_kernel rrelu_with_noise_functional celu selu _log_softmax_backward_data norm_except_dim
""".split())
# PyTorch's dtype names memfold plans (by storage size where it has no type of its own).
_DTYPES = {torch.float32: "float32", torch.int64: "int64", torch.int32: "int32",
           torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool",
           torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float64: "float64"}


def mutates(target):
    schema = getattr(target, "_schema", None)
    return schema is not None and any(a.alias_info is not None and a.alias_info.is_write
                                      for a in schema.arguments)


def _is_random(node):
    """Whether the call draws random numbers: its operator is tagged as seeded, unless the only
    randomness is a dropout probability it was given as zero (attention without dropout)."""
    if torch.Tag.nondeterministic_seeded not in getattr(node.target, "tags", ()):
        return False
    schema = node.target._schema
    for k, argument in enumerate(schema.arguments):
        if argument.name == "dropout_p":
            value = node.args[k] if k < len(node.args) else node.kwargs.get(
                "dropout_p", argument.default_value)
            return value != 0
    return True


def _elements(node):
    values = [_graph.tensor_value(n) for n in [node, *value_nodes(node)]]
    values += [_graph.tensor_value(a) for a in node.all_input_nodes]
    return float(max((v.numel() for v in values if v is not None), default=0))


def _attention_flops(node):
    """Scaled dot-product attention's two batched products, for the kernels PyTorch's FLOP
    counter has no formula for (its CPU kernel): 2 L S (E + Ev) per batch and head."""
    if "scaled_dot_product" not in str(node.target) or len(node.args) < 3:
        return None
    q, k, v = (_graph.tensor_value(a) if isinstance(a, fx.Node) else None for a in node.args[:3])
    if q is None or k is None or v is None or q.dim() < 2:
        return None
    heads = q.numel() // (q.shape[-2] * q.shape[-1])
    return 2.0 * heads * q.shape[-2] * k.shape[-2] * (q.shape[-1] + v.shape[-1])


def cost(node):
    """(FLOPs, recomputable, known) for a call_function node (see the module docstring)."""
    target = node.target
    if _is_random(node) or mutates(target):
        return 0.0, False, True
    flops = _graph.registered_flops(node)
    if flops is None:
        flops = _attention_flops(node)
    if flops is not None:
        return flops, True, True
    packet = getattr(target, "overloadpacket", None)
    linear = (torch.Tag.pointwise in getattr(target, "tags", ()) or
              getattr(packet, "__name__", None) in _LINEAR_WORK)
    if linear:
        return _elements(node), True, True
    return 0.0, False, False


def value_nodes(node):
    """The fx nodes holding a call's tensor results: itself, or the getitems of its tuple."""
    if _graph.tensor_value(node) is not None:
        return [node]
    return sorted((u for u in node.users if u.target is operator.getitem),
                  key=lambda u: u.args[1])


def target_name(node):
    """'aten.relu.default' for an aten call, the function's name otherwise."""
    if isinstance(node.target, torch._ops.OpOverload):
        return str(node.target)
    return getattr(node.target, "__name__", str(node.target))


class JointExport:
    """The joint graph in memfold's format, with the maps back to fx nodes: `nodes[k]` is the
    fx node of the file's node k (for a view of a multi-output view, the getitem)."""

    def __init__(self, joint_module, forward, num_fwd_outputs, name="torch model"):
        from torch._functorch.partitioners import _extract_fwd_bwd_outputs, _is_primal
        graph = joint_module.graph
        fwd_outputs, bwd_outputs = _extract_fwd_bwd_outputs(
            joint_module, num_fwd_outputs=num_fwd_outputs)[:2]
        primals = [n for n in graph.nodes if _is_primal(n)]
        trained = {p for p, g in zip(primals, bwd_outputs) if g is not None}
        self.forward = forward
        self.value_of, self.values, self.unknown, self.kept = {}, [], {}, {}
        for node in graph.nodes:
            if node.op == "placeholder":
                self._add_value(node, "weight" if node in trained else "input")
        calls = [n for n in self._calls(graph) if self._add_outputs(n)]
        fwd = [n for n in calls if n.name in forward]
        bwd = _graph.lazy_order([n for n in calls if n.name not in forward], self._is_view)
        self.nodes = fwd + bwd
        ids = lambda nodes: [self.value_of[n] for n in nodes if n in self.value_of]
        self.json = {
            "format": "memfold-joint-graph", "version": 2, "name": name,
            "values": self.values, "nodes": [self._node_json(n) for n in self.nodes],
            "forward_outputs": ids(fwd_outputs),
            "params": [self.value_of[p] for p in primals if p in trained],
            "grads": [self.value_of.get(g, -1) for p, g in zip(primals, bwd_outputs)
                      if p in trained],
        }

    @staticmethod
    def _calls(graph):
        """The calls to export: every call_function but getitem, except that the getitems of
        a multi-output view stand for it (one view each)."""
        for node in graph.nodes:
            if node.op != "call_function":
                continue
            if node.target is operator.getitem:
                if _graph.is_view_op(node.args[0].target):
                    yield node
            elif not (_graph.is_view_op(node.target) and _graph.tensor_value(node) is None):
                yield node

    def _is_view(self, node):
        return _graph.viewed(node) is not None

    def _add_value(self, node, role):
        val = _graph.tensor_value(node)
        if val is None:
            return False
        if not all(isinstance(d, int) for d in val.shape):
            raise ValueError("%s has a symbolic shape %s; memfold plans static shapes "
                             "(torch.compile(..., dynamic=False))" % (node.name, list(val.shape)))
        dtype = _DTYPES.get(val.dtype, str(val.dtype).replace("torch.", ""))
        self.value_of[node] = len(self.values)
        self.values.append({"name": node.name, "dtype": dtype, "shape": [int(d) for d in val.shape],
                            "role": role})
        return True

    def _add_outputs(self, node):
        """Adds the call's tensor results as values; False when it has none (not exported)."""
        role = "activation" if node.name in self.forward else "gradient"
        return sum(self._add_value(n, role) for n in value_nodes(node)) > 0

    def _node_json(self, node):
        inputs = [self.value_of[a] for a in node.all_input_nodes if a in self.value_of]
        outputs = [self.value_of[n] for n in value_nodes(node)]
        entry = {"name": node.name, "target": target_name(node), "inputs": inputs,
                 "outputs": outputs, "forward": node.name in self.forward}
        base = _graph.viewed(node)
        if base is not None:
            entry["view"] = True
            entry["inputs"] = [self.value_of[base]] if base in self.value_of else inputs
            return entry
        flops, recomputable, known = cost(node)
        entry["flops"] = flops
        entry["recompute"] = recomputable
        if node.name in self.forward and not recomputable:
            counts = self.kept if known else self.unknown
            counts[target_name(node)] = counts.get(target_name(node), 0) + 1
        return entry

    def text(self):
        return json.dumps(self.json)

"""memfold's Echo as the partitioner of PyTorch's AOTAutograd (PyTorch 1.13, functorch.compile).

AOTAutograd traces a model's forward and backward passes into one joint fx graph and asks a
partitioner which forward values the forward pass saves for the backward pass; anything the
backward pass needs and was not saved is recomputed there. `echo_partition` answers with
memfold's Echo:

1. the joint graph is exported to memfold's joint-graph format (`joint_graph_json`): each aten
   call with its traced shapes and dtypes, which backward node reads which forward value (the
   gradient data-dependencies, straight from the joint graph), and which inputs are parameters
   (they have gradients), running statistics (batch norm mutates them) or data;
2. memfold's C++ core translates it to memfold IR and runs the same training pipeline as
   `memfold train --strategy echo` (Echo's choice, checked against Mirror's and the baseline by
   planning all three; never worse), returning the forward nodes to recompute;
3. the forward module saves every value the backward pass or a recomputed node reads that is
   not itself recomputed; the backward module recomputes the rest. A recomputed batch norm is
   re-run without running statistics, so they are updated exactly once; random ops are opaque
   to memfold and never recomputed, and their 0/1 draws are saved packed, one bit each.

In-place operations: AOTAutograd turns a model's own in-place updates into functional ones
before partitioning (`z.add_(1)` arrives as `add`); the in-place calls left are random draws
into fresh tensors (`bernoulli_`, never recomputed) and batch norm's statistics (above).

`compile(model)` wraps a module with `aot_module(..., partition_fn=echo_partition)`;
`export(model, inputs, path)` writes the joint graph for `memfold train FILE --plan-only`.
Cost: one export (O(nodes)) and one memfold planning per traced graph, at the first call.
"""

import copy
import json
import logging
import operator

import torch
from torch import fx
from torch.fx.passes.shape_prop import _extract_tensor_metadata
from functorch.compile import aot_module, default_partition, make_boxed_func
from functorch._src.partitioners import (_extract_fwd_bwd_modules, _extract_fwd_bwd_outputs,
                                         _extract_graph_with_inputs_outputs, _is_primal,
                                         _is_tangent)

from memfold import _memfold

_LOG = logging.getLogger("memfold.torch")
_BATCH_NORM = torch.ops.aten.native_batch_norm.default
# Ops whose results are random draws: never recomputed (memfold sees them as opaque) and, being
# 0/1 floats, saved one bit per element.
_RANDOM_DRAWS = {torch.ops.aten.bernoulli_.float, torch.ops.aten.bernoulli.default,
                 torch.ops.aten.bernoulli.p}


def _target_name(node):
    """'aten.relu.default' for an aten call, the function's name otherwise."""
    if isinstance(node.target, torch._ops.OpOverload):
        return str(node.target)
    return getattr(node.target, "__name__", str(node.target))


def _tensor_meta(node):
    return node.meta.get("tensor_meta")


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _forward_nodes(joint_module):
    """The nodes that compute the forward outputs (default_partition's forward pass)."""
    graph = joint_module.graph
    primals = list(filter(_is_primal, graph.nodes))
    fwd_outputs, _ = _extract_fwd_bwd_outputs(joint_module)
    forward_only = _extract_graph_with_inputs_outputs(graph, primals, fwd_outputs)
    return {n.name for n in forward_only.nodes if n.op != "output"}


def _mutated_inputs(graph):
    """Graph inputs an op updates in place: batch-norm running statistics."""
    mutated = set()
    for node in graph.nodes:
        if node.op == "call_function" and node.target is _BATCH_NORM:
            mutated.update(a for a in node.args[3:5] if isinstance(a, fx.Node))
    return mutated


class JointExport:
    """The joint graph as memfold reads it, with the maps back to fx nodes."""

    def __init__(self, joint_module, name="torch model"):
        graph = joint_module.graph
        self.forward = _forward_nodes(joint_module)
        fwd_outputs, bwd_outputs = _extract_fwd_bwd_outputs(joint_module)
        primals = list(filter(_is_primal, graph.nodes))
        mutated = _mutated_inputs(graph)
        trained = {p for p, g in zip(primals, bwd_outputs) if g is not None}
        self.value_of = {}   # fx node -> value id
        self.values = []
        self.nodes = []      # export index -> fx node
        node_json = []
        for node in graph.nodes:
            if node.op == "placeholder":
                role = ("weight" if node in trained else "state" if node in mutated else "input")
                self._add_value(node, role)
            elif node.op == "call_function" and node.target is not operator.getitem:
                role = "activation" if node.name in self.forward else "gradient"
                outputs = self._outputs(node, role)
                node_json.append({"name": node.name, "target": _target_name(node),
                                  "args": [self._arg(a) for a in self._arguments(node)],
                                  "outputs": outputs, "forward": node.name in self.forward})
                self.nodes.append(node)
        # Forward nodes first (a valid order: the forward pass reads nothing from the backward).
        order = sorted(range(len(node_json)), key=lambda k: not node_json[k]["forward"])
        self.nodes = [self.nodes[k] for k in order]
        ids = lambda nodes: [self.value_of[n] for n in nodes if n in self.value_of]
        self.json = {
            "format": "memfold-joint-graph", "version": 1, "name": name,
            "values": self.values, "nodes": [node_json[k] for k in order],
            "forward_outputs": ids(fwd_outputs),
            "params": [self.value_of[p] for p in primals if p in trained],
            "grads": [self.value_of.get(g, -1) for p, g in zip(primals, bwd_outputs)
                      if p in trained],
        }

    def _add_value(self, node, role):
        meta = _tensor_meta(node)
        if meta is None or not hasattr(meta, "shape"):
            return None
        self.value_of[node] = len(self.values)
        self.values.append({"name": node.name, "dtype": _dtype_name(meta.dtype),
                            "shape": list(meta.shape), "role": role})
        return self.value_of[node]

    def _outputs(self, node, role):
        """The value ids of a node's results (see _value_nodes)."""
        ids = (self._add_value(n, role) for n in _value_nodes(node))
        return [v for v in ids if v is not None]

    @staticmethod
    def _arguments(node):
        """Positional arguments, then keyword ones (add's alpha, tensors passed by name)."""
        return list(node.args) + list(node.kwargs.values())

    def _arg(self, a):
        if isinstance(a, fx.Node):
            return {"value": self.value_of[a]} if a in self.value_of else None
        if isinstance(a, (list, tuple)):
            if a and all(isinstance(x, fx.Node) for x in a):
                return {"values": [self.value_of[x] for x in a if x in self.value_of]}
            return [self._arg(x) for x in a]
        if a is None or isinstance(a, (bool, int, float, str)):
            return a
        return str(a)

    def text(self):
        return json.dumps(self.json)


def _value_nodes(node):
    """The fx nodes holding a node's results: itself when it returns one tensor, else the
    getitem users that take its tuple apart, in tuple order."""
    if _tensor_meta(node) is not None and hasattr(_tensor_meta(node), "shape"):
        return [node]
    return sorted((u for u in node.users if u.target is operator.getitem),
                  key=lambda u: u.args[1])


def _rerun_batch_norms_without_statistics(graph, recomputed, forward):
    """A recomputed batch norm must not update its running statistics again: its backward
    readers get a copy that takes none (None for both), which computes the same output."""
    for node in list(recomputed):
        if node.target is not _BATCH_NORM:
            continue
        recomputed.discard(node)
        outputs = [u for u in node.users if u.target is operator.getitem and u.args[1] == 0]
        with graph.inserting_after(node):
            args = list(node.args)
            args[3] = args[4] = None
            rerun = graph.call_function(_BATCH_NORM, tuple(args))
        with graph.inserting_after(rerun):
            rerun_out = graph.call_function(operator.getitem, (rerun, 0))
        rerun.meta = dict(node.meta)
        for out in outputs:
            rerun_out.meta = dict(out.meta)
            for user in list(out.users):
                if user.name not in forward or user in recomputed:
                    user.replace_input_with(out, rerun_out)


_SCALINGS = {torch.ops.aten.div.Scalar, torch.ops.aten.mul.Scalar, torch.ops.aten.div.Tensor,
             torch.ops.aten.mul.Tensor}


def _recompute_scaled_draws(graph, recomputed, forward):
    """Dropout scales its 0/1 draw by a constant; the scaled mask is recomputed from the draw,
    which crosses to the backward pass one bit per element (1/32 of the float mask's bytes)."""
    for node in graph.nodes:
        if node.target not in _RANDOM_DRAWS:
            continue
        for user in node.users:
            scalar = len(user.args) == 2 and isinstance(user.args[1], (int, float))
            if user.name in forward and user.target in _SCALINGS and scalar:
                recomputed.add(user)


def _saved_values(graph, forward, recomputed):
    """Forward values (and inputs) that the backward pass or a recomputed node reads and that
    are not recomputed themselves."""
    def producer(n):
        return n.args[0] if n.target is operator.getitem else n

    saved = []
    for node in graph.nodes:
        is_forward_value = (node.op == "placeholder" and _is_primal(node) or
                            producer(node).name in forward)
        if not is_forward_value or node.op == "output":
            continue
        if node.op == "call_function" and node not in _value_nodes(producer(node)):
            continue  # a tuple: its getitem users are the values
        if producer(node) in recomputed:
            continue
        readers = [u for u in node.users if u.op != "output"]
        if any(u.name not in forward or u in recomputed or
               (u.target is operator.getitem and u.args[0] in recomputed) for u in readers):
            saved.append(node)
    return saved


_aten = torch.ops.aten


def _pack_bits(graph, mask, count):
    """Nodes packing a 0/1 float tensor of `count` elements into ceil(count / 8) bytes: bit j
    of byte i is element 8 i + j, by one matrix-vector product with the powers of two (exact:
    every partial sum is an integer below 256). Returns the packed uint8 node."""
    call = graph.call_function
    flat = call(_aten.view.default, (mask, [count]))
    rows = call(_aten.view.default, (call(_aten.constant_pad_nd.default, (flat, [0, -count % 8],
                                                                          0.0)), [-1, 8]))
    powers = call(_aten.pow.Scalar, (2.0, call(_aten.arange.default, (8,),
                                                {"dtype": _tensor_meta(mask).dtype})))
    packed = call(_aten._to_copy.default, (call(_aten.mv.default, (rows, powers)),),
                  {"dtype": torch.uint8})
    packed.meta["tensor_meta"] = _extract_tensor_metadata(
        torch.empty((count + 7) // 8, dtype=torch.uint8))
    return packed


def _bit_table(graph, dtype):
    """A 256 x 8 table: row b holds the bits of byte b as 0.0/1.0 in `dtype`."""
    call = graph.call_function
    codes = call(_aten.unsqueeze.default, (call(_aten.arange.default, (256,),
                                                {"dtype": torch.int64}), 1))
    bits = call(_aten.bitwise_and.Scalar,
                (call(_aten.bitwise_right_shift.Tensor,
                      (codes, call(_aten.arange.default, (8,), {"dtype": torch.int64}))), 1))
    return call(_aten._to_copy.default, (bits,), {"dtype": dtype})


def _unpack_bits(graph, packed, shape, table):
    """The inverse of _pack_bits through _bit_table: the mask of `shape`."""
    call = graph.call_function
    count = int(torch.Size(shape).numel())
    rows = call(_aten.embedding.default,
                (table, call(_aten._to_copy.default, (packed,), {"dtype": torch.int64})))
    flat = call(_aten.slice.Tensor, (call(_aten.view.default, (rows, [-1])), 0, 0, count))
    return call(_aten.view.default, (flat, list(shape)))


def _save_draws_as_bits(fwd_module, bwd_module, num_fwd_outputs):
    """Saved 0/1 random draws (dropout's) cross from forward to backward packed one bit per
    element, and are unpacked exactly at the start of the backward pass."""
    fwd_out = next(n for n in fwd_module.graph.nodes if n.op == "output")
    outs = list(fwd_out.args[0])
    # The backward module's inputs: the saved values, in forward-output order, then tangents
    # (fx calls graph inputs "placeholder" nodes).
    bwd_inputs = [n for n in bwd_module.graph.nodes if n.op == "placeholder"]
    first_op = next(n for n in bwd_module.graph.nodes if n.op != "placeholder")
    tables = {}  # one bit table per mask dtype, built once at the start of the backward pass
    for k in range(num_fwd_outputs, len(outs)):
        value = outs[k]
        if not (isinstance(value, fx.Node) and value.target in _RANDOM_DRAWS):
            continue
        meta = _tensor_meta(value)
        with fwd_module.graph.inserting_before(fwd_out):
            outs[k] = _pack_bits(fwd_module.graph, value, int(meta.shape.numel()))
        saved_draw = bwd_inputs[k - num_fwd_outputs]
        readers = list(saved_draw.users)
        with bwd_module.graph.inserting_before(first_op):  # before: keeps the nodes' order
            if meta.dtype not in tables:
                tables[meta.dtype] = _bit_table(bwd_module.graph, meta.dtype)
            restored = _unpack_bits(bwd_module.graph, saved_draw, meta.shape, tables[meta.dtype])
        for reader in readers:
            reader.replace_input_with(saved_draw, restored)
    fwd_out.args = (tuple(outs),)
    fwd_module.recompile()
    bwd_module.recompile()


class EchoPartitioner:
    """A partition_fn for aot_module/aot_function. `last` holds what memfold said about the
    most recent graph: the strategy kept, the planned bytes, the aten ops it did not know
    (also logged at INFO level on the "memfold.torch" logger)."""

    def __init__(self, strategy="echo", planner="mxnet"):
        self.strategy = strategy
        self.planner = planner
        self.last = None

    def __call__(self, joint_module, joint_inputs):
        export = JointExport(joint_module)
        try:
            plan = _memfold.plan_joint(export.text(), self.strategy, self.planner)
        except ValueError as refusal:  # e.g. a dtype memfold cannot plan: train as PyTorch would
            _LOG.warning("memfold cannot plan this graph (%s); using AOTAutograd's default "
                         "partition", refusal)
            self.last = {"refused": str(refusal), "chosen_strategy": "default partition",
                         "recomputed": [], "recomputed_nodes": 0}
            return default_partition(joint_module, joint_inputs)
        recomputed = {export.nodes[k] for k in plan["recomputed"]}
        graph = joint_module.graph
        _rerun_batch_norms_without_statistics(graph, recomputed, export.forward)
        _recompute_scaled_draws(graph, recomputed, export.forward)
        graph.lint()
        joint_module.recompile()
        saved = _saved_values(graph, export.forward, recomputed)
        num_fwd_outputs = len(_extract_fwd_bwd_outputs(joint_module)[0])
        fwd_module, bwd_module = _extract_fwd_bwd_modules(joint_module, saved)
        _save_draws_as_bits(fwd_module, bwd_module, num_fwd_outputs)
        self.last = plan
        _LOG.info("memfold Echo partition: %s graph kept, %d forward nodes recomputed, %d of %d "
                  "forward nodes translated; kept as they are (unknown to memfold): %s",
                  plan["chosen_strategy"], len(plan["recomputed"]), plan["mapped_forward"],
                  plan["forward_nodes"], plan["opaque_forward"] or "none")
        return fwd_module, bwd_module


def echo_partition(joint_module, joint_inputs):
    """memfold's Echo as AOTAutograd's partition_fn (see the module docstring)."""
    return EchoPartitioner()(joint_module, joint_inputs)


def _keep_graph(fx_module, _inputs):
    return make_boxed_func(fx_module)


def compile(model, partitioner=None):
    """`model` wrapped to train with Echo's partition (same call signature as the model)."""
    return aot_module(model, fw_compiler=_keep_graph, bw_compiler=_keep_graph,
                      partition_fn=partitioner or EchoPartitioner())


def export(model, inputs, path, name=None):
    """Traces the training step of `model` on `inputs` (a tuple) and writes its joint graph to
    `path` for `memfold train PATH --strategy echo --plan-only`. Returns the export."""
    captured = {}

    def capture(joint_module, joint_inputs):
        captured["export"] = JointExport(joint_module, name or type(model).__name__)
        return default_partition(joint_module, joint_inputs)

    # AOTAutograd traces at the first call; a copy keeps the model's own state (batch-norm
    # statistics) untouched.
    compiled = aot_module(copy.deepcopy(model), fw_compiler=_keep_graph,
                          bw_compiler=_keep_graph, partition_fn=capture)
    compiled(*inputs)
    with open(path, "w") as f:
        f.write(captured["export"].text())
    return captured["export"]

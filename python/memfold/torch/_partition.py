"""memfold's Echo as AOTAutograd's partitioner, never worse than PyTorch's own.

AOTAutograd traces a model's forward and backward passes into one joint fx graph and asks a
partitioner which forward values the forward pass saves for the backward pass; whatever the
backward pass needs and was not saved is recomputed there. EchoPartitioner answers:

1. the joint graph is rewritten so that more can be recomputed exactly (_rewrite.py) and
   exported in memfold's joint-graph format (_export.py);
2. memfold's C++ core chooses the forward nodes to recompute: Echo's choice (Algorithm 1 of
   the Echo paper, its footprint estimated over the whole graph with reuse), Mirror's blanket
   one, and the one memfold keeps after planning all three (the paper's never-worse check);
3. each choice becomes a partition (the forward module saves every value the backward pass or
   a recomputed node reads that is not recomputed itself; saved boolean masks cross packed, one
   bit each), and so do AOT's default partition and its min-cut partition;
4. the partition that saves the fewest bytes (same accounting for all: _graph.saved_bytes) is
   returned, ties going to PyTorch's own, so memfold never keeps more than
   min(default, min-cut). `last` says which was kept and why.

Every partition computes the same results: the backward pass re-runs the same operators on the
same inputs, so outputs and gradients are bit-identical to the default partition's.
Cost: one export, one memfold planning and five extractions per traced graph, at its first call.
"""

import dataclasses
import logging
import operator

import torch
from torch._functorch.partitioners import (_extract_fwd_bwd_modules, default_partition,
                                           is_not_collective, is_sym_node,
                                           min_cut_rematerialization_partition)

from memfold import _memfold
from memfold.torch import _explain, _export, _graph, _rewrite

_LOG = logging.getLogger("memfold.torch")
_WARNED = set()  # operators already reported as unknown (once per process)


@dataclasses.dataclass
class Candidate:
    """One partition of the joint graph and what it keeps."""
    name: str
    fwd: torch.fx.GraphModule
    bwd: torch.fx.GraphModule
    saved_bytes: int
    recomputed: list  # (name, target) of the forward calls the backward module runs again
    recompute_flops: float


def _candidate(name, fwd, bwd, num_fwd_outputs, forward):
    again = [n for n in bwd.graph.nodes
             if n.op == "call_function" and n.name in forward and _graph.viewed(n) is None and
             n.target is not operator.getitem]
    return Candidate(name, fwd, bwd, _graph.saved_bytes(fwd, num_fwd_outputs),
                     sorted((n.name, _export.target_name(n)) for n in again),
                     sum(_export.cost(n)[0] for n in again))


def _has_effects(node):
    """What dead-code elimination must keep: collectives and in-place updates. A random draw
    nobody reads goes (the extraction copies one into the backward module whenever its input
    is saved there; run, it would advance the generator and change the next step's draws)."""
    return (node.op in ("placeholder", "output") or not is_not_collective(node) or
            _export.mutates(node.target))


def _is_recomputed(node, recomputed):
    return node in recomputed or (node.target is operator.getitem and
                                  node.args[0] in recomputed)


def saved_values_for(graph, forward, recomputed):
    """(saved tensors, saved symbols): the forward values the backward pass reads, directly or
    through recomputed nodes, that are not recomputed themselves (memfold's ClonedNodes)."""
    saved, symbols, seen = [], [], set()

    def need(node):
        if node in seen or node.name not in forward:
            return
        seen.add(node)
        if is_sym_node(node):
            symbols.append(node)
        elif _is_recomputed(node, recomputed) or _graph.tensor_value(node) is None:
            for arg in node.all_input_nodes:  # a tuple is never saved: its producer re-runs
                need(arg)
        else:
            saved.append(node)

    for node in graph.nodes:
        if node.op == "call_function" and node.name not in forward:
            for arg in node.all_input_nodes:
                need(arg)
    order = {n: k for k, n in enumerate(graph.nodes)}
    return sorted(saved, key=order.get), sorted(symbols, key=order.get)


class EchoPartitioner:
    """A partition_fn for aot_module / aot_function / aot_autograd.

    strategy  "echo": the candidate that saves the fewest bytes; "default", "min-cut",
              "mirror" or "budget" force that one.
    budget    None, or the bytes the forward pass may save for the backward pass (an int) or
              a fraction of what AOT's default partition saves (a float): then the candidate
              that fits with the fewest recomputed FLOPs is kept (memfold's budget choice among
              them: Echo's cheap recomputations first, dearer ones only as the budget demands),
              the smallest when none fits.

    `log` holds what was decided for every graph partitioned, `last` the most recent: the
    candidates' saved bytes and recomputed FLOPs, whose partition was kept and why, what it
    recomputes, and what memfold kept as it was (explain() prints it)."""

    def __init__(self, strategy="echo", planner="mxnet", budget=None):
        self.strategy = strategy
        self.planner = planner
        self.budget = budget
        self.log = []

    @property
    def last(self):
        return self.log[-1] if self.log else None

    def __call__(self, joint_module, joint_inputs, *, num_fwd_outputs, **kwargs):
        pytorch = self._pytorch_candidates(joint_module, joint_inputs, num_fwd_outputs, kwargs)
        budget = self._budget_bytes(pytorch[0].saved_bytes)
        ours, report = self._memfold_candidates(joint_module, num_fwd_outputs, kwargs, budget)
        candidates = pytorch + ours
        wanted = [c for c in candidates if self.strategy in ("echo", c.name)] or candidates
        chosen = self._choose(wanted, budget)
        report.update(
            chosen=chosen.name, budget=budget,
            saved_by_reason=_explain.saved_by_reason(chosen.fwd, num_fwd_outputs),
            saved_bytes={c.name: c.saved_bytes for c in candidates},
            recompute_flops={c.name: c.recompute_flops for c in candidates},
            recomputed=chosen.recomputed, why=self._why(chosen, candidates, budget))
        self.log.append(report)
        _LOG.info("memfold.torch: kept the %s partition (%s)", chosen.name, report["why"])
        return chosen.fwd, chosen.bwd

    def _budget_bytes(self, default_bytes):
        if self.budget is None:
            return None
        if isinstance(self.budget, float):
            return int(self.budget * default_bytes)
        return int(self.budget)

    @staticmethod
    def _choose(candidates, budget):
        """The fewest saved bytes (ties: the first, PyTorch's); under a budget, the fewest
        recomputed FLOPs among those that fit."""
        fits = [c for c in candidates if budget is not None and c.saved_bytes <= budget]
        if fits:
            return min(fits, key=lambda c: (c.recompute_flops, c.saved_bytes))
        return min(candidates, key=lambda c: c.saved_bytes)

    @staticmethod
    def _why(chosen, candidates, budget):
        others = ", ".join("%s %d" % (c.name, c.saved_bytes) for c in candidates if c is not chosen)
        if budget is not None and chosen.saved_bytes <= budget:
            return ("fits the budget of %d bytes (saves %d) with the fewest recomputed FLOPs "
                    "(%.3g); others save %s" % (budget, chosen.saved_bytes,
                                                chosen.recompute_flops, others))
        return "saves the fewest bytes for the backward pass, %d; others save %s" % (
            chosen.saved_bytes, others)

    @staticmethod
    def _pytorch_candidates(joint_module, joint_inputs, num_fwd_outputs, kwargs):
        result = []
        for name, partition in (("default", default_partition),
                                ("min-cut", min_cut_rematerialization_partition)):
            joint = _graph.copy_module(joint_module)
            forward = _graph.forward_names(joint)
            fwd, bwd = partition(joint, joint_inputs, num_fwd_outputs=num_fwd_outputs, **kwargs)
            result.append(_candidate(name, fwd, bwd, num_fwd_outputs, forward))
        return result

    def _memfold_candidates(self, joint_module, num_fwd_outputs, kwargs, budget):
        joint = _graph.copy_module(joint_module)
        _rewrite.express_dropout_outputs(joint)
        forward = _graph.forward_names(joint)
        report = {"refused": None, "failed": {}, "kept_forward": {}, "unknown": {}}
        try:
            export = _export.JointExport(joint, forward, num_fwd_outputs)
            text = export.text()
            choices = dict(_memfold.recompute_choices(text, -1 if budget is None else budget))
            report["estimated_bytes"] = dict(choices.pop("kept_bytes"))
            plan = _memfold.plan_joint(text, "echo", self.planner)
        except ValueError as refusal:  # a dtype or symbolic shape memfold cannot plan
            _LOG.warning("memfold cannot plan this graph (%s); keeping PyTorch's partition",
                         refusal)
            report["refused"] = str(refusal)
            return [], report
        report.update(kept_forward=export.kept, unknown=export.unknown,
                      memfold_kept=plan["chosen_strategy"], planned_bytes=plan["total_bytes"])
        self._warn_unknown(export.unknown)
        choices["memfold"] = plan["recomputed"]
        result, seen = [], set()
        for name in ("echo", "mirror", "memfold", "budget"):
            key = tuple(choices.get(name, ()))
            if not key or key in seen:
                continue
            seen.add(key)
            recomputed = {export.nodes[k] for k in key}
            try:
                result.append(self._build(joint, recomputed, name, num_fwd_outputs, kwargs))
            except Exception as failure:  # never break a user's training: PyTorch's stand
                report["failed"][name] = "%s: %s" % (type(failure).__name__, failure)
                _LOG.warning("memfold.torch: building the %s partition failed (%s), a memfold "
                             "bug; the others stand", name, report["failed"][name])
        return result, report

    @staticmethod
    def _build(joint_module, recomputed_nodes, name, num_fwd_outputs, kwargs):
        """The partition that recomputes `recomputed_nodes` (nodes of `joint_module`)."""
        joint = _graph.copy_module(joint_module)
        by_name = {n.name: n for n in joint.graph.nodes}
        recomputed = {by_name[n.name] for n in recomputed_nodes}
        forward = _graph.forward_names(joint)
        for copy_ in _rewrite.rerun_batch_norms_without_statistics(joint.graph, recomputed,
                                                                   forward):
            forward.add(copy_.name)
            forward.update(u.name for u in copy_.users)
        joint.graph.lint()
        joint.recompile()
        saved, symbols = saved_values_for(joint.graph, forward, recomputed)
        fwd, bwd = _extract_fwd_bwd_modules(
            joint, saved, symbols, num_fwd_outputs=num_fwd_outputs,
            static_lifetime_input_nodes=kwargs.get("static_lifetime_input_nodes"))
        for module in (fwd, bwd):
            module.graph.eliminate_dead_code(is_impure_node=_has_effects)
            module.recompile()
        _rewrite.run_recomputation_late(bwd, forward)
        _rewrite.pack_saved_masks(fwd, bwd, num_fwd_outputs)
        return _candidate(name, fwd, bwd, num_fwd_outputs, forward)

    @staticmethod
    def _warn_unknown(unknown):
        new = sorted(set(unknown) - _WARNED)
        if new:
            _WARNED.update(new)
            _LOG.warning("memfold.torch: the cost of %s is unknown to memfold; kept, never "
                         "recomputed", ", ".join(new))


def echo_partition(joint_module, joint_inputs, **kwargs):
    """memfold's Echo as AOTAutograd's partition_fn (see EchoPartitioner)."""
    return EchoPartitioner()(joint_module, joint_inputs, **kwargs)

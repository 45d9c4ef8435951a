"""What memfold decided for a model, in words: explain(model, *inputs) traces one training step
of a copy of the model (AOTAutograd partitions at the first call), and the Explanation it
returns (and prints) says, per traced graph, which partition was kept and why, the bytes each
candidate saves for the backward pass (AOT's default, min-cut, memfold's), what is recomputed,
and why each saved value was not: compute-heavy (memfold never re-runs those unless a budget
demands it), must not run twice (random draws), unknown cost, or cheap but not worth it (Echo's
estimate says keeping it costs no more). O(one trace + one partition per graph).
"""

import copy
import dataclasses
import operator

from torch import fx

from memfold.torch import _export, _graph

# FLOPs per byte moved from which memfold counts an operator compute-heavy (recompute.h).
_HEAVY_INTENSITY = 1.0


def _call(owner):
    """The call that computes `owner` (a getitem stands for its tuple's producer)."""
    return owner.args[0] if owner.target is operator.getitem else owner


def _reason(call):
    flops, recomputable, known = _export.cost(call)
    if not known:
        return "unknown cost"
    if not recomputable:
        return "must not run twice"
    moved = sum(_graph.nbytes(n) for n in [*_export.value_nodes(call), *call.all_input_nodes])
    if moved and flops / moved >= _HEAVY_INTENSITY:
        return "compute-heavy"
    return "cheap, kept by choice"


def saved_by_reason(fwd_module, num_fwd_outputs):
    """{reason: {target: [count, bytes]}} over the distinct storages a forward module saves."""
    owners = {_graph.storage(n) for n in _graph.saved_nodes(fwd_module, num_fwd_outputs)
              if isinstance(n, fx.Node) and _graph.tensor_value(n) is not None}
    table = {}
    for owner in owners:
        if owner.op == "placeholder":
            continue  # a graph input: the caller holds it, it costs the partition nothing
        call = _call(owner)
        row = table.setdefault(_reason(call), {}).setdefault(_export.target_name(call), [0, 0])
        row[0] += 1
        row[1] += _graph.nbytes(owner)
    return table


def _mib(n):
    return "%.2f MiB" % (n / 2**20) if n >= 2**16 else "%d B" % n


def _counted(pairs):
    counts = {}
    for _name, target in pairs:
        short = target.replace("aten.", "").replace(".default", "")
        counts[short] = counts.get(short, 0) + 1
    return ", ".join("%d x %s" % (c, t) for t, c in sorted(counts.items(), key=lambda i: -i[1]))


@dataclasses.dataclass
class Explanation:
    model: str
    graphs: list  # the partitioner's report per traced graph

    def __str__(self):
        lines = ["memfold.torch.explain: %s, %d traced graph(s)" % (self.model, len(self.graphs))]
        for k, g in enumerate(self.graphs):
            saved = g["saved_bytes"]
            kept = saved[g["chosen"]]
            lines.append("graph %d: kept the %s partition: %s" % (k, g["chosen"], g["why"]))
            for name in ("default", "min-cut"):
                if name in saved and kept:
                    lines.append("  %-8s saves %s, %.2fx of what is kept" % (
                        name, _mib(saved[name]), saved[name] / kept))
            if g.get("refused"):
                lines.append("  memfold could not plan this graph: %s" % g["refused"])
            lines.append("  recomputed in the backward pass (%d calls): %s" % (
                len(g["recomputed"]), _counted(g["recomputed"]) or "nothing"))
            for reason, targets in sorted(g.get("saved_by_reason", {}).items()):
                total = sum(b for _c, b in targets.values())
                detail = ", ".join("%d x %s" % (c, t.replace("aten.", "").replace(".default", ""))
                                   for t, (c, _b) in sorted(targets.items(),
                                                             key=lambda i: -i[1][1]))
                lines.append("  saved, %s: %s (%s)" % (reason, _mib(total), detail))
            if g.get("unknown"):
                lines.append("  unknown to memfold (kept, never recomputed): %s" %
                             ", ".join(sorted(g["unknown"])))
        return "\n".join(lines)


def explain(model, *inputs, partitioner=None, file=None):
    """Partitions one training step of a copy of `model` on `inputs` and explains it (printed
    to `file` unless it is None; the Explanation is returned either way)."""
    from memfold.torch import EchoPartitioner, compile as memfold_compile
    partitioner = partitioner or EchoPartitioner()
    memfold_compile(copy.deepcopy(model), partitioner)(*inputs)
    explanation = Explanation(type(model).__name__, list(partitioner.log))
    if file is not None:
        print(explanation, file=file)
    return explanation

"""Training memory and step time of PyTorch's own options beside memfold's partition
(`make torch-bench`), on the user-style zoo (zoo.py) or any model named there.

Table 1, per model and mode:
  eager         the model as written;
  aot-default   AOTAutograd with its default partition (the reference);
  aot-mincut    AOTAutograd with min_cut_rematerialization_partition;
  torch-budget  min-cut under torch._functorch.config.activation_memory_budget = 0.5;
  echo          memfold.torch's partition (never more than min(default, min-cut));
  echo-budget   memfold.torch with a budget of half the default's saved bytes.
Measured per mode from the CPU allocator's events (torch.profiler, profile_memory=True): saved
activations (bytes live when the backward pass starts, above those live before the step) and
the peak over the step (same origin); the median step time over interleaved rounds (all modes in
one process); whether the output and every gradient equal AOT-default's bit for bit.

Table 2 (--budgets): PyTorch's memory-budget partitioner against memfold's budget choice at
equal memory. For each budget fraction b, PyTorch's partition is made first and its saved bytes
measured (memfold.torch's accounting, the same for both); memfold is then given exactly that
many bytes. Both rows: saved bytes, recomputed FLOPs, median step time.
"""

import argparse
import copy
import statistics
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile, record_function
import torch._functorch.config as functorch_config
from functorch.compile import (aot_module, default_partition, make_boxed_func,
                               min_cut_rematerialization_partition)

import memfold.torch as mt
from memfold.torch import _export, _graph
from zoo import BENCH, ZOO


def _keep(fx_module, _inputs):
    return make_boxed_func(fx_module)


class Measured:
    """Wraps a partition function and records what its forward module saves (memfold.torch's
    accounting) and the FLOPs its backward module re-runs."""

    def __init__(self, partition, budget=None):
        self.partition, self.budget = partition, budget
        self.saved = self.flops = 0

    def __call__(self, joint_module, joint_inputs, **kwargs):
        forward = _graph.forward_names(joint_module)
        if self.budget is None:
            fwd, bwd = self.partition(joint_module, joint_inputs, **kwargs)
        else:
            with functorch_config.patch(activation_memory_budget=self.budget):
                fwd, bwd = self.partition(joint_module, joint_inputs, **kwargs)
        self.saved += _graph.saved_bytes(fwd, kwargs["num_fwd_outputs"])
        self.flops += sum(_export.cost(n)[0] for n in bwd.graph.nodes
                          if n.op == "call_function" and n.name in forward)
        return fwd, bwd


def partitions():
    return {"aot-default": lambda: Measured(default_partition),
            "aot-mincut": lambda: Measured(min_cut_rematerialization_partition),
            "torch-budget": lambda: Measured(min_cut_rematerialization_partition, budget=0.5),
            "echo": lambda: Measured(mt.EchoPartitioner()),
            "echo-budget": lambda: Measured(mt.EchoPartitioner(budget=0.5))}


def build(factory, mode, partition=None):
    model, inputs, _ = factory()
    if mode == "eager":
        return model, model, inputs, None
    partition = partition or partitions()[mode]()
    runner = aot_module(model, fw_compiler=_keep, bw_compiler=_keep, partition_fn=partition)
    return model, runner, inputs, partition


def step(model, runner, inputs):
    model.zero_grad(set_to_none=True)
    torch.manual_seed(1)
    out = runner(*inputs)
    out.float().pow(2).mean().backward()
    return out


def memory(model, runner, inputs):
    """(bytes live between forward and backward, peak bytes over the step), both above what was
    live when the step started, from the CPU allocator's events (torch.profiler)."""
    model.zero_grad(set_to_none=True)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        torch.manual_seed(1)
        loss = runner(*inputs).float().pow(2).mean()
        with record_function("memfold::backward"):
            loss.backward()
    events = prof.profiler.kineto_results.events()
    backward_start = next(e.start_ns() for e in events if e.name() == "memfold::backward")
    deltas = sorted((e.start_ns(), e.nbytes()) for e in events if e.name() == "[memory]")
    live = peak = saved = 0
    for start, delta in deltas:
        live += delta
        peak = max(peak, live)
        if start < backward_start:
            saved = live
    return saved, peak


def same(a, b):
    return all((x is None and y is None) or (x is not None and y is not None and torch.equal(x, y))
               for x, y in zip(a, b))


def timed(built, rounds):
    """Median step time per mode, rounds interleaved so machine noise hits every mode alike."""
    times = {mode: [] for mode in built}
    for _ in range(rounds):
        for mode, (model, runner, inputs, _p) in built.items():
            start = time.perf_counter()
            step(model, runner, inputs)
            times[mode].append(time.perf_counter() - start)
    return {mode: 1000 * statistics.median(t) for mode, t in times.items()}


def measure(factory, modes, rounds):
    built = {mode: build(factory, mode) for mode in modes}
    rows = {}
    for mode, (model, runner, inputs, _p) in list(built.items()):
        try:
            step(model, runner, inputs)  # trace and warm up
        except RuntimeError as failure:  # PyTorch's budget re-runs a batch norm's statistics
            rows[mode] = {"failed": str(failure).split(".")[0]}
            del built[mode]
            continue
        out = step(model, runner, inputs).detach()
        rows[mode] = {"out": out, "grads": [p.grad for p in model.parameters()]}
        rows[mode]["saved"], rows[mode]["peak"] = memory(model, runner, inputs)
    for mode, ms in timed(built, rounds).items():
        rows[mode]["ms"] = ms
    reference = rows["aot-default"]
    for row in rows.values():
        if "failed" in row:
            continue
        row["equal"] = torch.equal(row["out"], reference["out"]) and same(row["grads"],
                                                                          reference["grads"])
    return rows


def mib(n):
    return "%.2f MiB" % (n / 2**20)


def main_table(names, modes, rounds):
    print("| model | mode | saved activations | vs AOT default | peak live | step ms "
          "| vs AOT default | bit-equal to AOT default |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for name in names:
        rows = measure(MODELS[name], modes, rounds)
        base = rows["aot-default"]
        for mode in modes:
            r = rows[mode]
            if "failed" in r:
                print("| %s | %s | fails: %s | | | | | |" % (name, mode, r["failed"]))
                continue
            print("| %s | %s | %s | %.1f %% | %s | %.1f | %.2fx | %s |" % (
                name, mode, mib(r["saved"]), 100.0 * r["saved"] / max(1, base["saved"]),
                mib(r["peak"]), r["ms"], r["ms"] / base["ms"],
                "reference" if mode == "aot-default" else "yes" if r["equal"] else "no"))
        sys.stdout.flush()


def budget_table(names, fractions, rounds):
    print("| model | budget | partitioner | saved (memfold.torch's accounting) | recomputed "
          "GFLOP | step ms | bit-equal to AOT default |")
    print("|---|---:|---|---:|---:|---:|---|")
    for name in names:
        for fraction in fractions:
            torch_partition = Measured(min_cut_rematerialization_partition, budget=fraction)
            built = {"torch": build(MODELS[name], "torch-budget", torch_partition)}
            try:
                step(*built["torch"][:3])  # traces: PyTorch's saved bytes are known from here on
            except RuntimeError as failure:  # e.g. a recomputed batch norm's statistics
                print("| %s | %.2f | PyTorch activation_memory_budget | fails: %s | | | |" % (
                    name, fraction, str(failure).split(".")[0]))
                continue
            ours = mt.EchoPartitioner(budget=max(1, torch_partition.saved))
            built["memfold"] = build(MODELS[name], "echo-budget", Measured(ours))
            built["default"] = build(MODELS[name], "aot-default")
            results = {m: step(*b[:3]).detach() for m, b in built.items()}
            grads = {m: [p.grad for p in b[0].parameters()] for m, b in built.items()}
            ms = timed(built, rounds)
            for who in ("torch", "memfold"):
                p = built[who][3]
                equal = torch.equal(results[who], results["default"]) and same(
                    grads[who], grads["default"])
                print("| %s | %.2f | %s | %s | %.3f | %.1f | %s |" % (
                    name, fraction, "PyTorch activation_memory_budget" if who == "torch"
                    else "memfold budget = PyTorch's bytes", mib(p.saved), p.flops / 1e9,
                    ms[who], "yes" if equal else "no"))
            sys.stdout.flush()


MODELS = dict(ZOO, **BENCH)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(ZOO),
                        help="names from zoo.py (ZOO, or the larger BENCH models)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--modes", default="eager,aot-default,aot-mincut,torch-budget,echo,"
                                           "echo-budget", help="comma-separated; aot-default is "
                                                               "the reference")
    parser.add_argument("--budgets", default="",
                        help="comma-separated budget fractions: table 2 instead of table 1")
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    if args.budgets:
        budget_table(args.models, [float(b) for b in args.budgets.split(",")], args.rounds)
        return
    modes = args.modes.split(",")
    if "aot-default" not in modes:
        parser.error("--modes must include aot-default, the reference")
    main_table(args.models, modes, args.rounds)


if __name__ == "__main__":
    main()

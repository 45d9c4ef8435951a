"""Side-by-side training memory of PyTorch's own options and memfold's Echo partitioner
(`make torch-bench`). For each model (python/bench/models.py) and mode:

  eager       the model as written;
  checkpoint  torch.utils.checkpoint around each block (models.py names them);
  aot-default AOTAutograd with default_partition (saves what eager saves);
  aot-mincut  AOTAutograd with min_cut_rematerialization_partition;
  aot-echo    AOTAutograd with memfold.torch's Echo partition.

Measured per mode, from the CPU allocator's events (torch.profiler, profile_memory=True):
saved activation bytes (what the forward pass leaves allocated for the backward pass: the
bytes live when backward starts, above those live before the step) and the peak live bytes
over the step (same origin); step time (median of interleaved rounds, all modes in one process)
and whether the output and every gradient equal AOT-default's bit for bit (same seed).
"""

import argparse
import copy
import statistics
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils.checkpoint import checkpoint
from functorch.compile import (aot_module, default_partition, make_boxed_func,
                               min_cut_rematerialization_partition)

import memfold.torch as mt
from models import MODELS, build as build_model


def _keep(fx_module, _inputs):
    return make_boxed_func(fx_module)


def _aot(model, partition):
    return aot_module(model, fw_compiler=_keep, bw_compiler=_keep, partition_fn=partition)


class Checkpointed(torch.nn.Module):
    """Runs a block under torch.utils.checkpoint (re-entrant, PyTorch 1.13's default)."""

    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, *args, **kwargs):
        if not any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            return self.block(*args, **kwargs)  # no gradient flows in: nothing to checkpoint
        return checkpoint(lambda *tensors: self.block(*tensors, **kwargs), *args)


def _with_checkpoints(model, blocks):
    names = {id(b) for b in blocks}
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if id(child) in names:
                setattr(parent, name, Checkpointed(child))
    return model


def build(name, mode):
    torch.manual_seed(0)
    model, inputs, blocks = build_model(name)
    if mode == "eager":
        return model, model, inputs
    if mode == "checkpoint":
        return model, _with_checkpoints(model, blocks), inputs
    partition = {"aot-default": default_partition,
                 "aot-mincut": min_cut_rematerialization_partition,
                 "aot-echo": mt.EchoPartitioner()}[mode]
    return model, _aot(model, partition), inputs


def output_and_loss(model, runner, inputs):
    """The forward pass of one training step (same seed every time): output and loss."""
    model.zero_grad(set_to_none=True)
    torch.manual_seed(1)
    out = runner(*inputs)
    return out, out.float().pow(2).mean()


def step(model, runner, inputs):
    out, loss = output_and_loss(model, runner, inputs)
    loss.backward()
    return out


def memory(model, runner, inputs):
    """(bytes live between forward and backward, peak bytes over the step), both above what was
    live when the step started, from the CPU allocator's events (torch.profiler). The output is
    not held past the loss, as in a training loop."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        loss = output_and_loss(model, runner, inputs)[1]
        with record_function("memfold::backward"):
            loss.backward()
    events = prof.profiler.kineto_results.events()  # every allocation and free, timed
    backward_start = next(e.start_us() for e in events if e.name() == "memfold::backward")
    deltas = sorted((e.start_us(), e.nbytes()) for e in events if e.name() == "[memory]")
    live = peak = saved = 0
    for start, delta in deltas:
        live += delta
        peak = max(peak, live)
        if start < backward_start:
            saved = live
    return saved, peak


def gradients(model):
    return [p.grad for p in model.parameters()]


def same(a, b):
    return all((x is None and y is None) or (x is not None and y is not None and torch.equal(x, y))
               for x, y in zip(a, b))


def measure(name, modes, rounds):
    built = {mode: build(name, mode) for mode in modes}
    rows = {}
    for mode, (model, runner, inputs) in built.items():
        step(model, runner, inputs)  # trace / warm up
        out = step(model, runner, inputs).detach()
        rows[mode] = {"out": out, "grads": [g.clone() for g in gradients(model)],
                      "times": []}
        rows[mode]["saved"], rows[mode]["peak"] = memory(model, runner, inputs)
    for _ in range(rounds):  # interleaved, so machine noise hits every mode alike
        for mode, (model, runner, inputs) in built.items():
            start = time.perf_counter()
            step(model, runner, inputs)
            rows[mode]["times"].append(time.perf_counter() - start)
    reference = rows.get("aot-default")
    for mode, row in rows.items():
        row["ms"] = 1000 * statistics.median(row["times"])
        row["equal"] = (reference is not None and torch.equal(row["out"], reference["out"]) and
                        same(row["grads"], reference["grads"]))
    return rows


def mib(n):
    return "%.2f MiB" % (n / 2**20)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(MODELS),
                        help="names from models.py, or torchvision:NAME for any torchvision "
                             "classifier (64x64, batch 8)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--modes", default="eager,checkpoint,aot-default,aot-mincut,aot-echo",
                        help="comma-separated; aot-default is the reference")
    args = parser.parse_args()
    modes = args.modes.split(",")
    if "aot-default" not in modes:
        parser.error("--modes must include aot-default, the reference")
    torch.set_num_threads(max(1, torch.get_num_threads()))
    print("| model | mode | saved activations | vs AOT default | peak live | step ms "
          "| vs AOT default | bit-equal to AOT default |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for name in args.models:
        rows = measure(name, modes, args.rounds)
        base = rows["aot-default"]
        for mode in modes:
            r = rows[mode]
            print("| %s | %s | %s | %.1f %% | %s | %.1f | %.2fx | %s |" % (
                name, mode, mib(r["saved"]), 100.0 * r["saved"] / max(1, base["saved"]),
                mib(r["peak"]), r["ms"], r["ms"] / base["ms"],
                "reference" if mode == "aot-default" else "yes" if r["equal"] else "no"))
        sys.stdout.flush()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Synthetic placement problems in MiniMalloc's CSV (id,lower,upper,size), deterministic by seed,
for `memfold place` benchmarks (docs/placement.md).

  training N SEED   a training step: N/2 forward activations, each live from its layer's forward
                    step to the same layer's backward step (nested lifetimes, like the stash of
                    a real training graph), and as many short-lived temporaries (gradients,
                    workspaces) of one or two steps. Sizes span 1 KiB .. 4 MiB, multiples of 64.
  packing N SEED    N buffers cut from a full rectangle by random guillotine cuts: a plan with
                    no gap exists, so the optimum equals the live-bytes bound.
"""
import random
import sys


def training(n, rng):
    layers = n // 2
    rows = []
    for layer in range(layers):  # activation: forward step `layer`, backward step 2*layers-1-layer
        size = 64 * rng.randint(16, 65536) if rng.random() < 0.2 else 64 * rng.randint(16, 4096)
        rows.append((layer, 2 * layers - layer, size))
    for k in range(n - layers):  # temporaries anywhere in the step
        start = rng.randrange(0, 2 * layers)
        rows.append((start, start + rng.randint(1, 2), 64 * rng.randint(16, 8192)))
    return rows


def packing(n, rng, steps=4000, height=1 << 20):
    boxes = [(0, steps, 0, height)]
    while len(boxes) < n:
        k = rng.randrange(len(boxes))
        t0, t1, o0, o1 = boxes[k]
        if rng.random() < 0.5 and t1 - t0 > 1:
            cut = rng.randint(t0 + 1, t1 - 1)
            boxes[k] = (t0, cut, o0, o1)
            boxes.append((cut, t1, o0, o1))
        elif o1 - o0 > 1:
            cut = rng.randint(o0 + 1, o1 - 1)
            boxes[k] = (t0, t1, o0, cut)
            boxes.append((t0, t1, cut, o1))
    return [(t0, t1, o1 - o0) for t0, t1, o0, o1 in boxes]


def main():
    kind, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    rows = {"training": training, "packing": packing}[kind](n, rng)
    print("id,lower,upper,size")
    for k, (lower, upper, size) in enumerate(rows):
        print(f"{k},{lower},{upper},{size}")


if __name__ == "__main__":
    main()

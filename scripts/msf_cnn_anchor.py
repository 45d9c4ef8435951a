#!/usr/bin/env python3
"""msf-CNN's own optimizer on the two MobileNet v2 0.35/144 networks (docs/patches.md).

msf-CNN (TinyPART/msf-CNN, NeurIPS 2025) publishes its MBV2-w0.35-r144 points for the network
its analysis models and its TVM models deploy: channels int(c * 0.35), an expansion convolution
in the first block too, no residual adds, a 448-channel head (memfold's
`zoo:msf_mobilenet_v2`). This runs its minimise-peak-memory-within-an-overhead-factor solver
(problem P1) on that network and on the published one (`zoo:mobilenet_v2,alpha=0.35,res=144`:
channels rounded to multiples of 8, 1280 head channels; its analysis has no way to express the
residual adds, so their inputs are not counted). Both figures exclude the network input and the
last block's output, as msf-CNN's analysis does.

Usage: scripts/msf_cnn_anchor.py PATH/TO/msf-CNN [F ...]   (a checkout of TinyPART/msf-CNN;
       its requirements: numpy)
"""
import contextlib
import io
import os
import sys

import numpy as np


def published_layers(blocks):
    """The published MobileNet v2 0.35/144 as msf-CNN's layer objects."""
    conv, depthwise = blocks.ConvLayer, blocks.DepthwiseConv
    layers = [conv(16, 3, 2, 1)]
    in_c = 16
    # (expansion t, channels c, repeats n, first stride s), channels already at width 0.35.
    for t, c, n, s in [(1, 8, 1, 1), (6, 8, 2, 2), (6, 16, 3, 2), (6, 24, 4, 2), (6, 32, 3, 1),
                       (6, 56, 3, 2), (6, 112, 1, 1)]:
        for r in range(n):
            if t != 1:
                layers.append(conv(in_c * t, 1, 1))
            layers += [depthwise(in_c * t, 3, s if r == 0 else 1, 1), conv(c, 1, 1)]
            in_c = c
    return layers + [conv(1280, 1, 1)]


def solve(analysis, layers, factor):
    """(peak bytes, overhead factor) of msf-CNN's P1 solution within `factor`."""
    with contextlib.redirect_stdout(io.StringIO()):
        network = analysis.solve_P1_and_print_results(layers, np.zeros((144, 144, 3)), factor)
    peak = network.calc_memory_usage(np.zeros((144, 144, 3)), ignore_output=True)
    return peak, network.total_mac / network.total_common_mac


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.path.insert(0, os.path.abspath(sys.argv[1]))
    os.chdir(sys.argv[1])
    import analysis_optimization as analysis  # msf-CNN's module
    from analysis import building_blocks as blocks
    factors = [float(f) for f in sys.argv[2:]] or [1.68]
    networks = [("msf-CNN's MBV2 (zoo:msf_mobilenet_v2)", lambda: analysis.mobilenetv2_layers),
                ("published MBV2 (zoo:mobilenet_v2,alpha=0.35,res=144)",
                 lambda: published_layers(blocks))]
    for name, layers in networks:
        for factor in factors:
            peak, overhead = solve(analysis, layers(), factor)
            print(f"{name}: F <= {factor}: {peak:,.0f} B at {overhead:.3f}")


if __name__ == "__main__":
    main()

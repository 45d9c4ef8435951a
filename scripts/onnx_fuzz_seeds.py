#!/usr/bin/env python3
"""Writes the ONNX seeds of the fuzz corpus (tests/fuzz_corpus/onnx): tiny models, written with
onnx.helper, that reach every family of converter (windows, layouts, matrix products,
normalisation, recurrence, resizing, shape arithmetic, opaque operators). The fuzzer mutates
them; tests/fuzz_replay_test.cc replays them. Run with build/venv/bin/python."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fuzz_corpus", "onnx")
rng = np.random.default_rng(7)


def weight(name, *shape):
    return numpy_helper.from_array(rng.uniform(-1, 1, shape).astype(np.float32), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def save(name, nodes, inputs, outputs, initializers, value_info=(), domains=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers,
                              value_info=list(value_info))
    opsets = [helper.make_opsetid("", 17)] + [helper.make_opsetid(d, 1) for d in domains]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    onnx.checker.check_model(model)
    with open(os.path.join(OUT, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


def tensor(name, *shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape) if shape else None)


def main():
    os.makedirs(OUT, exist_ok=True)
    save("conv_pool_gemm", [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fb"], ["y"], transB=1),
    ], [tensor("x", 1, 3, 8, 8)], [tensor("y", 1, 5)],
        [weight("w", 4, 3, 3, 3), weight("b", 4), weight("fc", 5, 16), weight("fb", 5)])
    save("depthwise_clip_mean", [
        helper.make_node("Conv", ["x", "w"], ["c"], group=3, pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "o", "m", "v"], ["n"]),
        helper.make_node("Clip", ["n", "lo", "hi"], ["r"]),
        helper.make_node("Add", ["r", "x"], ["a"]),
        helper.make_node("GlobalAveragePool", ["a"], ["g"]),
        helper.make_node("Squeeze", ["g", "axes"], ["y"]),
    ], [tensor("x", 1, 3, 6, 6)], [tensor("y", 1, 3)],
        [weight("w", 3, 1, 3, 3), weight("s", 3), weight("o", 3), weight("m", 3),
         numpy_helper.from_array(np.ones(3, np.float32), "v"),
         numpy_helper.from_array(np.array(0, np.float32), "lo"),
         numpy_helper.from_array(np.array(6, np.float32), "hi"), ints("axes", [2, 3])])
    save("attention", [
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "xt"], ["s"]),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "x"], ["o"]),
        helper.make_node("LayerNormalization", ["o", "g", "be"], ["y"], axis=-1),
    ], [tensor("x", 1, 4, 8)], [tensor("y", 1, 4, 8)],
        [weight("wq", 8, 8), weight("g", 8), weight("be", 8)])
    save("gru", [
        helper.make_node("GRU", ["x", "w", "r", "b"], ["y", "h"], hidden_size=4,
                         linear_before_reset=1),
    ], [tensor("x", 3, 1, 2)], [tensor("y", 3, 1, 1, 4), tensor("h", 1, 1, 4)],
        [weight("w", 1, 12, 2), weight("r", 1, 12, 4), weight("b", 1, 24)])
    save("unet_up", [
        helper.make_node("ConvTranspose", ["x", "w"], ["u"], strides=[2, 2]),
        helper.make_node("Resize", ["x", "", "scales"], ["z"], mode="linear",
                         coordinate_transformation_mode="half_pixel"),
        helper.make_node("Concat", ["u", "z"], ["y"], axis=1),
    ], [tensor("x", 1, 2, 3, 3)], [tensor("y", 1, 5, 6, 6)],
        [weight("w", 2, 3, 2, 2),
         numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
    save("shape_arithmetic", [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["f"]),
        helper.make_node("Slice", ["f", "start", "end", "axis1", "step"], ["y"]),
    ], [tensor("x", 2, 3, 4)], [tensor("y", 2, 6)],
        [ints("zero", 0), ints("zero1", [0]), ints("minus1", [-1]), ints("start", [1]),
         ints("end", [100]), ints("axis1", [1]), ints("step", [2])])
    save("opaque", [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Mystery", ["r"], ["m"], domain="com.example"),
        helper.make_node("Sigmoid", ["m"], ["y"]),
    ], [tensor("x", 1, 4)], [tensor("y", 1, 4)], [], value_info=[tensor("m", 1, 4)],
        domains=["com.example"])
    save("lstm", [
        helper.make_node("LSTM", ["x", "w", "r", "b", "", "h0", "c0", "p"], ["y", "h", "c"],
                         hidden_size=3, direction="bidirectional"),
    ], [tensor("x", 4, 2, 2)], [tensor("y", 4, 2, 2, 3), tensor("h", 2, 2, 3),
                                 tensor("c", 2, 2, 3)],
        [weight("w", 2, 12, 2), weight("r", 2, 12, 3), weight("b", 2, 24),
         weight("h0", 2, 2, 3), weight("c0", 2, 2, 3), weight("p", 2, 9)])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes tests/converter_models/: one small model per operator case, built in TensorFlow and
converted by the real TFLite converter in three forms, float32, int8 (full integer, int8 input
and output, a representative dataset) and 16x8 (int16 activations, int8 weights), as a user's
converter run writes them (explicit PADs, QUANTIZE and DEQUANTIZE where the converter puts
them, its scales and zero points). python/tests/test_converter_models.py checks memfold
against TFLM on each. MANIFEST.txt lists each file's TFLite operators, and each form the
converter refuses for a case with the converter's reason.

Deterministic: weights and representative inputs come from fixed seeds. Needs tensorflow-cpu
(`make converter-models` makes build/tf-venv with the pinned version). Usage:
scripts/converter_models.py [OUT_DIR]
"""
import os
import sys

import numpy as np
import tensorflow as tf
from tensorflow.lite.python import schema_py_generated as schema

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "converter_models")
FORMS = ("f32", "i8", "16x8")


def weights(*shape, seed=0):
    return tf.constant(np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32))


def positive(*shape, seed=0):
    return tf.constant(np.random.default_rng(seed).uniform(0.2, 2, shape).astype(np.float32))


def conv(x):
    y = tf.nn.conv2d(x, weights(3, 3, 4, 8), strides=2, padding="SAME")
    return tf.nn.relu(tf.nn.bias_add(y, weights(8, seed=1)))


def depthwise(x):
    y = tf.nn.depthwise_conv2d(x, weights(3, 3, 4, 2), strides=[1, 1, 1, 1], padding="VALID")
    return tf.nn.relu6(y + weights(8, seed=1))


def fully_connected(x):
    return tf.matmul(tf.reshape(x, [1, -1]), weights(8 * 8 * 4, 10)) + weights(10, seed=1)


def transpose_conv(x):
    return tf.nn.conv2d_transpose(x, weights(3, 3, 6, 4), output_shape=[1, 16, 16, 6],
                                  strides=2, padding="SAME")


def padded_conv(x):
    """An explicit PAD before a VALID convolution, as converters write 'same' convolutions."""
    y = tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]])
    return tf.nn.conv2d(y, weights(3, 3, 4, 4), strides=1, padding="VALID")


def split_and_join(x):
    a, b = tf.split(x, 2, axis=3)
    return tf.concat([a * 2.0, tf.nn.relu(b)], axis=3)


def strided(x):
    return tf.strided_slice(x, [0, 1, 0, 0], [1, 7, 8, 4], [1, 2, 1, 1])


def gather(x):
    return tf.gather(tf.reshape(x, [64, 4]), tf.constant([3, 1, 60, 7]), axis=0)


def pack_unpack(x):
    rows = tf.unstack(tf.reshape(x, [8, 32]), axis=0)
    return tf.stack([rows[0] + rows[1], rows[7]], axis=0)


def select(x):
    return tf.where(x > 0.0, x, x * 0.5)


def batch_matmul(x):
    m = tf.reshape(x, [4, 8, 8])
    return tf.matmul(m, tf.transpose(m, [0, 2, 1]))


# Each case: (name, function of one NHWC float input, input shape, forms to try).
CASES = [
    ("conv2d", conv, [1, 8, 8, 4], FORMS),
    ("depthwise_conv2d", depthwise, [1, 8, 8, 4], FORMS),
    ("fully_connected", fully_connected, [1, 8, 8, 4], FORMS),
    ("transpose_conv", transpose_conv, [1, 8, 8, 4], FORMS),
    ("padded_conv", padded_conv, [1, 8, 8, 4], FORMS),
    ("avg_pool", lambda x: tf.nn.avg_pool2d(x, 2, 2, "VALID"), [1, 8, 8, 4], FORMS),
    ("max_pool", lambda x: tf.nn.max_pool2d(x, 3, 2, "SAME"), [1, 8, 8, 4], FORMS),
    ("add", lambda x: x + weights(8, 8, 4), [1, 8, 8, 4], FORMS),
    ("sub", lambda x: x - weights(4), [1, 8, 8, 4], FORMS),
    ("mul", lambda x: x * weights(8, 1, 4), [1, 8, 8, 4], FORMS),
    ("div", lambda x: x / positive(4), [1, 8, 8, 4], FORMS),
    ("squared_difference", lambda x: tf.math.squared_difference(x, weights(4)), [1, 8, 8, 4],
     FORMS),
    ("minimum_maximum", lambda x: tf.maximum(tf.minimum(x, 0.5), -0.25), [1, 8, 8, 4], FORMS),
    ("abs", tf.abs, [1, 8, 8, 4], FORMS),
    ("neg", tf.negative, [1, 8, 8, 4], FORMS),
    ("sqrt", lambda x: tf.sqrt(tf.abs(x) + 0.1), [1, 8, 8, 4], FORMS),
    ("rsqrt", lambda x: tf.math.rsqrt(tf.abs(x) + 0.1), [1, 8, 8, 4], FORMS),
    ("exp", tf.exp, [1, 8, 8, 4], FORMS),
    ("log", lambda x: tf.math.log(tf.abs(x) + 0.1), [1, 8, 8, 4], FORMS),
    ("square", tf.square, [1, 8, 8, 4], FORMS),
    ("floor_ceil_round", lambda x: tf.floor(x) + tf.math.ceil(x) + tf.round(x), [1, 8, 8, 4],
     ("f32",)),
    ("relu", tf.nn.relu, [1, 8, 8, 4], FORMS),
    ("relu6", tf.nn.relu6, [1, 8, 8, 4], FORMS),
    ("leaky_relu", lambda x: tf.nn.leaky_relu(x, 0.2), [1, 8, 8, 4], FORMS),
    ("prelu", lambda x: tf.maximum(x, 0.0) + positive(4) * tf.minimum(x, 0.0), [1, 8, 8, 4],
     FORMS),
    ("elu", tf.nn.elu, [1, 8, 8, 4], FORMS),
    ("hard_swish", lambda x: x * tf.nn.relu6(x + 3.0) / 6.0, [1, 8, 8, 4], FORMS),
    ("logistic", tf.sigmoid, [1, 8, 8, 4], FORMS),
    ("tanh", tf.tanh, [1, 8, 8, 4], FORMS),
    ("softmax", tf.nn.softmax, [1, 10], FORMS),
    ("log_softmax", tf.nn.log_softmax, [1, 10], FORMS),
    ("l2_normalization", lambda x: tf.math.l2_normalize(x, axis=-1), [1, 8, 8, 4], FORMS),
    ("mean", lambda x: tf.reduce_mean(x, axis=[1, 2], keepdims=True), [1, 8, 8, 4], FORMS),
    ("sum", lambda x: tf.reduce_sum(x, axis=[1]), [1, 8, 8, 4], FORMS),
    ("reduce_max_min", lambda x: tf.reduce_max(x, axis=2) - tf.reduce_min(x, axis=2),
     [1, 8, 8, 4], FORMS),
    ("arg_max", lambda x: tf.argmax(x, axis=3, output_type=tf.int32), [1, 8, 8, 4], FORMS),
    ("concat_split", split_and_join, [1, 8, 8, 4], FORMS),
    ("reshape_transpose", lambda x: tf.transpose(tf.reshape(x, [1, 16, 16]), [0, 2, 1]),
     [1, 8, 8, 4], FORMS),
    ("pad", lambda x: tf.pad(x, [[0, 0], [2, 1], [0, 3], [0, 0]]), [1, 8, 8, 4], FORMS),
    ("mirror_pad", lambda x: tf.pad(x, [[0, 0], [2, 2], [1, 1], [0, 0]], mode="REFLECT"),
     [1, 8, 8, 4], FORMS),
    ("strided_slice", strided, [1, 8, 8, 4], FORMS),
    ("slice", lambda x: tf.slice(x, [0, 2, 1, 0], [1, 4, 5, 4]), [1, 8, 8, 4], FORMS),
    ("gather", gather, [1, 8, 8, 4], FORMS),
    ("pack_unpack", pack_unpack, [1, 8, 8, 4], FORMS),
    ("select", select, [1, 8, 8, 4], FORMS),
    ("resize_bilinear", lambda x: tf.image.resize(x, [12, 12], "bilinear"), [1, 8, 8, 4], FORMS),
    ("resize_nearest", lambda x: tf.image.resize(x, [16, 16], "nearest"), [1, 8, 8, 4], FORMS),
    ("space_to_depth", lambda x: tf.nn.space_to_depth(x, 2), [1, 8, 8, 4], FORMS),
    ("depth_to_space", lambda x: tf.nn.depth_to_space(x, 2), [1, 8, 8, 4], FORMS),
    ("space_to_batch", lambda x: tf.space_to_batch_nd(x, [2, 2], [[0, 0], [0, 0]]),
     [1, 8, 8, 4], FORMS),
    ("batch_matmul", batch_matmul, [1, 8, 8, 4], FORMS),
    ("cumsum", lambda x: tf.cumsum(x, axis=2), [1, 8, 8, 4], FORMS),
    ("reverse", lambda x: tf.reverse(x, axis=[2]), [1, 8, 8, 4], FORMS),
    ("pow", lambda x: tf.pow(tf.abs(x) + 0.5, 2.5), [1, 8, 8, 4], ("f32",)),
    ("tile", lambda x: tf.tile(x, [1, 2, 1, 1]), [1, 8, 8, 4], FORMS),
    ("gelu", lambda x: tf.nn.gelu(x, approximate=True), [1, 8, 8, 4], FORMS),
]


def representative(shape):
    rng = np.random.default_rng(7)

    def samples():
        for _ in range(16):
            yield [rng.uniform(-2, 2, shape).astype(np.float32)]
    return samples


def convert(function, shape, form):
    """The converter's .tflite bytes for `function` on a float input of `shape` in `form`."""
    concrete = tf.function(function).get_concrete_function(tf.TensorSpec(shape, tf.float32))
    converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete])
    if form != "f32":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative(shape)
    if form == "i8":
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    elif form == "16x8":
        converter.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
        converter.inference_input_type = tf.int16
        converter.inference_output_type = tf.int16
    return converter.convert()


BUILTIN_NAMES = {code: name for name, code in vars(schema.BuiltinOperator).items()
                 if not name.startswith("_")}


def builtins_of(data):
    """The TFLite builtin operators of the file's first subgraph, sorted, once each."""
    model = schema.Model.GetRootAsModel(data, 0)
    codes = [model.OperatorCodes(k) for k in range(model.OperatorCodesLength())]
    graph = model.Subgraphs(0)
    names = set()
    for k in range(graph.OperatorsLength()):
        code = codes[graph.Operators(k).OpcodeIndex()]
        names.add(BUILTIN_NAMES[max(code.BuiltinCode(), code.DeprecatedBuiltinCode())])
    return sorted(names)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else OUT
    os.makedirs(out, exist_ok=True)
    tf.random.set_seed(0)
    manifest = [f"# Written by scripts/converter_models.py with TensorFlow {tf.__version__}; "
                "case | form | file bytes | its TFLite operators, or the converter's refusal"]
    for name, function, shape, forms in CASES:
        for form in forms:
            file = f"{name}_{form}.tflite"
            try:
                data = convert(function, shape, form)
            except Exception as error:  # the converter refuses this form: say so
                reason = " ".join(str(error).split())[:160]
                manifest.append(f"{name} | {form} | refused: {reason}")
                continue
            with open(os.path.join(out, file), "wb") as f:
                f.write(data)
            manifest.append(f"{name} | {form} | {len(data)} | {' '.join(builtins_of(data))}")
            print(file, len(data), flush=True)
    with open(os.path.join(out, "MANIFEST.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")


if __name__ == "__main__":
    main()

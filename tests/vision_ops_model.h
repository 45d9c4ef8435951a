// Models made of the TFLM operators memfold reads since issue 16 — resize nearest neighbour,
// leaky relu, space-to-depth and back, element-wise abs, sqrt, square, log, floor, ceil, round,
// squared difference; split, slice, pack and unpack; comparisons, logic, select, zeros_like,
// elu, prelu and log_softmax; the geometry operators (resize bilinear, transpose conv, mirror
// pad, batch/space moves, gather, cumsum, L2 normalisation) in float32 and in int8 — written
// with memfold's TFLite writer so that tests run them as files: planned, checked, and compiled
// for the device. Header-only, for test targets.
#pragma once

#include <cstring>
#include <memory>
#include <optional>

#include "memfold/io/tflite_graph_writer.h"
#include "memfold/ops/builder.h"
#include "memfold/ops/registry.h"

namespace memfold::testing {

inline Result<Graph> VisionOpsGraph() {
  GraphBuilder b("vision_ops", 16);
  const ValueId x = b.Input("image", {1, 6, 6, 4});
  Attrs up;
  up.Set("size", std::vector<int64_t>{12, 12});
  const ValueId big = b.Op("resize_nearest_neighbor", {x}, up, "upsample");
  Attrs leak;
  leak.Set("alpha", 0.25);
  const ValueId act = b.Op("leaky_relu", {big}, leak, "leaky");
  Attrs block;
  block.Set("block_size", int64_t{2});
  const ValueId packed = b.Op("space_to_depth", {act}, block, "pack");
  const ValueId w = b.LayerWeight("w", {8, 3, 3, 16}, 144);
  const ValueId conv = b.Op("conv2d", {packed, w}, ConvAttrs(1, "none"), "conv");
  const ValueId mag = b.Op("abs", {conv}, {}, "magnitude");
  const ValueId root = b.Op("sqrt", {mag}, {}, "root");
  const ValueId spread = b.Op("depth_to_space", {root}, block, "unpack");
  const ValueId c = b.Constant("centre", {1}, {0.5f}, Role::kWeight);
  const ValueId diff = b.Op("squared_difference", {spread, c}, {}, "distance");
  const ValueId rounded = b.Op("round", {b.Op("square", {diff}, {}, "sq")}, {}, "rounded");
  const ValueId lo = b.Op("floor", {rounded}, {}, "lo");
  const ValueId hi =
      b.Op("ceil", {b.Op("log", {b.Op("abs", {diff}, {}, "a2")}, {}, "ln")}, {}, "hi");
  return b.Finish({lo, hi});
}

// Data movement as converters emit it: SPLIT_V and SPLIT (several outputs), SLICE, PACK and
// UNPACK around a convolution.
inline Result<Graph> MovementOpsGraph() {
  GraphBuilder b("movement_ops", 17);
  const ValueId x = b.Input("features", {1, 8, 8, 6});
  auto attrs = [](std::initializer_list<std::pair<std::string, AttrValue>> items) {
    Attrs a;
    for (const auto& [name, value] : items) a.Set(name, value);
    return a;
  };
  using Ints = std::vector<int64_t>;
  const ValueId parts = b.Op("split", {x}, attrs({{"axis", int64_t{3}}, {"sizes", Ints{2, 4}}}));
  const ValueId wide = parts + 1;  // the split's second output
  const ValueId window =
      b.Op("slice", {wide}, attrs({{"begin", Ints{0, 1, 1, 0}}, {"size", Ints{1, 6, 6, -1}}}));
  const ValueId w = b.LayerWeight("w", {4, 3, 3, 4}, 36);
  const ValueId conv = b.Op("conv2d", {window, w}, ConvAttrs(1, "relu"));
  const ValueId halves =
      b.Op("split", {parts}, attrs({{"axis", int64_t{3}}, {"sizes", Ints{1, 1}}}));
  const ValueId stacked = b.Op("pack", {halves, halves + 1}, attrs({{"axis", int64_t{0}}}));
  const ValueId first = b.Op("unpack", {stacked}, attrs({{"axis", int64_t{0}}}));
  return b.Finish({conv, first, first + 1});
}

// Comparisons, logic and selection as converters emit them, with elu, prelu, log_softmax,
// reductions, arg max and a cast.
inline Result<Graph> LogicOpsGraph() {
  GraphBuilder b("logic_ops", 18);
  const ValueId x = b.Input("scores", {2, 5, 8});
  const ValueId limit =
      b.Constant("limit", {8}, {0.1f, -0.2f, 0.3f, 0.0f, 0.5f, -0.5f, 0.2f, 0.0f}, Role::kWeight);
  const ValueId above = b.Op("greater", {x, limit}, {}, "above");
  const ValueId below = b.Op("less_equal", {x, limit}, {}, "below");
  const ValueId either = b.Op("logical_or", {above, below}, {}, "either");
  const ValueId neither = b.Op("logical_not", {either}, {}, "neither");
  const ValueId same = b.Op("equal", {above, b.Op("logical_and", {above, either})}, {}, "same");
  const ValueId kept = b.Op("select_v2", {same, x, b.Op("zeros_like", {x})}, {}, "kept");
  const ValueId alpha = b.Constant("alpha", {1, 1, 8}, {0.25f}, Role::kWeight);
  const ValueId shaped = b.Op("prelu", {b.Op("elu", {kept}), alpha}, {}, "shaped");
  const ValueId probabilities = b.Op("log_softmax", {shaped}, {}, "log_probabilities");
  Attrs over_classes;
  over_classes.Set("axes", std::vector<int64_t>{2});
  const ValueId total = b.Op("sum", {probabilities}, over_classes, "total");
  const ValueId peak = b.Op("reduce_max", {probabilities}, over_classes, "peak");
  Attrs arg;
  arg.Set("axis", int64_t{2});
  const ValueId best = b.Op("arg_min_max", {probabilities}, arg, "best");
  Attrs to_float;
  to_float.Set("dtype", std::string("f32"));
  const ValueId best_f = b.Op("cast", {best}, to_float, "best_as_float");
  return b.Finish({probabilities, neither, total, peak, best_f});
}

// TFLM's image-geometry and sequence operators as converters emit them: bilinear resizing, a
// transposed convolution, mirror padding, space to batch and back, a gather, cumulative sums
// and an L2 normalisation.
inline Result<Graph> GeometryOpsGraph() {
  GraphBuilder b("geometry_ops", 19);
  const ValueId x = b.Input("image", {1, 5, 6, 3});
  Attrs up;
  up.Set("size", std::vector<int64_t>{9, 11});
  up.Set("half_pixel_centers", int64_t{1});
  const ValueId big = b.Op("resize_bilinear", {x}, up, "upsample");
  Attrs down;
  down.Set("size", std::vector<int64_t>{4, 4});
  down.Set("align_corners", int64_t{1});
  const ValueId small = b.Op("resize_bilinear", {big}, down, "downsample");
  Attrs deconv = ConvAttrs(2, "relu");
  deconv.Set("output_shape", std::vector<int64_t>{1, 8, 8, 4});
  const ValueId w = b.LayerWeight("deconv_w", {4, 3, 3, 3}, 27);
  const ValueId bias = b.Constant("deconv_b", {4}, {0.1f, -0.2f, 0.0f, 0.3f}, Role::kWeight);
  const ValueId wide = b.Op("transpose_conv", {small, w, bias}, deconv, "deconv");
  Attrs reflect;
  reflect.Set("paddings", std::vector<int64_t>{0, 0, 2, 1, 1, 3, 0, 0});
  reflect.Set("mode", std::string("reflect"));
  const ValueId mirrored = b.Op("mirror_pad", {wide}, reflect, "mirror");
  Attrs symmetric;
  symmetric.Set("paddings", std::vector<int64_t>{0, 0, 1, 1, 0, 2, 0, 0});
  symmetric.Set("mode", std::string("symmetric"));
  const ValueId edged = b.Op("mirror_pad", {mirrored}, symmetric, "edge");
  // [1, 13, 14, 4] -> [6, 7, 5, 4] -> [1, 12, 13, 4] (a dilated convolution's wrapping).
  Attrs to_batch;
  to_batch.Set("block_shape", std::vector<int64_t>{2, 3});
  to_batch.Set("paddings", std::vector<int64_t>{1, 0, 0, 1});
  const ValueId batched = b.Op("space_to_batch_nd", {edged}, to_batch, "to_batch");
  Attrs to_space;
  to_space.Set("block_shape", std::vector<int64_t>{2, 3});
  to_space.Set("crops", std::vector<int64_t>{1, 1, 0, 2});
  const ValueId unbatched = b.Op("batch_to_space_nd", {batched}, to_space, "to_space");
  // Columns picked (and repeated) by constant indices, as converters emit tf.gather.
  const ValueId columns = b.IntConstant("columns", {5}, {12, 0, 6, 6, 3});
  Attrs along_width;
  along_width.Set("axis", int64_t{2});
  const ValueId picked = b.Op("gather_axis", {unbatched, columns}, along_width, "pick");
  Attrs down_rows;
  down_rows.Set("axis", int64_t{1});
  const ValueId running = b.Op("cumsum", {picked}, down_rows, "running");
  Attrs back_exclusive;
  back_exclusive.Set("axis", int64_t{3});
  back_exclusive.Set("exclusive", int64_t{1});
  back_exclusive.Set("reverse", int64_t{1});
  const ValueId remaining = b.Op("cumsum", {running}, back_exclusive, "remaining");
  const ValueId unit = b.Op("l2_normalization", {remaining}, {}, "unit");
  // BATCH_MATMUL: a constant [4, 3] projection broadcast over [1, 12] batches, and the
  // adj_x product of two [1, 12, 5, 4] tensors ([1, 12, 4, 4]).
  const ValueId proj = b.LayerWeight("proj_w", {4, 3}, 4);
  const ValueId projected = b.Op("tflite_batch_matmul", {unit, proj}, {}, "project");
  Attrs adjoint_x;
  adjoint_x.Set("adj_x", int64_t{1});
  const ValueId gram = b.Op("tflite_batch_matmul", {unit, picked}, adjoint_x, "gram");
  return b.Finish({unit, picked, projected, gram});
}

// The geometry operators' int8 kernels in one quantised model (TFLM's int8 paths: the integer
// bilinear resize, the transposed convolution with its int32 scratch and per-channel filter,
// the zero-point padding of space_to_batch_nd, the quantised cumsum and L2 normalisation).
inline Result<Graph> GeometryOpsI8Graph() {
  Graph g;
  g.name = "geometry_ops_i8";
  auto quant = [](std::vector<float> scales, int64_t zero_point) {
    Quantization q;
    q.zero_point.assign(scales.size(), zero_point);
    q.scale = std::move(scales);
    return q;
  };
  auto constant = [&](const std::string& name, DType dtype, Shape shape, Bytes bytes,
                      std::optional<Quantization> q = std::nullopt) {
    Value v{.name = name, .dtype = dtype, .shape = std::move(shape), .role = Role::kWeight};
    v.quant = std::move(q);
    v.data = std::make_shared<Bytes>(std::move(bytes));
    return g.AddValue(std::move(v));
  };
  auto op = [&](const std::string& name, const std::string& type, std::vector<ValueId> inputs,
                Attrs attrs, Quantization q) -> Result<ValueId> {
    MF_ASSIGN_OR_RETURN(const std::vector<ValueId> out,
                        AddOp(&g, type, std::move(inputs), std::move(attrs), name));
    g.value(out[0]).quant = std::move(q);
    return out[0];
  };
  auto ints = [](std::initializer_list<std::pair<std::string, AttrValue>> items) {
    Attrs a;
    for (const auto& [name, value] : items) a.Set(name, value);
    return a;
  };
  using Ints = std::vector<int64_t>;
  Value image{.name = "image", .dtype = DType::kI8, .shape = {1, 5, 6, 3}, .role = Role::kInput};
  image.quant = quant({0.05f}, -3);
  const ValueId x = g.AddValue(std::move(image));
  g.inputs = {x};
  MF_ASSIGN_OR_RETURN(
      const ValueId big,
      op("upsample", "resize_bilinear", {x},
         ints({{"size", Ints{8, 9}}, {"align_corners", int64_t{1}}}), quant({0.05f}, -3)));
  Bytes filter(4 * 3 * 3 * 3);
  for (size_t k = 0; k < filter.size(); ++k)
    filter[k] = static_cast<std::byte>(static_cast<int8_t>((k * 37) % 255 - 127));
  const ValueId w = constant("deconv_w", DType::kI8, {4, 3, 3, 3}, filter,
                             quant({0.004f, 0.006f, 0.005f, 0.003f}, 0));
  Bytes bias(4 * 4);
  const int32_t biases[] = {300, -200, 0, 150};
  std::memcpy(bias.data(), biases, sizeof(biases));
  const ValueId b = constant("deconv_b", DType::kI32, {4}, bias);
  Attrs deconv = ConvAttrs(2, "none");
  deconv.Set("output_shape", Ints{1, 16, 18, 4});
  MF_ASSIGN_OR_RETURN(const ValueId wide,
                      op("deconv", "transpose_conv", {big, w, b}, deconv, quant({0.1f}, 5)));
  MF_ASSIGN_OR_RETURN(
      const ValueId mirrored,
      op("mirror", "mirror_pad", {wide},
         ints({{"paddings", Ints{0, 0, 1, 1, 2, 0, 0, 0}}, {"mode", std::string("symmetric")}}),
         quant({0.1f}, 5)));
  MF_ASSIGN_OR_RETURN(
      const ValueId batched,
      op("to_batch", "space_to_batch_nd", {mirrored},
         ints({{"block_shape", Ints{3, 2}}, {"paddings", Ints{2, 1, 0, 0}}}), quant({0.1f}, 5)));
  MF_ASSIGN_OR_RETURN(
      const ValueId unbatched,
      op("to_space", "batch_to_space_nd", {batched},
         ints({{"block_shape", Ints{3, 2}}, {"crops", Ints{2, 1, 1, 1}}}), quant({0.1f}, 5)));
  Bytes rows(4 * 3);
  const int32_t picks[] = {7, 0, 7};
  std::memcpy(rows.data(), picks, sizeof(picks));
  const ValueId indices = constant("rows", DType::kI32, {3}, rows);
  MF_ASSIGN_OR_RETURN(const ValueId picked, op("pick", "gather_axis", {unbatched, indices},
                                               ints({{"axis", int64_t{1}}}), quant({0.1f}, 5)));
  MF_ASSIGN_OR_RETURN(const ValueId running,
                      op("running", "cumsum", {picked},
                         ints({{"axis", int64_t{2}}, {"reverse", int64_t{1}}}), quant({0.3f}, -7)));
  MF_ASSIGN_OR_RETURN(const ValueId unit,
                      op("unit", "l2_normalization", {running}, {}, quant({1.0f / 128}, 0)));
  // BATCH_MATMUL on int8: unit x running^T per batch (adj_y), and a constant [4, 5] int8
  // projection broadcast over the batches.
  MF_ASSIGN_OR_RETURN(const ValueId gram, op("gram", "tflite_batch_matmul", {unit, running},
                                             ints({{"adj_y", int64_t{1}}}), quant({0.05f}, 2)));
  Bytes proj_bytes(4 * 5);
  for (size_t k = 0; k < proj_bytes.size(); ++k)
    proj_bytes[k] = static_cast<std::byte>(static_cast<int8_t>((k * 53) % 251 - 125));
  const ValueId proj = constant("proj_w", DType::kI8, {4, 5}, proj_bytes, quant({0.01f}, 3));
  MF_ASSIGN_OR_RETURN(const ValueId projected,
                      op("project", "tflite_batch_matmul", {unit, proj}, {}, quant({0.02f}, -4)));
  g.outputs = {unit, wide, gram, projected};
  return g;
}

// A model as a .tflite file, as memfold's writer writes it.
inline Result<Bytes> VisionOpsFile() {
  MF_ASSIGN_OR_RETURN(Graph g, VisionOpsGraph());
  return GraphToTflite(g);
}
inline Result<Bytes> MovementOpsFile() {
  MF_ASSIGN_OR_RETURN(Graph g, MovementOpsGraph());
  return GraphToTflite(g);
}
inline Result<Bytes> LogicOpsFile() {
  MF_ASSIGN_OR_RETURN(Graph g, LogicOpsGraph());
  return GraphToTflite(g);
}
inline Result<Bytes> GeometryOpsFile() {
  MF_ASSIGN_OR_RETURN(Graph g, GeometryOpsGraph());
  return GraphToTflite(g);
}
inline Result<Bytes> GeometryOpsI8File() {
  MF_ASSIGN_OR_RETURN(Graph g, GeometryOpsI8Graph());
  return GraphToTflite(g);
}

}  // namespace memfold::testing

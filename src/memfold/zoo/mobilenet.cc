// MobileNet v1 and v2 with the layer shapes of the published networks, laid out as TFLite's
// hosted float models are (or, MobileNet v2 with pads=explicit, as PyTorch's converters emit
// it: a PAD op before every stride-2 window): NHWC, SAME padding, ReLU6 fused into the
// convolutions, residual adds as ADD ops, a final average pool, a 1x1 convolution to 1001 classes,
// reshape, softmax. msf_mobilenet_v2 is the network msf-CNN (Yang et al. 2025) models and deploys
// as "MBV2": channels int(c * alpha) instead of multiples of 8, an expansion convolution in the
// first block too, no residual adds, int(1280 * alpha) head channels (its analysis and its TVM
// model, TinyPART/msf-CNN), with the same classifier.
#include <algorithm>
#include <string>

#include "memfold/ops/builder.h"
#include "memfold/zoo/zoo.h"

namespace memfold {
namespace {

constexpr int64_t kClasses = 1001;

// How a 3x3 window of stride 2 pads: TFLite's SAME, or PyTorch's symmetric one pixel as an
// explicit PAD op before a VALID window (what converters emit for PyTorch models).
enum class Pads { kSame, kExplicit };

// `x` padded for a window of `k` and `stride`, and the window's padding attribute.
std::pair<ValueId, std::string> PadFor(GraphBuilder& b, ValueId x, int64_t k, int64_t stride,
                                       Pads pads, const std::string& name) {
  if (pads == Pads::kSame || k == 1 || stride == 1) return {x, "same"};
  const int64_t p = k / 2;
  Attrs attrs{{"paddings", std::vector<int64_t>{0, 0, p, p, p, p, 0, 0}}, {"value", 0.0}};
  return {b.Op("pad", {x}, std::move(attrs), name + "/pad", "conv"), "valid"};
}

// Convolution with bias: filter [out_c, k, k, in_c].
ValueId Conv(GraphBuilder& b, ValueId x, int64_t out_c, int64_t k, int64_t stride,
             const std::string& activation, const std::string& name, Pads pads = Pads::kSame) {
  const int64_t in_c = b.shape(x)[3];
  const ValueId w = b.LayerWeight(name + "/weights", {out_c, k, k, in_c}, k * k * in_c);
  const ValueId bias = b.Weight(name + "/bias", {out_c}, 0.01f);
  const auto [padded, padding] = PadFor(b, x, k, stride, pads, name);
  return b.Op("conv2d", {padded, w, bias}, ConvAttrs(stride, activation, padding), name, "conv");
}

// Depthwise 3x3 convolution with bias and ReLU6: filter [1, 3, 3, channels].
ValueId Depthwise(GraphBuilder& b, ValueId x, int64_t stride, const std::string& name,
                  Pads pads = Pads::kSame) {
  const int64_t c = b.shape(x)[3];
  const ValueId w = b.LayerWeight(name + "/depthwise_weights", {1, 3, 3, c}, 9);
  const ValueId bias = b.Weight(name + "/bias", {c}, 0.01f);
  const auto [padded, padding] = PadFor(b, x, 3, stride, pads, name);
  return b.Op("depthwise_conv2d", {padded, w, bias}, ConvAttrs(stride, "relu6", padding), name,
              "conv");
}

// Global average pool, 1x1 convolution to the classes, reshape to [batch, classes], softmax.
Result<Graph> Classifier(GraphBuilder& b, ValueId x) {
  const Shape& s = b.shape(x);
  const int64_t batch = s[0];
  x = b.Op("avg_pool2d", {x}, PoolAttrs(s[1], s[2], 2, "valid"), "AvgPool", "pool");
  x = Conv(b, x, kClasses, 1, 1, "none", "Logits/Conv2d_1c_1x1");
  Attrs reshape;
  reshape.Set("shape", std::vector<int64_t>{batch, kClasses});
  x = b.Op("reshape", {x}, reshape, "Logits/Squeeze", "output");
  x = b.Op("softmax", {x}, {}, "Predictions", "output");
  return b.Finish({x});
}

// TF-Slim MobileNet v1 channel rule: max(int(depth * alpha), 8).
int64_t V1Depth(int64_t depth, double alpha) {
  return std::max<int64_t>(static_cast<int64_t>(static_cast<double>(depth) * alpha), 8);
}

// MobileNet v2 channel rule (_make_divisible): nearest multiple of 8, never 10 % below.
int64_t MakeDivisible(double value, int64_t divisor = 8) {
  int64_t rounded = std::max<int64_t>(
      divisor, static_cast<int64_t>(value + static_cast<double>(divisor) / 2) / divisor * divisor);
  if (static_cast<double>(rounded) < 0.9 * value) rounded += divisor;
  return rounded;
}

}  // namespace

Result<Graph> BuildMobileNetV1(const ZooArgs& args) {
  const double alpha = args.Float("alpha");
  const int64_t res = args.Int("res");
  GraphBuilder b("mobilenet_v1");
  ValueId x = b.Input("input", {args.Int("batch"), res, res, 3});
  x = Conv(b, x, V1Depth(32, alpha), 3, 2, "relu6", "Conv2d_0");
  struct Block {
    int64_t depth, stride;
  };
  constexpr Block kBlocks[] = {{64, 1},  {128, 2},  {128, 1}, {256, 2}, {256, 1},
                               {512, 2}, {512, 1},  {512, 1}, {512, 1}, {512, 1},
                               {512, 1}, {1024, 2}, {1024, 1}};
  int index = 1;
  for (const Block& block : kBlocks) {
    const std::string name = "Conv2d_" + std::to_string(index++);
    x = Depthwise(b, x, block.stride, name + "_depthwise");
    x = Conv(b, x, V1Depth(block.depth, alpha), 1, 1, "relu6", name + "_pointwise");
  }
  return Classifier(b, x);
}

namespace {

// How a MobileNet v2 is laid out: the published network, or the network msf-CNN models and
// deploys under that name.
struct V2Layout {
  bool published = true;  // false: msf-CNN's (below)
  Pads pads = Pads::kSame;
};

// Channels of a stage of `c` at width `alpha`: the published rule (_make_divisible), or msf-CNN's
// int(c * alpha).
int64_t V2Channels(const V2Layout& layout, double c, double alpha) {
  return layout.published ? MakeDivisible(c * alpha) : static_cast<int64_t>(c * alpha);
}

Result<Graph> BuildV2(const ZooArgs& args, const V2Layout& layout, const std::string& name) {
  const double alpha = args.Float("alpha");
  const int64_t res = args.Int("res");
  GraphBuilder b(name);
  ValueId x = b.Input("input", {args.Int("batch"), res, res, 3});
  x = Conv(b, x, V2Channels(layout, 32, alpha), 3, 2, "relu6", "Conv", layout.pads);
  // Inverted residual settings: expansion t, channels c, repeats n, first stride s.
  struct Stage {
    int64_t t, c, n, s;
  };
  constexpr Stage kStages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                               {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int index = 0;
  for (const Stage& stage : kStages) {
    const int64_t out_c = V2Channels(layout, static_cast<double>(stage.c), alpha);
    for (int64_t r = 0; r < stage.n; ++r) {
      const std::string block =
          index == 0 ? "expanded_conv" : "expanded_conv_" + std::to_string(index);
      ++index;
      const int64_t stride = r == 0 ? stage.s : 1;
      const int64_t in_c = b.shape(x)[3];
      ValueId y = x;
      if (stage.t != 1 || !layout.published) {
        y = Conv(b, y, in_c * stage.t, 1, 1, "relu6", block + "/expand");
      }
      y = Depthwise(b, y, stride, block + "/depthwise", layout.pads);
      y = Conv(b, y, out_c, 1, 1, "none", block + "/project");
      if (layout.published && stride == 1 && in_c == out_c) {
        y = b.Op("add", {x, y}, {}, block + "/add", "conv");
      }
      x = y;
    }
  }
  const int64_t last_c = layout.published && alpha <= 1.0 ? 1280 : V2Channels(layout, 1280, alpha);
  x = Conv(b, x, last_c, 1, 1, "relu6", "Conv_1");
  return Classifier(b, x);
}

}  // namespace

Result<Graph> BuildMobileNetV2(const ZooArgs& args) {
  const Pads pads = args.Choice("pads") == "explicit" ? Pads::kExplicit : Pads::kSame;
  return BuildV2(args, {.published = true, .pads = pads}, "mobilenet_v2");
}

Result<Graph> BuildMsfMobileNetV2(const ZooArgs& args) {
  return BuildV2(args, {.published = false}, "msf_mobilenet_v2");
}

}  // namespace memfold

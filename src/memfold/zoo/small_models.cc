// Small reference models for tests and demos: an MLP and a CNN with a two-branch block.
#include <string>

#include "memfold/ops/builder.h"
#include "memfold/zoo/zoo.h"

namespace memfold {
namespace {

ValueId Dense(GraphBuilder& b, ValueId x, int64_t units, const std::string& activation,
              const std::string& name) {
  const int64_t depth = b.shape(x).back();
  const ValueId w = b.LayerWeight(name + "/weights", {units, depth}, depth);
  const ValueId bias = b.Weight(name + "/bias", {units}, 0.01f);
  Attrs attrs;
  attrs.Set("activation", activation);
  return b.Op("fully_connected", {x, w, bias}, attrs, name, name == "logits" ? "output" : "ffn");
}

ValueId Conv3x3(GraphBuilder& b, ValueId x, int64_t out_c, const std::string& name) {
  const int64_t in_c = b.shape(x)[3];
  const ValueId w = b.LayerWeight(name + "/weights", {out_c, 3, 3, in_c}, 9 * in_c);
  const ValueId bias = b.Weight(name + "/bias", {out_c}, 0.01f);
  return b.Op("conv2d", {x, w, bias}, ConvAttrs(1, "relu"), name, "conv");
}

}  // namespace

Result<Graph> BuildMlp(const ZooArgs& args) {
  GraphBuilder b("mlp");
  ValueId x = b.Input("input", {args.Int("batch"), args.Int("in")});
  for (int64_t i = 0; i < args.Int("layers"); ++i) {
    x = Dense(b, x, args.Int("hidden"), "relu", "dense" + std::to_string(i));
  }
  x = Dense(b, x, args.Int("classes"), "none", "logits");
  return b.Finish({b.Op("softmax", {x}, {}, "probabilities", "output")});
}

Result<Graph> BuildSmallCnn(const ZooArgs& args) {
  const int64_t c = args.Int("channels");
  const int64_t res = args.Int("res");
  GraphBuilder b("cnn");
  ValueId x = b.Input("input", {args.Int("batch"), res, res, 3});
  x = Conv3x3(b, x, c, "conv1");
  x = b.Op("max_pool2d", {x}, PoolAttrs(2, 2, 2, "same"), "pool1", "pool");
  // Two branches joined by concat, then a residual add: exercises branched lifetimes.
  const ValueId left = Conv3x3(b, x, c, "branch_a");
  const ValueId right = Conv3x3(b, x, c, "branch_b");
  Attrs concat;
  concat.Set("axis", int64_t{3});
  x = b.Op("concat", {left, right}, concat, "join", "conv");
  const ValueId mixed = Conv3x3(b, x, 2 * c, "conv2");
  x = b.Op("add", {x, mixed}, {}, "residual", "conv");
  x = b.Op("avg_pool2d", {x}, PoolAttrs(2, 2, 2, "same"), "pool2", "pool");
  Attrs mean;
  mean.Set("axes", std::vector<int64_t>{1, 2});
  x = b.Op("mean", {x}, mean, "global_pool", "pool");
  x = Dense(b, x, args.Int("classes"), "none", "logits");
  return b.Finish({b.Op("softmax", {x}, {}, "probabilities", "output")});
}

}  // namespace memfold

// The gradient pass, op by op: for every op with a gradient builder, a one-op network
// y = op(params), loss = mse(y, target) is differentiated by the pass and every parameter's
// gradient is compared with central finite differences of the forward loss. Also checks that
// each builder reads exactly the forward values its registry row declares.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "memfold/exec/training.h"
#include "memfold/ops/builder.h"
#include "memfold/ops/gradient.h"
#include "memfold/ops/registry.h"
#include "memfold/passes/gradient.h"
#include "test_util.h"

namespace memfold {
namespace {

using Ints = std::vector<int64_t>;

struct Case {
  std::string name;
  // Builds the op on parameters made with b.Weight (trainable) and returns its output.
  std::function<ValueId(GraphBuilder&)> build;
};

Attrs A(std::initializer_list<std::pair<const char*, AttrValue>> items) {
  Attrs a;
  for (const auto& [k, v] : items) a.Set(k, v);
  return a;
}

ValueId Param(GraphBuilder& b, const std::string& name, Shape shape) {
  return b.Weight(name, std::move(shape), 1.0f);
}

// Constant row ids (int32, or int64 as PyTorch's indices are), k * 3 + 1 modulo `range`.
ValueId Ids(GraphBuilder& b, Shape shape, int32_t range, DType dtype = DType::kI32) {
  ValueId v = b.Weight("ids", shape, 1.0f);
  Value& value = const_cast<Value&>(b.value(v));
  value.dtype = dtype;
  const size_t width = dtype == DType::kI64 ? 8 : 4;
  auto data = std::make_shared<Bytes>(static_cast<size_t>(NumElements(shape)) * width);
  for (int64_t k = 0; k < NumElements(shape); ++k) {
    const int64_t id = (k * 3 + 1) % range;
    const auto narrow = static_cast<int32_t>(id);
    std::memcpy(data->data() + width * static_cast<size_t>(k),
                width == 8 ? static_cast<const void*>(&id) : &narrow, width);
  }
  value.data = data;
  return v;
}

std::vector<Case> Cases() {
  return {
      {"relu",
       [](GraphBuilder& b) {
         return b.Op("relu", {Param(b, "x", {2, 5})});
       }},
      {"tanh",
       [](GraphBuilder& b) {
         return b.Op("tanh", {Param(b, "x", {2, 5})});
       }},
      {"sigmoid",
       [](GraphBuilder& b) {
         return b.Op("sigmoid", {Param(b, "x", {2, 5})});
       }},
      {"exp",
       [](GraphBuilder& b) {
         return b.Op("exp", {Param(b, "x", {2, 5})});
       }},
      {"neg",
       [](GraphBuilder& b) {
         return b.Op("neg", {Param(b, "x", {2, 5})});
       }},
      {"add_broadcast",
       [](GraphBuilder& b) {
         return b.Op("add", {Param(b, "a", {2, 3, 4}), Param(b, "b", {4})});
       }},
      {"sub_broadcast",
       [](GraphBuilder& b) {
         return b.Op("sub", {Param(b, "a", {2, 3, 4}), Param(b, "b", {3, 1})});
       }},
      {"mul_broadcast",
       [](GraphBuilder& b) {
         return b.Op("mul", {Param(b, "a", {3, 1}), Param(b, "b", {2, 3, 4})});
       }},
      {"fully_connected",
       [](GraphBuilder& b) {
         return b.Op("fully_connected",
                     {Param(b, "x", {3, 4}), Param(b, "w", {5, 4}), Param(b, "bias", {5})});
       }},
      {"matmul_tb",
       [](GraphBuilder& b) {
         return b.Op("matmul", {Param(b, "a", {3, 4}), Param(b, "b", {5, 4})},
                     A({{"transpose_b", int64_t{1}}}));
       }},
      {"matmul_ta",
       [](GraphBuilder& b) {
         return b.Op("matmul", {Param(b, "a", {4, 3}), Param(b, "b", {4, 5})},
                     A({{"transpose_a", int64_t{1}}}));
       }},
      {"batch_matmul",
       [](GraphBuilder& b) {
         return b.Op("batch_matmul", {Param(b, "a", {2, 3, 4}), Param(b, "b", {2, 4, 2})});
       }},
      {"conv2d",
       [](GraphBuilder& b) {
         return b.Op(
             "conv2d",
             {Param(b, "x", {1, 5, 5, 2}), Param(b, "w", {3, 3, 3, 2}), Param(b, "bias", {3})},
             ConvAttrs(2, "none"));
       }},
      {"depthwise_conv2d",
       [](GraphBuilder& b) {
         return b.Op(
             "depthwise_conv2d",
             {Param(b, "x", {1, 4, 4, 2}), Param(b, "w", {1, 3, 3, 4}), Param(b, "bias", {4})},
             ConvAttrs(1, "none"));
       }},
      {"max_pool2d",
       [](GraphBuilder& b) {
         return b.Op("max_pool2d", {Param(b, "x", {1, 4, 4, 2})}, PoolAttrs(2, 2, 2, "same"));
       }},
      {"avg_pool2d",
       [](GraphBuilder& b) {
         return b.Op("avg_pool2d", {Param(b, "x", {1, 5, 5, 2})}, PoolAttrs(3, 3, 2, "same"));
       }},
      {"softmax",
       [](GraphBuilder& b) {
         return b.Op("softmax", {Param(b, "x", {2, 5})});
       }},
      {"reshape",
       [](GraphBuilder& b) {
         return b.Op("reshape", {Param(b, "x", {2, 6})}, A({{"shape", Ints{3, 4}}}));
       }},
      {"concat",
       [](GraphBuilder& b) {
         return b.Op("concat", {Param(b, "a", {2, 3}), Param(b, "b", {2, 2})},
                     A({{"axis", int64_t{1}}}));
       }},
      {"slice",
       [](GraphBuilder& b) {
         return b.Op("slice", {Param(b, "x", {3, 4})},
                     A({{"begin", Ints{1, 1}}, {"size", Ints{2, 2}}}));
       }},
      {"transpose",
       [](GraphBuilder& b) {
         return b.Op("transpose", {Param(b, "x", {2, 3, 4})}, A({{"perm", Ints{2, 0, 1}}}));
       }},
      {"pad",
       [](GraphBuilder& b) {
         return b.Op("pad", {Param(b, "x", {2, 3})}, A({{"paddings", Ints{1, 0, 0, 2}}}));
       }},
      {"reduce_sum",
       [](GraphBuilder& b) {
         return b.Op("reduce_sum", {Param(b, "x", {2, 3, 4})}, A({{"axes", Ints{0, 2}}}));
       }},
      {"mean",
       [](GraphBuilder& b) {
         return b.Op("mean", {Param(b, "x", {2, 3, 4})},
                     A({{"axes", Ints{1}}, {"keepdims", int64_t{1}}}));
       }},
      {"broadcast_to",
       [](GraphBuilder& b) {
         return b.Op("broadcast_to", {Param(b, "x", {3, 1})}, A({{"shape", Ints{2, 3, 4}}}));
       }},
      {"gather",
       [](GraphBuilder& b) {
         return b.Op("gather", {Param(b, "table", {5, 3}), Ids(b, {4}, 5)});
       }},
      {"gather_int64_ids",
       [](GraphBuilder& b) {
         return b.Op("gather", {Param(b, "table", {5, 3}), Ids(b, {4}, 5, DType::kI64)});
       }},
      {"layer_norm",
       [](GraphBuilder& b) {
         return b.Op("layer_norm",
                     {Param(b, "x", {3, 4}), Param(b, "gamma", {4}), Param(b, "beta", {4})});
       }},
      {"batch_norm_train",
       [](GraphBuilder& b) {
         const ValueId mean =
             b.Constant("running_mean", {3}, std::vector<float>(3, 0.0f), Role::kState);
         const ValueId var =
             b.Constant("running_var", {3}, std::vector<float>(3, 1.0f), Role::kState);
         return b.Op("batch_norm_train", {Param(b, "x", {4, 3}), Param(b, "gamma", {3}),
                                          Param(b, "beta", {3}), mean, var});
       }},
      {"batch_norm_train_channels_at_axis_1",  // PyTorch's NCHW layout (joint/)
       [](GraphBuilder& b) {
         const ValueId mean =
             b.Constant("running_mean", {3}, std::vector<float>(3, 0.0f), Role::kState);
         const ValueId var =
             b.Constant("running_var", {3}, std::vector<float>(3, 1.0f), Role::kState);
         return b.Op("batch_norm_train",
                     {Param(b, "x", {2, 3, 2, 2}), Param(b, "gamma", {3}), Param(b, "beta", {3}),
                      mean, var},
                     A({{"axis", int64_t{1}}}));
       }},
      {"dropout",
       [](GraphBuilder& b) {
         return b.Op("dropout", {Param(b, "x", {4, 5})}, A({{"rate", 0.5}, {"seed", int64_t{3}}}));
       }},
  };
}

class GradientPass : public ::testing::TestWithParam<Case> {};

TEST_P(GradientPass, MatchesFiniteDifferences) {
  GraphBuilder b("grad", 5);
  const ValueId y = GetParam().build(b);
  ASSERT_TRUE(b.ok());
  const ValueId target = b.Weight("target", b.shape(y), 1.0f);
  const ValueId loss = b.Op("mse_loss", {y, target}, {}, "loss");
  Result<Graph> built = b.Finish({loss});
  ASSERT_TRUE(built.ok()) << built.status().message();
  built->value(target).role = Role::kState;  // not trainable
  const Graph forward = *built;
  Graph g = *built;
  Result<TrainingGraph> t = BuildTrainingGraph(&g);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_FALSE(t->params.empty());
  Result<GraphPlan> plan = PlanGraph(g, "greedy");
  ASSERT_TRUE(plan.ok());
  Trainer trainer(g, t->grads, *plan);
  Result<StepResult> step = trainer.Step({});
  ASSERT_TRUE(step.ok()) << step.status().message();
  for (size_t p = 0; p < t->params.size(); ++p) {
    const ValueId param = t->params[p];
    for (int64_t e = 0; e < g.value(param).elements(); ++e) {
      const float h = 1e-3f;  // small enough not to step over relu's and max pooling's kinks
      const double numeric = (static_cast<double>(LossWithMoved(forward, param, e, h)) -
                              LossWithMoved(forward, param, e, -h)) /
                             (2.0 * h);
      float analytic;
      std::memcpy(&analytic, step->gradients[p].data() + 4 * e, 4);
      EXPECT_NEAR(analytic, numeric, 3e-3 + 3e-2 * std::fabs(numeric))
          << GetParam().name << ": " << g.value(param).name << "[" << e << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, GradientPass, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& c) { return c.param.name; });

// Every builder reads exactly the forward values its row declares (grad_reads_*): the
// recomputation analysis relies on the declaration.
TEST(GradientPassReads, BuildersReadWhatTheirRowsDeclare) {
  for (const Case& c : Cases()) {
    GraphBuilder b("reads", 5);
    const ValueId y = c.build(b);
    const ValueId loss = b.Op("mse_loss", {y, b.Weight("target", b.shape(y), 1.0f)}, {}, "loss");
    Result<Graph> built = b.Finish({loss});
    ASSERT_TRUE(built.ok());
    Graph g = *built;
    const Node forward = g.node(0);
    const OpDef* def = OpOf(forward);
    GradEmitter emit(&g, forward);
    std::vector<ValueId> dy;
    for (ValueId out : forward.outputs) {  // a fresh dL/dy value per float output
      Value grad = g.value(out);
      grad.name += "/dy";
      grad.producer = kNoNode;
      dy.push_back(grad.dtype == DType::kF32 ? g.AddValue(std::move(grad)) : kNoValue);
    }
    const NodeId before = g.num_nodes();
    std::vector<ValueId> dx;
    ASSERT_TRUE(def->gradient(emit, forward, dy, &dx).ok()) << c.name;
    uint32_t inputs = 0, outputs = 0;
    for (NodeId n = before; n < g.num_nodes(); ++n) {
      for (ValueId in : g.node(n).inputs) {
        for (size_t k = 0; k < forward.inputs.size(); ++k) {
          if (in == forward.inputs[k]) inputs |= 1u << k;
        }
        for (size_t k = 0; k < forward.outputs.size(); ++k) {
          if (in == forward.outputs[k]) outputs |= 1u << k;
        }
      }
    }
    EXPECT_EQ(inputs, def->grad_reads_inputs) << c.name;
    EXPECT_EQ(outputs, def->grad_reads_outputs) << c.name;
  }
}

}  // namespace
}  // namespace memfold

// float32 convolution, depthwise convolution and pooling kernels (see float_kernels.h): the
// loop nests of window_loops.h with float arithmetic.
#include <algorithm>
#include <limits>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/float_kernels.h"
#include "memfold/ops/kernels/kernel_util.h"
#include "memfold/ops/kernels/window_loops.h"

namespace memfold {
namespace {

// Arithmetic of reference_ops::Conv and DepthwiseConv: products summed in tap order, then the
// bias and the fused activation clamp.
template <typename A>
class FloatConvMath {
 public:
  using Acc = float;

  explicit FloatConvMath(const KernelContext& ctx)
      : act_(KernelActivation(ctx.attrs)),
        x_{ctx.inputs[0].ptr<float>()},
        w_{ctx.inputs[1].ptr<float>()},
        has_bias_(HasBias(ctx)),
        bias_(BiasInput<A, float>(ctx)),
        y_{OutputOf<A, float>(ctx.outputs[0])} {}

  float Mac(float total, int64_t x_index, int64_t w_index) const {
    return total + x_[x_index] * w_[w_index];
  }

  void Emit(int64_t y_index, int64_t oc, float total) const {
    const float bias_value = has_bias_ ? bias_[oc] : 0.0f;
    y_.Set(y_index, std::min(std::max(total + bias_value, act_.min), act_.max));
  }

 private:
  ActivationRange act_;
  In<A, float> x_, w_;
  bool has_bias_;
  In<A, float> bias_;
  Out<A, float> y_;
};

// The float pool loop with the fused activation clamp after `finish`.
template <typename A, typename Fold, typename Finish>
void PoolF32(const KernelContext& ctx, float init, Fold fold, Finish finish) {
  const ActivationRange act = KernelActivation(ctx.attrs);
  PoolLoop<A, float>(ctx, init, fold, [&](float acc, int64_t count) {
    return std::min(std::max(finish(acc, count), act.min), act.max);
  });
}

}  // namespace

template <typename A>
void Conv2DF32(const KernelContext& ctx) {
  ConvLoop(ctx, FloatConvMath<A>(ctx));
}

template <typename A>
void DepthwiseConv2DF32(const KernelContext& ctx) {
  DepthwiseConvLoop(ctx, FloatConvMath<A>(ctx));
}

template <typename A>
void AvgPool2DF32(const KernelContext& ctx) {
  PoolF32<A>(
      ctx, 0.0f, [](float acc, float v) { return acc + v; },
      [](float acc, int64_t count) { return count == 0 ? 0.0f : acc / static_cast<float>(count); });
}

template <typename A>
void MaxPool2DF32(const KernelContext& ctx) {
  PoolF32<A>(
      ctx, std::numeric_limits<float>::lowest(),
      [](float acc, float v) { return std::max(acc, v); }, [](float acc, int64_t) { return acc; });
}

MF_INSTANTIATE_KERNEL(Conv2DF32)
MF_INSTANTIATE_KERNEL(DepthwiseConv2DF32)
MF_INSTANTIATE_KERNEL(AvgPool2DF32)
MF_INSTANTIATE_KERNEL(MaxPool2DF32)

}  // namespace memfold

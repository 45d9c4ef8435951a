// float32 fully-connected kernel (see float_kernels.h). Freestanding.
#include <algorithm>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/float_kernels.h"
#include "memfold/ops/kernels/kernel_util.h"

namespace memfold {

template <typename A>
void FullyConnectedF32(const KernelContext& ctx) {
  const ShapeView w_shape = ctx.inputs[1].shape;
  const int64_t out_depth = w_shape[0], depth = w_shape[1];
  const int64_t batches = ctx.inputs[0].elements() / depth;
  const ActivationRange act = KernelActivation(ctx.attrs);
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  In<A, float> w{ctx.inputs[1].ptr<float>()};
  const bool has_bias = HasBias(ctx);
  In<A, float> bias = BiasInput<A, float>(ctx);
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t oc = 0; oc < out_depth; ++oc) {
      float total = 0.0f;
      for (int64_t d = 0; d < depth; ++d) total += x[b * depth + d] * w[oc * depth + d];
      const float bias_value = has_bias ? bias[oc] : 0.0f;
      y.Set(b * out_depth + oc, std::min(std::max(total + bias_value, act.min), act.max));
    }
  }
}

MF_INSTANTIATE_KERNEL(FullyConnectedF32)

}  // namespace memfold

// Kernels that recomputation uses in place of ops that must not run twice.
//
// batch_norm_apply rebuilds batch_norm_train's output from the statistics that node saved, with
// the same float expression, so the recomputed feature map is bit-identical and the running
// statistics are not updated a second time. O(elements).
#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/train_kernels.h"

namespace memfold {

template <typename A>
void BatchNormApplyF32(const KernelContext& ctx) {
  const int64_t channels = ctx.inputs[1].elements();
  const int64_t n = ctx.inputs[0].elements();
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  In<A, float> gamma{ctx.inputs[1].ptr<float>()};
  In<A, float> beta{ctx.inputs[2].ptr<float>()};
  In<A, float> mean{ctx.inputs[3].ptr<float>()};
  In<A, float> invstd{ctx.inputs[4].ptr<float>()};
  Out<A, float> y{ctx.outputs[0].ptr<float>()};
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = i % channels;
    y.Set(i, (x[i] - mean[c]) * invstd[c] * gamma[c] + beta[c]);
  }
}

MF_INSTANTIATE_KERNEL(BatchNormApplyF32)

}  // namespace memfold

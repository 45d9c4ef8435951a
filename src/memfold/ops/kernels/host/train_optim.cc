// Optimizer steps (float32). Each element's inputs are read before its outputs are written,
// so the kernels are correct when an output pointer equals the input it updates
// (OpDef::updates_input).
#include <cmath>
#include <cstdint>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/host/train_kernels.h"

namespace memfold {

template <typename A>
void SgdMomentumF32(const KernelContext& ctx) {
  const auto lr = static_cast<float>(ctx.attrs.Float("lr"));
  const auto momentum = static_cast<float>(ctx.attrs.Float("momentum"));
  In<A, float> param{ctx.inputs[0].ptr<float>()};
  In<A, float> grad{ctx.inputs[1].ptr<float>()};
  In<A, float> velocity{ctx.inputs[2].ptr<float>()};
  Out<A, float> param_out{OutputOf<A, float>(ctx.outputs[0])};
  Out<A, float> velocity_out{OutputOf<A, float>(ctx.outputs[1])};
  const int64_t n = ctx.inputs[0].elements();
  for (int64_t i = 0; i < n; ++i) {
    const float p = param[i], g = grad[i], v = velocity[i];
    const float v_new = momentum * v + g;
    velocity_out.Set(i, v_new);
    param_out.Set(i, p - lr * v_new);
  }
}

template <typename A>
void AdamF32(const KernelContext& ctx) {
  const double lr = ctx.attrs.Float("lr");
  const double beta1 = ctx.attrs.Float("beta1");
  const double beta2 = ctx.attrs.Float("beta2");
  const double epsilon = ctx.attrs.Float("epsilon");
  const auto step = static_cast<double>(ctx.attrs.Int("step"));
  const double correction1 = 1.0 - std::pow(beta1, step);
  const double correction2 = 1.0 - std::pow(beta2, step);
  In<A, float> param{ctx.inputs[0].ptr<float>()};
  In<A, float> grad{ctx.inputs[1].ptr<float>()};
  In<A, float> m{ctx.inputs[2].ptr<float>()};
  In<A, float> v{ctx.inputs[3].ptr<float>()};
  Out<A, float> param_out{OutputOf<A, float>(ctx.outputs[0])};
  Out<A, float> m_out{OutputOf<A, float>(ctx.outputs[1])};
  Out<A, float> v_out{OutputOf<A, float>(ctx.outputs[2])};
  const int64_t n = ctx.inputs[0].elements();
  for (int64_t i = 0; i < n; ++i) {
    const double p = param[i], g = grad[i], m_old = m[i], v_old = v[i];
    const double m_new = beta1 * m_old + (1.0 - beta1) * g;
    const double v_new = beta2 * v_old + (1.0 - beta2) * g * g;
    const double m_hat = m_new / correction1;
    const double v_hat = v_new / correction2;
    m_out.Set(i, static_cast<float>(m_new));
    v_out.Set(i, static_cast<float>(v_new));
    param_out.Set(i, static_cast<float>(p - lr * m_hat / (std::sqrt(v_hat) + epsilon)));
  }
}

MF_INSTANTIATE_KERNEL(SgdMomentumF32)
MF_INSTANTIATE_KERNEL(AdamF32)

}  // namespace memfold

// Kernels of Echo's rewrites.
//
// batch_norm_apply rebuilds batch_norm_train's output from the statistics that node saved, with
// the same float expression, so the recomputed feature map is bit-identical and the running
// statistics are not updated a second time. mask_encode packs a float mask (dropout's, or a
// ReLU output whose gradient needs only its sign) into one bit per element, bit k of byte
// k / 8 = element k is non-zero; mask_decode expands it back to 0 or `value`. All O(elements).
#include <algorithm>

#include "memfold/ops/channel_axis.h"
#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/host/train_kernels.h"

namespace memfold {

template <typename A>
void BatchNormApplyF32(const KernelContext& ctx) {
  const ChannelLayout layout = LayoutOf(ctx.inputs[0].shape, ctx.attrs.Int("axis"));
  const int64_t n = ctx.inputs[0].elements();
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  In<A, float> gamma{ctx.inputs[1].ptr<float>()};
  In<A, float> beta{ctx.inputs[2].ptr<float>()};
  In<A, float> mean{ctx.inputs[3].ptr<float>()};
  In<A, float> invstd{ctx.inputs[4].ptr<float>()};
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = (i / layout.inner) % layout.channels;
    y.Set(i, (x[i] - mean[c]) * invstd[c] * gamma[c] + beta[c]);
  }
}

MF_INSTANTIATE_KERNEL(BatchNormApplyF32)

template <typename A>
void MaskEncodeF32(const KernelContext& ctx) {
  const int64_t n = ctx.inputs[0].elements();
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  Out<A, uint8_t> bits{OutputOf<A, uint8_t>(ctx.outputs[0])};
  for (int64_t byte = 0; byte * 8 < n; ++byte) {
    uint8_t packed = 0;
    for (int64_t k = byte * 8; k < std::min(n, byte * 8 + 8); ++k) {
      if (x[k] != 0.0f) packed = static_cast<uint8_t>(packed | (1u << (k % 8)));
    }
    bits.Set(byte, packed);
  }
}

template <typename A>
void MaskDecode(const KernelContext& ctx) {
  const int64_t n = ctx.outputs[0].elements();
  const auto value = static_cast<float>(ctx.attrs.Float("value"));
  In<A, uint8_t> bits{ctx.inputs[0].ptr<uint8_t>()};
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  for (int64_t k = 0; k < n; ++k) y.Set(k, (bits[k / 8] >> (k % 8)) & 1u ? value : 0.0f);
}

MF_INSTANTIATE_KERNEL(MaskEncodeF32)
MF_INSTANTIATE_KERNEL(MaskDecode)

}  // namespace memfold

// tanh and sigmoid for training graphs (ops tanh_train and sigmoid_train, float32): the gradient
// pass lowers a training step's float tanh and sigmoid to them, as it lowers convolutions to
// BLAS. Inference keeps TFLM's std::tanh and logistic, which float .tflite outputs are compared
// against; a training step needs no bit-exactness with TFLM, only with itself (a recomputed
// clone runs the same kernel as the node it copies), and its recomputed activations were the
// scalar libm calls that made Echo's NMT step slow.
//
// The functions are branch-free arithmetic, so the element loops vectorise (the file is built
// with -fno-trapping-math, which lets GCC turn its selects into blends). Accuracy: within
// 2e-7 + 1e-6 |y| of libm's results, tested on a dense grid. O(elements).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/host/train_kernels.h"
#include "memfold/ops/kernels/kernel_util.h"

namespace memfold {
namespace {

// exp(x): x = n ln2 + r, |r| <= ln2 / 2, with ln2 split in two so that n ln2 is exact to float
// precision; exp(r) by its degree-7 Taylor polynomial in Horner form, 2^n from the exponent
// bits. x is clamped to [-87, 88] so that 2^n stays a normal float; NaN stays NaN.
inline float VectorExp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float k = (x == x ? x : 0.0f) * 1.44269504088896341f;
  const auto n = static_cast<int32_t>(k + (k >= 0.0f ? 0.5f : -0.5f));
  const auto nf = static_cast<float>(n);
  const float r = (x - nf * 0.693359375f) + nf * 2.12194440e-4f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * std::bit_cast<float>(static_cast<uint32_t>(n + 127) << 23);
}

inline float VectorSigmoid(float x) { return 1.0f / (1.0f + VectorExp(-x)); }

// tanh(x) = sign(x) (1 - t) / (1 + t), t = exp(-2|x|); below |x| = 1/4, where 1 - t would
// cancel, its odd Taylor polynomial to x^11.
inline float VectorTanh(float x) {
  const float a = std::abs(x);
  const float t = VectorExp(-2.0f * a);
  const float large = (1.0f - t) / (1.0f + t);
  const float s = a * a;
  float p = -1382.0f / 155925.0f;
  p = p * s + 62.0f / 2835.0f;
  p = p * s - 17.0f / 315.0f;
  p = p * s + 2.0f / 15.0f;
  p = p * s - 1.0f / 3.0f;
  const float small = a + a * s * p;
  return std::copysign(a < 0.25f ? small : large, x);
}

}  // namespace

template <typename A>
void TanhTrainF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, VectorTanh);
}

template <typename A>
void SigmoidTrainF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, VectorSigmoid);
}

MF_INSTANTIATE_KERNEL(TanhTrainF32)
MF_INSTANTIATE_KERNEL(SigmoidTrainF32)

}  // namespace memfold

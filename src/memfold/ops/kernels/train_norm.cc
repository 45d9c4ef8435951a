// Batch normalisation (training mode), layer normalisation, their gradients, and dropout
// (float32). Statistics are two-pass (mean, then squared deviations) and kept in double.
#include <cmath>
#include <cstdint>
#include <utility>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/train_kernels.h"

namespace memfold {
namespace {

// Mean and biased variance of `count` elements x[first + k * step].
template <typename A>
std::pair<double, double> MeanAndVariance(In<A, float> x, int64_t first, int64_t step, int64_t count) {
  if (count == 0) return {0.0, 0.0};
  double sum = 0.0;
  for (int64_t k = 0; k < count; ++k) sum += x[first + k * step];
  const double mean = sum / static_cast<double>(count);
  double squares = 0.0;
  for (int64_t k = 0; k < count; ++k) {
    const double d = x[first + k * step] - mean;
    squares += d * d;
  }
  return {mean, squares / static_cast<double>(count)};
}

float InvStd(double variance, double epsilon) {
  return static_cast<float>(1.0 / std::sqrt(variance + epsilon));
}

uint64_t SplitMix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

template <typename A>
void BatchNormTrainF32(const KernelContext& ctx) {
  const int64_t channels = ctx.inputs[0].shape().back();
  const int64_t rows = channels == 0 ? 0 : ctx.inputs[0].elements() / channels;
  const double epsilon = ctx.node.attrs.Float("epsilon");
  const double momentum = ctx.node.attrs.Float("momentum");
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  In<A, float> gamma{ctx.inputs[1].ptr<float>()};
  In<A, float> beta{ctx.inputs[2].ptr<float>()};
  Out<A, float> y{ctx.outputs[0].ptr<float>()};
  Out<A, float> saved_mean{ctx.outputs[1].ptr<float>()};
  Out<A, float> saved_invstd{ctx.outputs[2].ptr<float>()};
  // The running statistics are updated in place. A constant that is not state is bound to the
  // graph's shared bytes, so it is left alone; state constants get a per-session mutable copy.
  auto writable = [](const TensorArg& t) {
    return !t.value->is_constant() || t.value->role == Role::kState;
  };
  const bool update_mean = rows > 0 && writable(ctx.inputs[3]);
  const bool update_var = rows > 0 && writable(ctx.inputs[4]);
  Out<A, float> running_mean{ctx.inputs[3].ptr<float>()};
  Out<A, float> running_var{ctx.inputs[4].ptr<float>()};
  for (int64_t c = 0; c < channels; ++c) {
    const auto [mean, variance] = MeanAndVariance<A>(x, c, channels, rows);
    const auto mean_f = static_cast<float>(mean);
    const float invstd = InvStd(variance, epsilon);
    saved_mean.Set(c, mean_f);
    saved_invstd.Set(c, invstd);
    const float g = gamma[c], b = beta[c];
    for (int64_t m = 0; m < rows; ++m) {
      const int64_t i = m * channels + c;
      y.Set(i, (x[i] - mean_f) * invstd * g + b);
    }
    if (update_mean) {
      running_mean.Set(c, static_cast<float>(momentum * running_mean[c] + (1.0 - momentum) * mean));
    }
    if (update_var) {
      const double unbiased = rows > 1 ? variance * static_cast<double>(rows) / static_cast<double>(rows - 1)
                                       : variance;
      running_var.Set(c, static_cast<float>(momentum * running_var[c] + (1.0 - momentum) * unbiased));
    }
  }
}

template <typename A>
void BatchNormGradF32(const KernelContext& ctx) {
  const int64_t channels = ctx.inputs[1].shape().back();
  const int64_t rows = channels == 0 ? 0 : ctx.inputs[1].elements() / channels;
  In<A, float> dy{ctx.inputs[0].ptr<float>()};
  In<A, float> x{ctx.inputs[1].ptr<float>()};
  In<A, float> gamma{ctx.inputs[2].ptr<float>()};
  In<A, float> mean{ctx.inputs[3].ptr<float>()};
  In<A, float> invstd{ctx.inputs[4].ptr<float>()};
  Out<A, float> dx{ctx.outputs[0].ptr<float>()};
  Out<A, float> dgamma{ctx.outputs[1].ptr<float>()};
  Out<A, float> dbeta{ctx.outputs[2].ptr<float>()};
  for (int64_t c = 0; c < channels; ++c) {
    const double mu = mean[c], inv = invstd[c];
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int64_t m = 0; m < rows; ++m) {
      const int64_t i = m * channels + c;
      const double g = dy[i];
      sum_dy += g;
      sum_dy_xhat += g * (x[i] - mu) * inv;
    }
    dbeta.Set(c, static_cast<float>(sum_dy));
    dgamma.Set(c, static_cast<float>(sum_dy_xhat));
    if (rows == 0) continue;
    const double n = static_cast<double>(rows);
    const double k = gamma[c] * inv / n;
    for (int64_t m = 0; m < rows; ++m) {
      const int64_t i = m * channels + c;
      const double xhat = (x[i] - mu) * inv;
      dx.Set(i, static_cast<float>(k * (n * dy[i] - sum_dy - xhat * sum_dy_xhat)));
    }
  }
}

template <typename A>
void LayerNormF32(const KernelContext& ctx) {
  const int64_t depth = ctx.inputs[0].shape().back();
  const int64_t rows = depth == 0 ? 0 : ctx.inputs[0].elements() / depth;
  const double epsilon = ctx.node.attrs.Float("epsilon");
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  In<A, float> gamma{ctx.inputs[1].ptr<float>()};
  In<A, float> beta{ctx.inputs[2].ptr<float>()};
  Out<A, float> y{ctx.outputs[0].ptr<float>()};
  Out<A, float> mean_out{ctx.outputs[1].ptr<float>()};
  Out<A, float> invstd_out{ctx.outputs[2].ptr<float>()};
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = r * depth;
    const auto [mean, variance] = MeanAndVariance<A>(x, row, 1, depth);
    const auto mean_f = static_cast<float>(mean);
    const float invstd = InvStd(variance, epsilon);
    mean_out.Set(r, mean_f);
    invstd_out.Set(r, invstd);
    for (int64_t d = 0; d < depth; ++d) {
      y.Set(row + d, (x[row + d] - mean_f) * invstd * gamma[d] + beta[d]);
    }
  }
}

template <typename A>
void LayerNormGradF32(const KernelContext& ctx) {
  const int64_t depth = ctx.inputs[1].shape().back();
  const int64_t rows = depth == 0 ? 0 : ctx.inputs[1].elements() / depth;
  In<A, float> dy{ctx.inputs[0].ptr<float>()};
  In<A, float> x{ctx.inputs[1].ptr<float>()};
  In<A, float> gamma{ctx.inputs[2].ptr<float>()};
  In<A, float> mean{ctx.inputs[3].ptr<float>()};
  In<A, float> invstd{ctx.inputs[4].ptr<float>()};
  Out<A, float> dx{ctx.outputs[0].ptr<float>()};
  Out<A, float> dgamma{ctx.outputs[1].ptr<float>()};
  Out<A, float> dbeta{ctx.outputs[2].ptr<float>()};
  const double n = static_cast<double>(depth);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = r * depth;
    const double mu = mean[r], inv = invstd[r];
    double sum_g = 0.0, sum_g_xhat = 0.0;  // g = dy * gamma, the gradient w.r.t. xhat
    for (int64_t d = 0; d < depth; ++d) {
      const double g = static_cast<double>(dy[row + d]) * gamma[d];
      sum_g += g;
      sum_g_xhat += g * (x[row + d] - mu) * inv;
    }
    for (int64_t d = 0; d < depth; ++d) {
      const double g = static_cast<double>(dy[row + d]) * gamma[d];
      const double xhat = (x[row + d] - mu) * inv;
      dx.Set(row + d, static_cast<float>(inv / n * (n * g - sum_g - xhat * sum_g_xhat)));
    }
  }
  for (int64_t d = 0; d < depth; ++d) {
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      const double g = dy[r * depth + d];
      sum_dy += g;
      sum_dy_xhat += g * (x[r * depth + d] - static_cast<double>(mean[r])) * invstd[r];
    }
    dgamma.Set(d, static_cast<float>(sum_dy_xhat));
    dbeta.Set(d, static_cast<float>(sum_dy));
  }
}

double DropoutUniform(int64_t seed, int64_t index) {
  const uint64_t key = static_cast<uint64_t>(seed) * 0xD1B54A32D192ED03ull + static_cast<uint64_t>(index);
  return static_cast<double>(SplitMix64(key) >> 11) * 0x1.0p-53;  // top 53 bits -> [0, 1)
}

bool DropoutKeeps(int64_t seed, int64_t index, double rate) {
  return DropoutUniform(seed, index) >= rate;
}

template <typename A>
void DropoutF32(const KernelContext& ctx) {
  const double rate = ctx.node.attrs.Float("rate");
  const int64_t seed = ctx.node.attrs.Int("seed");
  const auto scale = static_cast<float>(1.0 / (1.0 - rate));
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  Out<A, float> y{ctx.outputs[0].ptr<float>()};
  Out<A, float> mask{ctx.outputs[1].ptr<float>()};
  const int64_t n = ctx.inputs[0].elements();
  for (int64_t i = 0; i < n; ++i) {
    const float keep = DropoutKeeps(seed, i, rate) ? scale : 0.0f;
    y.Set(i, x[i] * keep);
    mask.Set(i, keep);
  }
}

MF_INSTANTIATE_KERNEL(BatchNormTrainF32)
MF_INSTANTIATE_KERNEL(BatchNormGradF32)
MF_INSTANTIATE_KERNEL(LayerNormF32)
MF_INSTANTIATE_KERNEL(LayerNormGradF32)
MF_INSTANTIATE_KERNEL(DropoutF32)

}  // namespace memfold

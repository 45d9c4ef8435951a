// Batch normalisation (training mode), layer normalisation, their gradients, and dropout
// (float32). Statistics are two-pass (mean, then squared deviations) and kept in double.
// Batch norm normalises each channel (ops/channel_axis.h: the last axis, or PyTorch's axis 1),
// a block of channels per sweep over the tensor; layer norm each row of the [rows, D] view.
// O(elements) each, a constant number of passes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "memfold/base/splitmix.h"
#include "memfold/ops/channel_axis.h"
#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/host/train_kernels.h"

namespace memfold {
namespace {

// Mean and biased variance of `count` elements x[index(k)].
template <typename A, typename Index>
std::pair<double, double> MeanAndVariance(In<A, float> x, int64_t count, Index index) {
  if (count == 0) return {0.0, 0.0};
  double sum = 0.0;
  for (int64_t k = 0; k < count; ++k) sum += x[index(k)];
  const double mean = sum / static_cast<double>(count);
  double squares = 0.0;
  for (int64_t k = 0; k < count; ++k) {
    const double d = x[index(k)] - mean;
    squares += d * d;
  }
  return {mean, squares / static_cast<double>(count)};
}

float InvStd(double variance, double epsilon) {
  return static_cast<float>(1.0 / std::sqrt(variance + epsilon));
}

// The statistics of one normalised group (a batch-norm channel or a layer-norm row): in
// double, and the float mean and inverse standard deviation the forward op saves and uses.
struct GroupStats {
  double mean, variance;
  float mean_f, invstd;
};

// The tensors of batch_norm_train and layer_norm, at the same positions in both: inputs x,
// gamma, beta; outputs y and the saved mean and inverse standard deviation of each group.
// x is viewed as [rows, depth], depth its last axis.
template <typename A>
struct NormForward {
  explicit NormForward(const KernelContext& ctx)
      : depth(ctx.inputs[0].shape.back()),
        rows(depth == 0 ? 0 : ctx.inputs[0].elements() / depth),
        epsilon(ctx.attrs.Float("epsilon")),
        x{ctx.inputs[0].ptr<float>()},
        gamma{ctx.inputs[1].ptr<float>()},
        beta{ctx.inputs[2].ptr<float>()},
        y{OutputOf<A, float>(ctx.outputs[0])},
        saved_mean{OutputOf<A, float>(ctx.outputs[1])},
        saved_invstd{OutputOf<A, float>(ctx.outputs[2])} {}

  // The statistics of the group of `count` elements x[index(k)], saved at `group`.
  template <typename Index>
  GroupStats Save(int64_t group, int64_t count, Index index) const {
    const auto [mean, variance] = MeanAndVariance<A>(x, count, index);
    const GroupStats stats{mean, variance, static_cast<float>(mean), InvStd(variance, epsilon)};
    saved_mean.Set(group, stats.mean_f);
    saved_invstd.Set(group, stats.invstd);
    return stats;
  }

  int64_t depth, rows;
  double epsilon;
  In<A, float> x, gamma, beta;
  Out<A, float> y, saved_mean, saved_invstd;
};

// One element's term of a normalisation gradient sum: the gradient g and the statistics that
// normalise the element, xhat = (x - mu) * inv.
struct GradTerm {
  double g, mu, inv;
};

// The tensors of batch_norm_grad and layer_norm_grad, at the same positions in both: inputs
// dy, x, gamma and the forward op's saved mean and invstd; outputs dx, dgamma, dbeta. x is
// viewed as [rows, depth], depth its last axis.
template <typename A>
struct NormBackward {
  explicit NormBackward(const KernelContext& ctx)
      : depth(ctx.inputs[1].shape.back()),
        rows(depth == 0 ? 0 : ctx.inputs[1].elements() / depth),
        dy{ctx.inputs[0].ptr<float>()},
        x{ctx.inputs[1].ptr<float>()},
        gamma{ctx.inputs[2].ptr<float>()},
        mean{ctx.inputs[3].ptr<float>()},
        invstd{ctx.inputs[4].ptr<float>()},
        dx{OutputOf<A, float>(ctx.outputs[0])},
        dgamma{OutputOf<A, float>(ctx.outputs[1])},
        dbeta{OutputOf<A, float>(ctx.outputs[2])} {}

  // The sums of g and of g * (x[i] - mu) * inv over the `count` elements i = index(k), in
  // double, with {g, mu, inv} = term(i, k).
  template <typename Index, typename Term>
  std::pair<double, double> Sums(int64_t count, Index index, Term term) const {
    double sum_g = 0.0, sum_g_xhat = 0.0;
    for (int64_t k = 0; k < count; ++k) {
      const int64_t i = index(k);
      const GradTerm t = term(i, k);
      sum_g += t.g;
      sum_g_xhat += t.g * (x[i] - t.mu) * t.inv;
    }
    return {sum_g, sum_g_xhat};
  }

  int64_t depth, rows;
  In<A, float> dy, x, gamma, mean, invstd;
  Out<A, float> dx, dgamma, dbeta;
};

// Batch norm visits its channels a block at a time, every element of the block's channels in
// one sweep over the tensor, with per-channel sums in arrays on the stack: channels-last
// tensors are read row by row instead of once per channel, and each channel still sums its
// elements in the order m = 0, 1, ... of ChannelLayout::Index.
constexpr int64_t kChannelBlock = 64;

struct ChannelBlock {
  const ChannelLayout& layout;
  int64_t first, last;  // channels [first, last)

  int64_t size() const { return last - first; }

  // visit(c, i) for element i of channel first + c, each channel's elements in order.
  template <typename Fn>
  void Visit(Fn visit) const {
    if (layout.inner == 1) {  // channels last: one contiguous run of the block per row
      for (int64_t o = 0; o < layout.outer; ++o) {
        const int64_t row = o * layout.channels + first;
        for (int64_t c = 0; c < size(); ++c) visit(c, row + c);
      }
      return;
    }
    for (int64_t o = 0; o < layout.outer; ++o) {
      for (int64_t c = first; c < last; ++c) {
        const int64_t base = (o * layout.channels + c) * layout.inner;
        for (int64_t i = 0; i < layout.inner; ++i) visit(c - first, base + i);
      }
    }
  }
};

template <typename Body>
void ForEachChannelBlock(const ChannelLayout& layout, Body body) {
  for (int64_t c = 0; c < layout.channels; c += kChannelBlock) {
    body(ChannelBlock{layout, c, std::min(layout.channels, c + kChannelBlock)});
  }
}

}  // namespace

template <typename A>
void BatchNormTrainF32(const KernelContext& ctx) {
  const NormForward<A> t(ctx);
  const ChannelLayout layout = LayoutOf(ctx.inputs[0].shape, ctx.attrs.Int("axis"));
  const int64_t rows = layout.per_channel();
  const auto count = static_cast<double>(rows);
  const double momentum = ctx.attrs.Float("momentum");
  // The running statistics are updated in place. A constant that is not state is bound to the
  // graph's shared bytes, so it is left alone; state constants get a per-session mutable copy.
  const bool update_mean = rows > 0 && !ctx.inputs[3].read_only;
  const bool update_var = rows > 0 && !ctx.inputs[4].read_only;
  Out<A, float> running_mean{ctx.inputs[3].ptr<float>()};
  Out<A, float> running_var{ctx.inputs[4].ptr<float>()};
  ForEachChannelBlock(layout, [&](ChannelBlock block) {
    double sum[kChannelBlock] = {}, squares[kChannelBlock] = {};
    block.Visit([&](int64_t c, int64_t i) { sum[c] += t.x[i]; });
    double mean[kChannelBlock];
    for (int64_t c = 0; c < block.size(); ++c) mean[c] = rows > 0 ? sum[c] / count : 0.0;
    block.Visit([&](int64_t c, int64_t i) {
      const double d = t.x[i] - mean[c];
      squares[c] += d * d;
    });
    float mean_f[kChannelBlock], invstd[kChannelBlock];
    for (int64_t c = 0; c < block.size(); ++c) {
      const int64_t channel = block.first + c;
      const double variance = rows > 0 ? squares[c] / count : 0.0;
      mean_f[c] = static_cast<float>(mean[c]);
      invstd[c] = InvStd(variance, t.epsilon);
      t.saved_mean.Set(channel, mean_f[c]);
      t.saved_invstd.Set(channel, invstd[c]);
      if (update_mean) {
        running_mean.Set(channel, static_cast<float>(momentum * running_mean[channel] +
                                                     (1.0 - momentum) * mean[c]));
      }
      if (update_var) {
        const double unbiased = rows > 1 ? variance * count / (count - 1.0) : variance;
        running_var.Set(channel, static_cast<float>(momentum * running_var[channel] +
                                                    (1.0 - momentum) * unbiased));
      }
    }
    block.Visit([&](int64_t c, int64_t i) {
      const int64_t channel = block.first + c;
      t.y.Set(i, (t.x[i] - mean_f[c]) * invstd[c] * t.gamma[channel] + t.beta[channel]);
    });
  });
}

template <typename A>
void BatchNormGradF32(const KernelContext& ctx) {
  const NormBackward<A> t(ctx);
  const ChannelLayout layout = LayoutOf(ctx.inputs[1].shape, ctx.attrs.Int("axis"));
  const auto n = static_cast<double>(layout.per_channel());
  // dx may take dy's buffer (in place): a block's dy is read in full before its dx is written.
  ForEachChannelBlock(layout, [&](ChannelBlock block) {
    double mu[kChannelBlock], inv[kChannelBlock];
    double sum_dy[kChannelBlock] = {}, sum_dy_xhat[kChannelBlock] = {};
    for (int64_t c = 0; c < block.size(); ++c) {
      mu[c] = t.mean[block.first + c];
      inv[c] = t.invstd[block.first + c];
    }
    block.Visit([&](int64_t c, int64_t i) {
      const double g = t.dy[i];
      sum_dy[c] += g;
      sum_dy_xhat[c] += g * (t.x[i] - mu[c]) * inv[c];
    });
    double k[kChannelBlock];
    for (int64_t c = 0; c < block.size(); ++c) {
      t.dbeta.Set(block.first + c, static_cast<float>(sum_dy[c]));
      t.dgamma.Set(block.first + c, static_cast<float>(sum_dy_xhat[c]));
      k[c] = n > 0 ? t.gamma[block.first + c] * inv[c] / n : 0.0;
    }
    if (n == 0) return;
    block.Visit([&](int64_t c, int64_t i) {
      const double xhat = (t.x[i] - mu[c]) * inv[c];
      t.dx.Set(i, static_cast<float>(k[c] * (n * t.dy[i] - sum_dy[c] - xhat * sum_dy_xhat[c])));
    });
  });
}

template <typename A>
void LayerNormF32(const KernelContext& ctx) {
  const NormForward<A> t(ctx);
  for (int64_t r = 0; r < t.rows; ++r) {
    const int64_t row = r * t.depth;
    const GroupStats s = t.Save(r, t.depth, [row](int64_t d) { return row + d; });
    for (int64_t d = 0; d < t.depth; ++d) {
      t.y.Set(row + d, (t.x[row + d] - s.mean_f) * s.invstd * t.gamma[d] + t.beta[d]);
    }
  }
}

template <typename A>
void LayerNormGradF32(const KernelContext& ctx) {
  const NormBackward<A> t(ctx);
  const int64_t depth = t.depth, rows = t.rows;
  // dgamma and dbeta first: dx may take dy's buffer (in place), so dy is read in full before
  // the first dx element is written.
  for (int64_t d = 0; d < depth; ++d) {
    const auto column = [d, depth](int64_t r) { return r * depth + d; };
    const auto [sum_dy, sum_dy_xhat] = t.Sums(rows, column, [&](int64_t i, int64_t r) {
      return GradTerm{t.dy[i], t.mean[r], t.invstd[r]};
    });
    t.dgamma.Set(d, static_cast<float>(sum_dy_xhat));
    t.dbeta.Set(d, static_cast<float>(sum_dy));
  }
  const double n = static_cast<double>(depth);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = r * depth;
    const double mu = t.mean[r], inv = t.invstd[r];
    // g = dy * gamma, the gradient w.r.t. xhat.
    const auto in_row = [row](int64_t d) { return row + d; };
    const auto [sum_g, sum_g_xhat] = t.Sums(depth, in_row, [&](int64_t i, int64_t d) {
      return GradTerm{static_cast<double>(t.dy[i]) * t.gamma[d], mu, inv};
    });
    for (int64_t d = 0; d < depth; ++d) {
      const double g = static_cast<double>(t.dy[row + d]) * t.gamma[d];
      const double xhat = (t.x[row + d] - mu) * inv;
      t.dx.Set(row + d, static_cast<float>(inv / n * (n * g - sum_g - xhat * sum_g_xhat)));
    }
  }
}

double DropoutUniform(int64_t seed, int64_t index) {
  const uint64_t key =
      static_cast<uint64_t>(seed) * 0xD1B54A32D192ED03ull + static_cast<uint64_t>(index);
  return static_cast<double>(SplitMix64(key) >> 11) * 0x1.0p-53;  // top 53 bits -> [0, 1)
}

bool DropoutKeeps(int64_t seed, int64_t index, double rate) {
  return DropoutUniform(seed, index) >= rate;
}

template <typename A>
void DropoutF32(const KernelContext& ctx) {
  const double rate = ctx.attrs.Float("rate");
  const int64_t seed = ctx.attrs.Int("seed");
  const auto scale = static_cast<float>(1.0 / (1.0 - rate));
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  Out<A, float> mask{OutputOf<A, float>(ctx.outputs[1])};
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

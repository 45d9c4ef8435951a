// Activation and softmax gradients, losses, reduce_sum, gather and scatter_add (float32).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/host/train_kernels.h"

namespace memfold {
namespace {

// out[i] = f(a[i], b[i]) for two inputs of the output's shape, increasing index.
template <typename A, typename F>
void Pointwise(const KernelContext& ctx, F f) {
  In<A, float> a{ctx.inputs[0].ptr<float>()};
  In<A, float> b{ctx.inputs[1].ptr<float>()};
  Out<A, float> out{OutputOf<A, float>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) out.Set(i, f(a[i], b[i]));
}

// A row-major odometer over `dims` that keeps the matching offset into a tensor whose
// dimensions have the given strides.
class Odometer {
 public:
  void AddDim(int64_t dim, int64_t stride) {
    dims_.push_back(dim);
    strides_.push_back(stride);
    coord_.push_back(0);
  }
  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : dims_) n *= d;
    return n;
  }
  int64_t offset() const { return offset_; }
  void Reset() {
    std::fill(coord_.begin(), coord_.end(), 0);
    offset_ = 0;
  }
  void Next() {
    for (size_t d = dims_.size(); d-- > 0;) {
      offset_ += strides_[d];
      if (++coord_[d] < dims_[d]) return;
      offset_ -= strides_[d] * dims_[d];
      coord_[d] = 0;
    }
  }

 private:
  std::vector<int64_t> dims_, strides_, coord_;
  int64_t offset_ = 0;
};

bool ValidIndex(int64_t index, int64_t count) { return index >= 0 && index < count; }

int64_t ClampIndex(int64_t index, int64_t count) {
  return std::min(std::max<int64_t>(index, 0), count - 1);
}

}  // namespace

template <typename A>
void ReluGradF32(const KernelContext& ctx) {
  Pointwise<A>(ctx, [](float dy, float y) { return y > 0.0f ? dy : 0.0f; });
}

template <typename A>
void TanhGradF32(const KernelContext& ctx) {
  Pointwise<A>(ctx, [](float dy, float y) { return dy * (1.0f - y * y); });
}

template <typename A>
void SigmoidGradF32(const KernelContext& ctx) {
  Pointwise<A>(ctx, [](float dy, float y) { return dy * y * (1.0f - y); });
}

template <typename A>
void DropoutGradF32(const KernelContext& ctx) {
  Pointwise<A>(ctx, [](float dy, float mask) { return dy * mask; });
}

template <typename A>
void SoftmaxGradF32(const KernelContext& ctx) {
  const int64_t depth = ctx.inputs[0].shape.back();
  const int64_t rows = depth == 0 ? 0 : ctx.inputs[0].elements() / depth;
  In<A, float> dy{ctx.inputs[0].ptr<float>()};
  In<A, float> y{ctx.inputs[1].ptr<float>()};
  Out<A, float> dx{OutputOf<A, float>(ctx.outputs[0])};
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = r * depth;
    double dot = 0.0;
    for (int64_t c = 0; c < depth; ++c) dot += static_cast<double>(dy[row + c]) * y[row + c];
    const auto dot_f = static_cast<float>(dot);
    for (int64_t c = 0; c < depth; ++c) dx.Set(row + c, y[row + c] * (dy[row + c] - dot_f));
  }
}

namespace {

// max and log(sum(exp(x - max))) of one row of logits.
template <typename A>
std::pair<double, double> RowLogSumExp(In<A, float> logits, int64_t row, int64_t classes) {
  double max = logits[row];
  for (int64_t c = 1; c < classes; ++c) max = std::max<double>(max, logits[row + c]);
  double sum = 0.0;
  for (int64_t c = 0; c < classes; ++c) sum += std::exp(logits[row + c] - max);
  return {max, std::log(sum)};
}

}  // namespace

template <typename A>
void SoftmaxCrossEntropyF32(const KernelContext& ctx) {
  const int64_t batch = ctx.inputs[0].shape[0], classes = ctx.inputs[0].shape[1];
  In<A, float> logits{ctx.inputs[0].ptr<float>()};
  In<A, int32_t> labels{ctx.inputs[1].ptr<int32_t>()};
  Out<A, float> loss{OutputOf<A, float>(ctx.outputs[0])};
  double total = 0.0;
  for (int64_t n = 0; n < batch; ++n) {
    const int64_t label = labels[n];
    if (!ValidIndex(label, classes)) continue;  // ignored row: zero loss
    const int64_t row = n * classes;
    const auto [max, log_sum] = RowLogSumExp<A>(logits, row, classes);
    total += log_sum + max - logits[row + label];
  }
  loss.Set(0, batch == 0 ? 0.0f : static_cast<float>(total / static_cast<double>(batch)));
}

template <typename A>
void SoftmaxCrossEntropyGradF32(const KernelContext& ctx) {
  In<A, float> dloss{ctx.inputs[0].ptr<float>()};
  In<A, float> logits{ctx.inputs[1].ptr<float>()};
  In<A, int32_t> labels{ctx.inputs[2].ptr<int32_t>()};
  Out<A, float> dx{OutputOf<A, float>(ctx.outputs[0])};
  const int64_t batch = ctx.inputs[1].shape[0], classes = ctx.inputs[1].shape[1];
  const double scale =
      batch == 0 ? 0.0 : static_cast<double>(dloss[0]) / static_cast<double>(batch);
  for (int64_t n = 0; n < batch; ++n) {
    const int64_t row = n * classes;
    const int64_t label = labels[n];
    if (!ValidIndex(label, classes)) {
      for (int64_t c = 0; c < classes; ++c) dx.Set(row + c, 0.0f);
      continue;
    }
    const auto [max, log_sum] = RowLogSumExp<A>(logits, row, classes);
    for (int64_t c = 0; c < classes; ++c) {
      const double p = std::exp(logits[row + c] - max - log_sum);
      dx.Set(row + c, static_cast<float>((p - (c == label ? 1.0 : 0.0)) * scale));
    }
  }
}

template <typename A>
void MseLossF32(const KernelContext& ctx) {
  In<A, float> pred{ctx.inputs[0].ptr<float>()};
  In<A, float> target{ctx.inputs[1].ptr<float>()};
  Out<A, float> loss{OutputOf<A, float>(ctx.outputs[0])};
  const int64_t n = ctx.inputs[0].elements();
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(pred[i]) - target[i];
    total += d * d;
  }
  loss.Set(0, n == 0 ? 0.0f : static_cast<float>(total / static_cast<double>(n)));
}

template <typename A>
void MseLossGradF32(const KernelContext& ctx) {
  In<A, float> dloss{ctx.inputs[0].ptr<float>()};
  In<A, float> pred{ctx.inputs[1].ptr<float>()};
  In<A, float> target{ctx.inputs[2].ptr<float>()};
  Out<A, float> dx{OutputOf<A, float>(ctx.outputs[0])};
  const int64_t n = ctx.inputs[1].elements();
  const double scale = n == 0 ? 0.0 : 2.0 * dloss[0] / static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) {
    dx.Set(i, static_cast<float>((static_cast<double>(pred[i]) - target[i]) * scale));
  }
}

template <typename A>
void ReduceSumF32(const KernelContext& ctx) {
  const ShapeView in = ctx.inputs[0].shape;
  const auto rank = static_cast<int64_t>(in.size());
  std::vector<char> reduced(in.size(), 0);
  for (int64_t a : ctx.attrs.Ints("axes")) reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = 1;
  Odometer kept, summed;
  int64_t stride = 1;
  std::vector<int64_t> strides(in.size());
  for (size_t d = in.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= in[d];
  }
  for (size_t d = 0; d < in.size(); ++d) (reduced[d] ? summed : kept).AddDim(in[d], strides[d]);
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  const int64_t outputs = kept.count(), inner = summed.count();
  for (int64_t o = 0; o < outputs; ++o, kept.Next()) {
    double sum = 0.0;
    summed.Reset();
    for (int64_t j = 0; j < inner; ++j, summed.Next()) sum += x[kept.offset() + summed.offset()];
    y.Set(o, static_cast<float>(sum));
  }
}

// Row ids are int32 (TFLite, memfold's zoo) or int64 (PyTorch's indices): calls
// visit(ids view) with the view of the node's id input (input 1).
template <typename A, typename Visit>
void VisitIds(const KernelContext& ctx, Visit visit) {
  const TensorArg& ids = ctx.inputs[1];
  if (ids.dtype == DType::kI64) {
    visit(In<A, int64_t>{ids.ptr<int64_t>()});
  } else {
    visit(In<A, int32_t>{ids.ptr<int32_t>()});
  }
}

template <typename A>
void GatherF32(const KernelContext& ctx) {
  const int64_t vocab = ctx.inputs[0].shape[0], depth = ctx.inputs[0].shape[1];
  In<A, float> table{ctx.inputs[0].ptr<float>()};
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  const int64_t n = ctx.inputs[1].elements();
  VisitIds<A>(ctx, [&](auto ids) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = ClampIndex(ids[i], vocab) * depth;
      for (int64_t d = 0; d < depth; ++d) y.Set(i * depth + d, table[row + d]);
    }
  });
}

template <typename A>
void ScatterAddF32(const KernelContext& ctx) {
  const int64_t rows = ctx.outputs[0].shape[0], depth = ctx.outputs[0].shape[1];
  In<A, float> dy{ctx.inputs[0].ptr<float>()};
  Out<A, float> table{OutputOf<A, float>(ctx.outputs[0])};
  const int64_t total = ctx.outputs[0].elements();
  for (int64_t i = 0; i < total; ++i) table.Set(i, 0.0f);
  const int64_t n = ctx.inputs[1].elements();
  VisitIds<A>(ctx, [&](auto ids) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = ClampIndex(ids[i], rows) * depth;
      for (int64_t d = 0; d < depth; ++d) table.Set(row + d, table[row + d] + dy[i * depth + d]);
    }
  });
}

MF_INSTANTIATE_KERNEL(ReluGradF32)
MF_INSTANTIATE_KERNEL(TanhGradF32)
MF_INSTANTIATE_KERNEL(SigmoidGradF32)
MF_INSTANTIATE_KERNEL(DropoutGradF32)
MF_INSTANTIATE_KERNEL(SoftmaxGradF32)
MF_INSTANTIATE_KERNEL(SoftmaxCrossEntropyF32)
MF_INSTANTIATE_KERNEL(SoftmaxCrossEntropyGradF32)
MF_INSTANTIATE_KERNEL(MseLossF32)
MF_INSTANTIATE_KERNEL(MseLossGradF32)
MF_INSTANTIATE_KERNEL(ReduceSumF32)
MF_INSTANTIATE_KERNEL(GatherF32)
MF_INSTANTIATE_KERNEL(ScatterAddF32)

}  // namespace memfold

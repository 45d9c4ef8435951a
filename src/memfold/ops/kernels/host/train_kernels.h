// float32 CPU kernels of the training ops: activation / softmax gradients, losses and their
// gradients, reduce_sum, gather / scatter_add (train_elementwise.cc), conv, depthwise and pool
// backprops (train_window.cc), batch / layer normalisation and dropout (train_norm.cc) and the
// optimizer steps (train_optim.cc). Like the forward kernels they are templates over an access
// policy (access.h), instantiated for `Direct` and `Traced`, and touch tensors only through
// In<A, T> / Out<A, T>.
//
// Complexity: linear in the elements touched, except the conv backprops
// (O(N * OH * OW * KH * KW * IC * OC) for conv2d, O(N * OH * OW * KH * KW * C * M) for
// depthwise) and the pool gradients (O(dy elements * window)). Reductions of statistics
// (losses, norms, reduce_sum) accumulate in double.
//
// Preconditions: shapes, dtypes and attributes were checked by the op's inference function
// (train_infer.h); scratch buffers have the sizes the op's ScratchFn asked for.
//
// Out-of-range indices never cause an out-of-bounds access:
//   * softmax_cross_entropy(_grad): a label outside [0, C) (e.g. -1 padding) contributes zero
//     loss and zero gradient for its row; the mean still divides by N.
//   * gather clamps each id into [0, V - 1]; scatter_add clamps into [0, rows - 1] the same
//     way, so scatter_add is exactly the adjoint of gather.
//
// In-place behaviour:
//   * sgd_momentum and adam are correct when an output pointer equals the input pointer it
//     updates (each element's inputs are read before its outputs are written).
//   * batch_norm_train also overwrites running_mean / running_var (inputs 3 and 4) once per
//     call: running = momentum * running + (1 - momentum) * batch statistic, with the unbiased
//     variance (the biased one when there is a single row). They should be Role::kState (a
//     Session keeps a mutable copy of state, constant or not). Constants of any other role
//     are left untouched: the executor binds them to the graph's shared, read-only bytes.
//     A re-execution of the node (e.g. recomputation) would update them again; y can instead
//     be recomputed bit for bit from saved_mean / saved_invstd as
//     (x - saved_mean) * saved_invstd * gamma + beta in float.
#pragma once

#include <cstdint>

#include "memfold/ops/registry.h"

namespace memfold {

// dx = y > 0 ? dy : 0;  dy * (1 - y^2);  dy * y * (1 - y);  dy * mask. Element by element,
// increasing index: safe in place over dy.
template <typename A>
void ReluGradF32(const KernelContext& ctx);
template <typename A>
void TanhGradF32(const KernelContext& ctx);
template <typename A>
void SigmoidGradF32(const KernelContext& ctx);
template <typename A>
void DropoutGradF32(const KernelContext& ctx);
// tanh and sigmoid of training graphs (train_activation.cc): branch-free, vectorised, within
// 2e-7 + 1e-6 |y| of libm; inference keeps TFLM's.
template <typename A>
void TanhTrainF32(const KernelContext& ctx);
template <typename A>
void SigmoidTrainF32(const KernelContext& ctx);
// Per row of the last axis: dx = y * (dy - sum(dy * y)).
template <typename A>
void SoftmaxGradF32(const KernelContext& ctx);

// Mean over rows of log(sum exp(logits - max)) + max - logits[label].
template <typename A>
void SoftmaxCrossEntropyF32(const KernelContext& ctx);
// (softmax(logits) - onehot(label)) * dloss / N.
template <typename A>
void SoftmaxCrossEntropyGradF32(const KernelContext& ctx);
template <typename A>
void MseLossF32(const KernelContext& ctx);  // mean((p - t)^2)
template <typename A>
void MseLossGradF32(const KernelContext& ctx);  // 2 (p - t) / n * dloss
// Each output element written once: the sum over the reduced coordinates.
template <typename A>
void ReduceSumF32(const KernelContext& ctx);
template <typename A>
void GatherF32(const KernelContext& ctx);
// Zeroes the output, then adds each dy row to its (clamped) id's row.
template <typename A>
void ScatterAddF32(const KernelContext& ctx);

// (conv2d's gradients run as BLAS products: host_gemm.h.)
// Depthwise versions: dx gathers over taps and multipliers; dw[0, fy, fx, oc] sums over
// (b, oy, ox) directly (no channel reduction, so no im2col workspace).
template <typename A>
void DepthwiseBackpropInputF32(const KernelContext& ctx);
template <typename A>
void DepthwiseBackpropFilterF32(const KernelContext& ctx);
// Zeroes dx, then routes each dy element to the first maximum of its clipped window
// (row-major window order, strict >). With a fused activation the gradient passes only where
// the clamp was inactive (min < max value < max), as relu_grad's y > 0 rule.
template <typename A>
void MaxPool2DGradF32(const KernelContext& ctx);
// Zeroes dx, then spreads each dy element evenly over the in-bounds elements of its window.
template <typename A>
void AvgPool2DGradF32(const KernelContext& ctx);

// Channels-last batch statistics (two-pass mean and biased variance in double).
template <typename A>
void BatchNormTrainF32(const KernelContext& ctx);
template <typename A>
void BatchNormGradF32(const KernelContext& ctx);
template <typename A>
void LayerNormF32(const KernelContext& ctx);
template <typename A>
void LayerNormGradF32(const KernelContext& ctx);

// The counter-based generator behind dropout: a uniform double in [0, 1) that is a pure
// function of (seed, element index), so a mask can be recomputed at any time, for any subset
// of elements, and always comes out the same. splitmix64 of seed * odd constant + index.
double DropoutUniform(int64_t seed, int64_t index);
// Element `index` is kept iff DropoutUniform(seed, index) >= rate.
bool DropoutKeeps(int64_t seed, int64_t index, double rate);
// mask = keep ? 1 / (1 - rate) : 0; y = x * mask.
template <typename A>
void DropoutF32(const KernelContext& ctx);

// velocity = momentum * velocity + grad; param = param - lr * velocity.
template <typename A>
void SgdMomentumF32(const KernelContext& ctx);
// Kingma & Ba: m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// param -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + epsilon).
template <typename A>
void AdamF32(const KernelContext& ctx);

// batch_norm_apply (x, gamma, beta, saved_mean, saved_invstd) -> y: batch_norm_train's
// output rebuilt from its saved statistics (train_recompute.cc).
template <typename A>
void BatchNormApplyF32(const KernelContext& ctx);

// mask_encode (x f32) -> bit mask; mask_decode (bits) attr value -> f32 0 or value.
template <typename A>
void MaskEncodeF32(const KernelContext& ctx);
template <typename A>
void MaskDecode(const KernelContext& ctx);

}  // namespace memfold

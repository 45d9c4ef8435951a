// Comparison, logical, select and fill kernels: TFLM's comparisons.cc (==, !=, <, <=, >, >= as
// C++ compares them, NaN included), logical.cc (&&, ||) and elementwise.cc's LOGICAL_NOT,
// select.cc's SELECT_V2 (cond ? x : y) and zeros_like.cc, each over numpy broadcasting in
// row-major output order. Booleans are one byte, 0 or 1. Freestanding.
#pragma once

#include "memfold/ops/kernels/kernel_context.h"

namespace memfold {

template <typename A, typename T>
void Equal(const KernelContext& ctx);
template <typename A, typename T>
void NotEqual(const KernelContext& ctx);
template <typename A, typename T>
void Less(const KernelContext& ctx);
template <typename A, typename T>
void LessEqual(const KernelContext& ctx);
template <typename A, typename T>
void Greater(const KernelContext& ctx);
template <typename A, typename T>
void GreaterEqual(const KernelContext& ctx);
template <typename A>
void LogicalAnd(const KernelContext& ctx);
template <typename A>
void LogicalOr(const KernelContext& ctx);
template <typename A>
void LogicalNot(const KernelContext& ctx);
// Inputs (condition, x, y) of any element type.
template <typename A>
void SelectV2(const KernelContext& ctx);
template <typename A, typename T>
void ZerosLike(const KernelContext& ctx);

}  // namespace memfold

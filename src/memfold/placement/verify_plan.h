// VerifyPlan: an independent check that a plan is safe to run.
//
// Checks that the requests are well formed (ids equal indices, bytes >= 0, alignment > 0,
// first <= last, allowance inputs exist and max_bytes >= 0), that there is one offset per
// request, that each offset is >= 0, a multiple of its alignment and leaves the occupied size
// (bytes rounded up to alignment) inside arena_bytes, and that no two buffers with intersecting
// lifetimes share a byte, except a pair (out, in) where out.may_overlap names `in` with
// max_bytes M, in.last == out.first and in.offset >= out.offset + out.bytes - M (payload bytes
// of out, not its occupied size). The first violation is returned as an error naming both
// buffers with their offsets, sizes and lifetimes.
//
// It shares no code with the planners, on purpose. Complexity: O(n log n + k + n a), a sweep
// over time keeping the live buffers ordered by offset, where k is the number of overlapping
// pairs met (allowed ones; the first disallowed one ends the check) and a the largest number
// of allowances naming or named by one buffer.
#pragma once

#include <span>

#include "memfold/base/status.h"
#include "memfold/placement/buffer.h"

namespace memfold {

Status VerifyPlan(std::span<const BufferRequest> requests, const Plan& plan);

}  // namespace memfold

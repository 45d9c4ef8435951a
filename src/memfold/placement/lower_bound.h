// Lower bound on the arena size of any plan without overlaps.
//
// LowerBound returns the largest sum of occupied sizes (bytes rounded up to alignment) of the
// buffers live at one time step: no plan that keeps live buffers apart can use less. Overlap
// allowances are ignored (plain sums), so with allowances a plan may go below this value.
// Complexity: O(n log n), a sweep over 2n lifetime events. Preconditions: see buffer.h.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "memfold/placement/buffer.h"

namespace memfold {

int64_t LowerBound(std::span<const BufferRequest> requests);

// The same bound for plans that use overlap allowances: at the step where an output is
// created it may overlap each dying input by at most that input's allowance plus its own
// alignment padding (and by no more than either buffer occupies); the dying inputs are
// disjoint, so the sum of those overlaps, at most the output's size, is subtracted at that
// step.
int64_t LowerBoundWithOverlaps(std::span<const BufferRequest> requests);

// A bound for every plan VerifyPlan accepts, whatever allowances it was given: two buffers
// live at step t may share bytes only if one is created at t and the other dies at t, so at t
// the buffers created then (and living on) are disjoint, those dying then (and live before)
// are disjoint, and together they cover at least the larger of the two sums. Buffers live
// only at t are left out. Payload bytes, no alignment padding. O(n + T), T the last step.
int64_t LowerBoundForAnyOverlap(std::span<const BufferRequest> requests);

// The same bound at each step 0..T: its maximum is LowerBoundForAnyOverlap. A request marked
// in `made_earlier` (empty: none) was created before its first step, which only says from
// when it is known to be live: it is never counted as created there.
std::vector<int64_t> ArenaFloorPerStep(std::span<const BufferRequest> requests,
                                       std::span<const char> made_earlier = {});

}  // namespace memfold

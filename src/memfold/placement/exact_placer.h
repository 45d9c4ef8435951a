// An exact solver for the placement problem (dynamic storage allocation: buffers of fixed
// lifetimes and sizes, one offset each, live buffers apart, the smallest arena).
//
// Branch and bound over canonical placements, memfold's own code from the ideas MiniMalloc
// published (Moffitt, ASPLOS 2023): any plan can be pushed down until every buffer rests on
// another one or on offset 0, so only such plans are searched, building them in order of
// offset. Time is cut into sections at every lifetime boundary. At a node each unplaced buffer
// has a lowest offset (the highest end of the placed buffers it lives with); the buffers are
// tried in order of that offset, then of a static rank, and
//   * a placement never comes before the previous one in that order (each plan is built once);
//   * no buffer is placed at or above the lowest end an unplaced buffer could reach (that one
//     would fit below it: the plan is dominated);
//   * a node is cut when, in some section, its floor (no unplaced buffer there starts below the
//     lowest of their offsets, nor below the current offset) plus its unplaced bytes passes the
//     capacity;
//   * after a placement with no unplaced buffer living with it, no other choice is tried there;
//   * when no unplaced buffer crosses a section boundary any more, the sides are solved as
//     independent parts, and a part without a plan is remembered (its floors and its buffers'
//     offsets, hashed), so the same part is not searched again, even by a later run.
// Diagonal overlap allowances (buffer.h) take part: an input may rest on its output at the
// output's offset plus the bytes the allowance leaves (a "lift", rounded up to the alignment),
// not only on its end; at equal offsets an input may follow its output out of rank order; a
// section's units are credited with what its allowed pairs may share (each output at most its
// largest reach and its inputs' shares, each input at most its outputs' largest reach); and
// since a lifted floor no longer bounds the end of the buffer just placed, each end is checked
// against the capacity.
// Three static ranks (by lifetime, area and the busiest section's bytes, in three priorities)
// take turns under a node limit that doubles each round. A decision asks for a plan within a
// capacity; minimising tries the lower bound (the most bytes live at one time) first, then
// halves the interval up to the best plan known.
//
// Complexity: exponential in the worst case; a node costs O(m log m) for m unplaced buffers
// of the part, and each placement it tries O(S + k) for S sections of the part and k
// neighbours. Bounded by a budget of work counted in those terms (deterministic: minimising,
// the bound's decision gets half of it, later ones a third of what is left) and a wall clock
// (a safety net whose cut depends on the machine).
// Memory O(n^2) for the lists of buffers living together, plus the failed-part table (at most
// 2^20 entries).
// Preconditions: see buffer.h. Handles requests without fixed offsets, all of one alignment,
// and without a buffer of one step both overlapping an input and overlapped by an output
// there (operators never make one; a CSV file can, and its allowances may then form a cycle
// of buffers sharing an offset); anything else is declined (ExactOutcome::declined says why)
// and left to the heuristics.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "memfold/placement/buffer.h"

namespace memfold {

struct ExactLimits {
  int64_t capacity = 0;  // > 0: any plan within it will do; 0: the smallest arena
  // The budget that decides where the search stops, in units of work (an item looked at, a
  // section checked, a neighbour updated), so that it follows the time on large problems too.
  int64_t max_work = 1'000'000'000;
  double seconds = 30;  // a safety net: where the machine is too slow for the work
};

struct ExactOutcome {
  std::optional<Plan> plan;  // the smallest plan found (within the capacity when one is given)
  // The search ran to its end: `plan` is optimal, or (with a capacity) nothing better exists
  // than `plan`, and no plan at all fits when `plan` is empty.
  bool complete = false;
  int64_t nodes = 0;
  int64_t work = 0;      // units of work spent (ExactLimits::max_work)
  std::string declined;  // non-empty: the problem is outside this solver, and why
};

// `incumbent` (optional, a valid plan of `requests`) is the plan to beat: minimising, only
// smaller ones are searched for.
ExactOutcome PlaceExactly(std::span<const BufferRequest> requests, const ExactLimits& limits,
                          const Plan* incumbent = nullptr);

}  // namespace memfold

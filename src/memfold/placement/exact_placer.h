// An exact solver for the placement problem (dynamic storage allocation: buffers of fixed
// lifetimes and sizes, one offset each, live buffers apart, the smallest arena).
//
// Branch and bound over canonical placements, memfold's own design from the published idea of
// searching only solutions where every buffer rests on another one or on offset 0 (any plan
// can be pushed down into one). Time is cut into sections at every lifetime boundary; the
// search keeps each section's floor (the end of the highest buffer placed in it) and always
// works at the leftmost section of lowest floor, f. Either some buffer starts at f there —
// one whose sections all have floor f; each such buffer is a branch — or none does, and the
// section's floor rises to the lowest level a buffer could rest on there (a placed buffer's
// end or an unplaced one's smallest end in a section a buffer of this one may share): that
// raise is waste. Each canonical placement is reached by exactly one path. Pruned by:
//   * the capacity: in every section, floor + bytes of its unplaced buffers <= capacity (only a
//     raise can break it, and it is the bound the search closes on);
//   * identical buffers (same sections, same size) tried once per node;
//   * a table of failed states (unplaced buffers and the floors of the open sections, hashed),
//     which catches the same stacks reached in different orders.
// Minimising, each plan found lowers the capacity to one unit below it and the search goes on;
// it ends when the tree is exhausted (the last plan is optimal) or the plan meets the lower
// bound (the most bytes live at one time).
//
// Complexity: exponential in the worst case; a node costs O(S + k) for S sections and k
// buffers covering the section worked on. Bounded by a node budget (deterministic: minimising,
// each decision gets a third of the nodes left) and a wall clock (a safety net whose cut
// depends on the machine). Memory O(n S) for the cover lists
// plus the failed-state table (bounded).
// Preconditions: see buffer.h. Handles requests without overlap allowances or fixed offsets,
// all of one alignment; anything else is declined (ExactOutcome::declined says why) and left
// to the heuristics.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "memfold/placement/buffer.h"

namespace memfold {

struct ExactLimits {
  int64_t capacity = 0;            // > 0: any plan within it will do; 0: the smallest arena
  int64_t max_nodes = 20'000'000;  // the budget that decides where the search stops
  double seconds = 30;             // a safety net: where the machine is too slow for the nodes
};

struct ExactOutcome {
  std::optional<Plan> plan;  // the smallest plan found (within the capacity when one is given)
  // The search ran to its end: `plan` is optimal, or (with a capacity) nothing better exists
  // than `plan`, and no plan at all fits when `plan` is empty.
  bool complete = false;
  int64_t nodes = 0;
  std::string declined;  // non-empty: the problem is outside this solver, and why
};

// `incumbent` (optional, a valid plan of `requests`) is the plan to beat: minimising, only
// smaller ones are searched for.
ExactOutcome PlaceExactly(std::span<const BufferRequest> requests, const ExactLimits& limits,
                          const Plan* incumbent = nullptr);

}  // namespace memfold

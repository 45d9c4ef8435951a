// Placement problems as data: MiniMalloc's CSV (header `id,lower,upper,size`; `size` bytes live
// on the half-open interval [lower, upper), so two buffers conflict iff l1 < u2 and l2 < u1),
// with optional columns memfold adds: `alignment` (bytes, default 1), `overlaps` (the diagonal
// overlap allowances of a buffer over inputs that die where it is created, as space-separated
// `ID:BYTES` pairs naming other rows' ids) and `offset` (written by solvers; read back as a
// placement to start from when every row has one).
//
// ReadPlacementCsv turns the rows into BufferRequests (request k is row k; times compressed to
// the ranks of the interval ends, which keeps every conflict and every `input dies where the
// output is created` relation) and keeps the text for WritePlacementCsv, which writes the same
// rows and columns with an `offset` column set (added, or replaced). O(n log n).
// Bad input (missing columns, non-numbers, negative sizes, empty lifetimes, unknown or
// duplicate ids) is an error naming the line.
#pragma once

#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/placement/buffer.h"

namespace memfold {

struct PlacementProblem {
  std::vector<BufferRequest> requests;
  std::vector<std::string> header;             // the file's columns, in its order
  std::vector<std::vector<std::string>> rows;  // each row's fields, as read
  std::vector<int64_t> offsets;  // the `offset` column, when every row has an integer there
};

// `label` names the source in error messages.
Result<PlacementProblem> ReadPlacementCsv(const std::string& text, const std::string& label);

// The problem's rows with `offsets` (one per request) in the `offset` column.
std::string WritePlacementCsv(const PlacementProblem& problem, const std::vector<int64_t>& offsets);

// A problem's rows from requests (id = request index, lower = first, upper = last + 1, the
// alignment and overlaps columns when any request needs them), for `plan --export-problem`.
PlacementProblem ProblemFromRequests(const std::vector<BufferRequest>& requests);

}  // namespace memfold

// Checked execution: the proof by execution that a plan is safe.
//
// RunChecked runs a planned graph inside the arena its plan lays out, and the original graph
// unplanned (every value in memory of its own), and compares the two wherever a value is read:
// right before every operator of the planned run, each value it reads, and at the end the
// graph outputs. Three checks, each exact:
//
//   value      a 64-bit hash of the bytes the operator reads (through views and row layouts)
//              equals the hash of the same value in the unplanned run. Each step of the hash
//              is a bijection of its state for a given 8-byte word, so two reads that differ
//              in one word always differ in hash.
//   owner      every arena byte a value is read from was last written as part of that value's
//              buffer (a shadow tag per arena byte, set when an operator writes its outputs
//              and scratch, or when the inputs are copied in). A plan that lets another buffer
//              overwrite a live value fails here even when the bytes written happen to equal
//              the bytes they replace, which a comparison of values alone cannot see.
//   in-kernel  an operator whose outputs or scratch share arena bytes with one of its inputs
//              (a diagonal overlap) runs its traced kernel, and no input byte may be read
//              after the operator wrote it: an overlap beyond the kernel's real safe overlap
//              fails here whatever the data.
//
// The original and the planned graph may differ (best's rewrites: re-ordered, concatenations
// as views, split into bands). A planned value is compared with the original value of the same
// id, or, when a rewrite recorded an origin (ir/graph.h ValueOrigin: a band holds rows of the
// unsplit value), with that box of the original value. A value with neither (none today) is
// checked for ownership only and counted in `reads_without_counterpart`. Constants and weights
// are read in place from the model by both runs and are not compared; persistent values (state
// tensors and storage updated in place, plan/shared_storage.h) change during a run and are
// compared read by read, in order.
//
// The planned run stops at the first difference. Cost: both runs, plus hashing and tag checks
// linear in the bytes read, plus traced execution of the operators that overlap; memory: the
// unplanned run and four bytes of tags per arena byte.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/exec/executor.h"
#include "memfold/ir/graph.h"
#include "memfold/placement/buffer.h"
#include "memfold/plan/liveness.h"

namespace memfold {

// The first read at which the planned run differs from the unplanned one.
struct ReadDifference {
  std::string check;          // "value", "owner", "in-kernel" or "output"
  int64_t position = -1;      // schedule position of the reading operator; -1: a graph output
  std::string op_name;        // the reading operator ("" for a graph output)
  std::string op;             // its registry op
  std::string value_name;     // the value read
  std::string expected_hash;  // 16 hex digits: the unplanned run ("" when it has no counterpart)
  std::string actual_hash;    // the planned run
  std::string detail;         // what differs, for people
};

struct CheckedRun {
  RunOutputs planned;                     // the planned run's outputs (empty when it stopped early)
  RunOutputs unplanned;                   // the original graph's, unplanned
  int64_t values_checked = 0;             // reads compared with the unplanned run, outputs included
  int64_t reads_without_counterpart = 0;  // reads checked for ownership only
  int64_t operators_traced = 0;           // operators run under the in-kernel check
  std::optional<ReadDifference> first_difference;
  bool identical() const { return !first_difference.has_value(); }
};

// Errors: either run fails (no kernel, wrong input sizes), or the graphs' inputs and outputs do
// not correspond. A difference is not an error: it is the result.
Result<CheckedRun> RunChecked(const Graph& original, const Graph& planned, const Liveness& liveness,
                              const Plan& plan, const std::vector<Bytes>& inputs);

struct ReferenceRun;  // the unplanned run's hashes (checked_run.cc)

// RunChecked in two halves, for checking many plans of one graph: Make runs the original once,
// unplanned; Run checks one plan of `planned`. Both graphs must outlive the runner.
class CheckedRunner {
 public:
  static Result<CheckedRunner> Make(const Graph& original, const Graph& planned,
                                    const std::vector<Bytes>& inputs);
  Result<CheckedRun> Run(const Liveness& liveness, const Plan& plan) const;

 private:
  CheckedRunner() = default;
  const Graph* planned_ = nullptr;
  std::vector<Bytes> inputs_;
  std::shared_ptr<const ReferenceRun> reference_;
};

// One line for people: "operator 12 'conv3' (conv2d) reads 'conv2': ...".
std::string DescribeDifference(const ReadDifference& difference);

}  // namespace memfold

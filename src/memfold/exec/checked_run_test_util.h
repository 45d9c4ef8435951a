// The assertion every test that executes a plan uses: RunChecked (exec/checked_run.h) of the
// planned graph against the original, unplanned, must find no difference at any read, must
// have compared something and every read (rewrites record where their values come from), and
// must give the unplanned outputs bit for bit. Header-only, for
// test targets. Cost: one RunChecked.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "memfold/exec/checked_run.h"

namespace memfold {

inline ::testing::AssertionResult RunsIdentically(const Graph& original, const Graph& planned,
                                                  const Liveness& liveness, const Plan& plan,
                                                  const std::vector<Bytes>& inputs) {
  const Result<CheckedRun> run = RunChecked(original, planned, liveness, plan, inputs);
  if (!run.ok())
    return ::testing::AssertionFailure() << "the checked run failed: " << run.status().message();
  if (run->first_difference) {
    return ::testing::AssertionFailure() << DescribeDifference(*run->first_difference);
  }
  if (run->values_checked == 0) return ::testing::AssertionFailure() << "no read was compared";
  if (run->reads_without_counterpart != 0) {
    return ::testing::AssertionFailure() << run->reads_without_counterpart
                                         << " reads had no value of the original to compare with";
  }
  if (run->planned.outputs != run->unplanned.outputs) {
    return ::testing::AssertionFailure() << "the outputs differ though every read agreed";
  }
  return ::testing::AssertionSuccess() << run->values_checked << " reads compared";
}

}  // namespace memfold

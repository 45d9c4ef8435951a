// The one entry the model-file fuzzer (tflite_reader_fuzz.cc) and the corpus replay test
// (tests/fuzz_replay_test.cc) share: a byte string goes through what `memfold plan` and
// `memfold run` do with a model file (LoadTflite reads bytes that start as ONNX files do with the
// ONNX reader, others with the TFLite reader), and every invariant memfold promises is checked.
//
// 1. Load (LoadTflite: parse, shape checks, structure checks). A rejection is fine, provided
//    its message has the contract's form: one line starting with the file's label.
// 2. Plan with greedy and diagonal (and the file's own offline plan, if it has one), and check
//    each plan again with VerifyPlan. Any planning error is a memfold bug, except an unsafe
//    offline plan, which is the file's fault. Small models also get the placement-order search
//    (RefinePlan), which may never enlarge the arena. When the model concatenates, plan it with
//    every concatenation a copy-free view (passes/best_plan.h MarkConcatViews) the same way.
// 3. Execute, only when the run is small (every activation's bytes together at most
//    kMaxRunBytes and at most kMaxRunFlops): every plan of step 2 runs checked against the
//    unplanned model (exec/checked_run.h); every read must agree.
//
// 4. Every output path of every command on the file (command_outputs.h): inspect and plan
//    always, overlap, run, compare and report when step 3 executed; text and JSON each.
//
// Returns how far the input got, or an error describing the broken invariant (the fuzzer turns
// it into a crash). Complexity: the model's planning, plus execution only when bounded; the
// diagonal planner's algorithmic overlap model is O(output elements), so above the run bound
// the analytic (closed-form) overlap model is used to keep hostile files from hanging the
// fuzzer.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "memfold/base/status.h"

namespace memfold::fuzz {

enum class Stage { kRejected, kPlanned, kExecuted };
std::string_view StageName(Stage stage);

inline constexpr char kFuzzLabel[] = "fuzz-input.tflite";
inline constexpr int64_t kMaxRunBytes = int64_t{4} << 20;
inline constexpr double kMaxRunFlops = 5e7;

Result<Stage> RunTfliteInput(std::span<const uint8_t> bytes);

}  // namespace memfold::fuzz

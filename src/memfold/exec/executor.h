// The executor: runs a Graph's schedule on the CPU, either inside one arena laid out by a Plan
// or unplanned (a separate buffer per value), so every planned run can be compared bit for
// bit with an unplanned one.
//
// Constants and weights stay outside the arena (as in TFLM). Alias ops (reshape) cost nothing:
// their output is their input's bytes. In checking mode every buffer's bytes are filled with a
// poison pattern when the buffer's lifetime starts (except bytes still holding live data), so
// a planner that lets a value be overwritten while live, or a kernel reading dead memory,
// shows up as a different result. Poisoning inverts every byte, so a poisoned byte always
// differs from the stale byte it replaces. Checked execution (exec/checked_run.h) watches a
// run through a RunMonitor and compares every value where it is read.
//
// A streamed graph input (role kStreamed) is never in the arena: each slice of it fetches its
// box from the caller (ExecOptions::fetch), so the whole input is never resident.
//
// Persistent tensors — weights that optimizer steps update in place, optimizer state, TFLite
// variable tensors — live outside the arena in a Session, which keeps them across runs (one
// run = one inference, or one training step). RunPlanned / RunUnplanned use a fresh Session.
//
// Complexity: the kernels' work, plus O(B log B) per node for poisoning (B = live buffers).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/ops/kernels/access.h"
#include "memfold/ops/registry.h"
#include "memfold/ops/runnable.h"
#include "memfold/placement/buffer.h"
#include "memfold/plan/liveness.h"
#include "memfold/plan/shared_storage.h"

namespace memfold {

// Watches a run operator by operator (checked execution, exec/checked_run.h; calibration,
// passes/quantize.cc). Each hook does nothing unless overridden; an error from any call stops
// the run with that error.
class RunMonitor {
 public:
  virtual ~RunMonitor() = default;
  // Once the graph inputs are in place: where each value's bytes are (null: nowhere), and the
  // arena (null for an unplanned run).
  virtual Status Started(const std::vector<std::byte*>& where, const std::byte* arena) {
    return Status::Ok();
  }
  // Before the node at schedule position `position` runs. A watch returned here makes the
  // node run its traced kernel under it (nodes without one run as usual).
  virtual Result<AccessWatch*> Before(size_t position, const Node& node,
                                      const KernelContext& args) {
    return static_cast<AccessWatch*>(nullptr);
  }
  // After the node; `ran` is false for nodes the executor skips (aliases, copy-free views).
  virtual Status After(size_t position, const Node& node, const KernelContext& args, bool ran) {
    return Status::Ok();
  }
  // After the last node, right before the caller's outputs are copied out.
  virtual Status Finished(const std::vector<std::byte*>& where) { return Status::Ok(); }
};

struct ExecOptions {
  bool poison = true;
  // Values to copy out as soon as they are computed (before their memory is reused), e.g. the
  // parameter gradients of a training step.
  std::vector<ValueId> capture;
  // When set, wall time of every node is added to its layer type's entry (Echo's Figure 5).
  std::map<std::string, double>* layer_ms = nullptr;
  RunMonitor* monitor = nullptr;
  // Streamed graph inputs (role kStreamed): the runtime asks for the box [begin, begin + size)
  // of graph input `input` to be written, packed, at `dst`, as a camera or a decoder delivers
  // rows or patches. Unset: the boxes are read from the input given to Run.
  std::function<Status(size_t input, const Shape& begin, const Shape& size, std::byte* dst)> fetch;
};

struct RunOutputs {
  std::vector<Bytes> outputs;   // one per graph output, raw little-endian bytes
  std::vector<Bytes> captured;  // one per ExecOptions::capture entry
  // Every byte the run allocated for tensors: the arena (or, unplanned, one buffer per value,
  // plus scratch) and the session's persistent tensors. Constants read in place are not counted.
  int64_t allocated_bytes = 0;
};

// A run's arena: mapped from the kernel when it is large, so the process's resident memory
// grows by exactly the pages runs touch (a heap block could reuse pages an earlier allocation
// left resident), which is what training reports as measured_peak_bytes beside the plan;
// small arenas come from the heap. A Session keeps its arena across runs, as TFLM keeps its
// tensor arena, so later runs pay no page faults.
class ArenaMemory {
 public:
  // At least `bytes` (64-byte aligned), keeping the current block when it is large enough.
  std::byte* Reserve(int64_t bytes);

 private:
  struct Release {
    size_t mapped;  // the mapping's length, or 0 for a heap block
    void operator()(std::byte* block) const;
  };
  std::unique_ptr<std::byte[], Release> block_;
  size_t size_ = 0;
};

class RunMemory;  // where a run keeps its values: planned (one arena) or unplanned (executor.cc)

class Session {
 public:
  // Copies the initial contents of every persistent tensor; `graph` must outlive the session.
  explicit Session(const Graph& graph);
  // One run. With `liveness` and `plan`, computed values live in one arena laid out by the plan;
  // without, each gets its own buffer.
  Result<RunOutputs> Run(const std::vector<Bytes>& inputs, const Liveness* liveness = nullptr,
                         const Plan* plan = nullptr, const ExecOptions& options = {});
  // Current bytes of a persistent value (a weight after training steps), or null.
  const Bytes* Persistent(ValueId value) const;
  // Bytes of persistent memory (weights updated in place, optimizer and other state).
  int64_t persistent_bytes() const;
  // Which values of the graph share bytes and which outlive a run.
  const SharedStorage& shared() const { return shared_; }

 private:
  bool OwnsPersistentBytes(ValueId v) const;  // persistent, and the root of its storage
  // The run itself, the same for both kinds of memory.
  Result<RunOutputs> RunIn(RunMemory* memory, const std::vector<Bytes>& inputs,
                           const ExecOptions& options);

  const Graph& graph_;
  SharedStorage shared_;
  std::vector<Bytes> storage_;  // per value owning persistent bytes: them; others empty
  ArenaMemory arena_;           // planned runs' arena, kept across runs
};

Result<RunOutputs> RunUnplanned(const Graph& graph, const std::vector<Bytes>& inputs,
                                const ExecOptions& options = {});
Result<RunOutputs> RunPlanned(const Graph& graph, const Liveness& liveness, const Plan& plan,
                              const std::vector<Bytes>& inputs, const ExecOptions& options = {});

}  // namespace memfold

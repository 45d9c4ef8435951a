#include "memfold/exec/executor.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <new>

#include "memfold/ops/kernel_args.h"
#include "memfold/ops/registry.h"
#include "memfold/plan/planned_layout.h"

namespace memfold {
namespace {

// Unplanned buffers and a fresh arena start as this: NaN for floats, -1 for integers.
constexpr std::byte kPoison{0xFF};

// The arguments of one node at `where`, with (planned runs, `live`) the row layout of values
// that lie in rows of a concat.
NodeKernelArgs ArgsOf(const Graph& graph, const Node& node, const std::vector<std::byte*>& where,
                      const Liveness* live) {
  NodeKernelArgs args = KernelArgsOf(graph, node, where);
  if (live == nullptr) return args;
  auto set_rows = [&](std::span<const ValueId> values, std::vector<TensorArg>* tensors) {
    for (size_t k = 0; k < values.size(); ++k) {
      if (values[k] == kNoValue) continue;
      if (const RowLayout rows = ViewRows(*live, values[k]); rows.row_bytes != 0) {
        const int64_t element = StorageBytes((*tensors)[k].dtype, 1);
        (*tensors)[k].row = rows.row_bytes / element;
        (*tensors)[k].row_stride = rows.stride_bytes / element;
      }
    }
  };
  set_rows(node.inputs, &args.inputs);
  set_rows(node.outputs, &args.outputs);
  return args;
}

// Runs one node's kernel, traced under `watch` when one is given and the kernel has a traced
// form.
void RunKernel(const Graph& graph, const Node& node, const KernelContext& context,
               AccessWatch* watch) {
  const KernelEntry* entry = OpOf(node)->FindKernelEntry(graph.value(node.inputs[0]).dtype);
  if (watch == nullptr || entry->traced == nullptr) {
    entry->run(context);
    return;
  }
  ScopedWatch scope(watch);
  entry->traced(context);
}

// Points constants at their data (unless a run keeps a mutable copy), then every value that
// shares another's bytes — an alias (reshape) or an in-place update (optimizer step) — at them.
void BindConstantsAndShared(const Graph& graph, const SharedStorage& shared,
                            std::vector<std::byte*>* where) {
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    const Value& value = graph.value(v);
    if (value.is_constant() && (*where)[static_cast<size_t>(v)] == nullptr) {
      (*where)[static_cast<size_t>(v)] = const_cast<std::byte*>(value.data->data());
    }
  }
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    const ValueId root = shared.root[static_cast<size_t>(v)];
    if (root != v) (*where)[static_cast<size_t>(v)] = (*where)[static_cast<size_t>(root)];
  }
}

// True for a copy-free concat (its inputs already sit inside its output) or slice (its output
// is its input's bytes): liveness placed them there.
bool AlreadyInPlace(const Liveness& live, NodeId id) {
  return !live.copy_free.empty() && live.copy_free[static_cast<size_t>(id)];
}

RunOutputs CollectOutputs(const Graph& graph, const std::vector<std::byte*>& where) {
  RunOutputs result;
  for (ValueId v : graph.outputs) {
    const std::byte* data = where[static_cast<size_t>(v)];
    result.outputs.emplace_back(data, data + graph.value(v).bytes());
  }
  return result;
}

void CopyInputs(const Graph& graph, const std::vector<Bytes>& inputs,
                const std::vector<std::byte*>& where) {
  for (size_t k = 0; k < graph.inputs.size(); ++k) {
    std::byte* dst = where[static_cast<size_t>(graph.inputs[k])];
    if (dst != nullptr && dst != inputs[k].data())
      std::memcpy(dst, inputs[k].data(), inputs[k].size());
  }
}

// Streamed inputs are read where the caller holds them (the default source of their boxes),
// outside the arena and uncounted.
void BindStreamedInputs(const Graph& graph, const std::vector<Bytes>& inputs,
                        std::vector<std::byte*>* where) {
  for (size_t k = 0; k < graph.inputs.size(); ++k) {
    const ValueId v = graph.inputs[k];
    if (graph.value(v).role == Role::kStreamed)
      (*where)[static_cast<size_t>(v)] = const_cast<std::byte*>(inputs[k].data());
  }
}

// The graph input index a slice fetches a box of when it reads a streamed input, or -1.
int64_t FetchedInput(const Graph& graph, const Node& node) {
  if (RulesOf(node).tile != TileRule::kSlice || graph.value(node.inputs[0]).role != Role::kStreamed)
    return -1;
  const auto at = std::find(graph.inputs.begin(), graph.inputs.end(), node.inputs[0]);
  return at - graph.inputs.begin();
}

// Runs a fetching slice through the caller's callback: its box, packed at the output.
Status Fetch(const Graph& graph, const Node& node, size_t input, const KernelContext& context,
             const ExecOptions& options) {
  const Value& out = graph.value(node.outputs[0]);
  const auto& begin = node.attrs.Ints("begin");
  return options.fetch(input, Shape(begin.begin(), begin.end()), out.shape,
                       context.outputs[0].data);
}

}  // namespace

// Arenas of at least this size are mapped from the kernel.
constexpr size_t kMappedArenaBytes = size_t{1} << 20;

void ArenaMemory::Release::operator()(std::byte* block) const {
  if (mapped > 0) {
    munmap(block, mapped);
  } else {
    ::operator delete[](block, std::align_val_t{64});
  }
}

std::byte* ArenaMemory::Reserve(int64_t bytes) {
  const auto size = static_cast<size_t>(std::max<int64_t>(bytes, 1));
  if (block_ != nullptr && size <= size_) return block_.get();
  block_.reset();
  if (size >= kMappedArenaBytes) {
    void* mapped = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) throw std::bad_alloc();
    block_ = {static_cast<std::byte*>(mapped), Release{size}};
  } else {
    block_ = {static_cast<std::byte*>(::operator new[](size, std::align_val_t{64})), Release{0}};
  }
  size_ = size;
  return block_.get();
}

namespace {

// Poison that always differs from what it replaces: every byte inverted.
void Invert(std::byte* begin, std::byte* end) {
  for (std::byte* p = begin; p != end; ++p) *p = ~*p;
}

// Poisons the bytes of buffers whose lifetime starts at `time` (plan/planned_layout.h).
void PoisonStartingBuffers(const Liveness& live, const Plan& plan, int32_t time, std::byte* arena) {
  for (const auto& [begin, end] : PoisonRanges(live, plan, time))
    Invert(arena + begin, arena + end);
}

// Copies the node's outputs that `capture` asks for.
void Capture(const Graph& graph, const Node& node, const std::vector<std::byte*>& where,
             const std::vector<ValueId>& capture, std::vector<Bytes>* captured) {
  for (size_t k = 0; k < capture.size(); ++k) {
    for (ValueId out : node.outputs) {
      if (out != capture[k]) continue;
      const std::byte* data = where[static_cast<size_t>(out)];
      (*captured)[k].assign(data, data + graph.value(out).bytes());
    }
  }
}

}  // namespace

// Where a run keeps its values: the two paths of Session::Run. Binding happens once, after
// persistent and streamed values are bound and before constants are; then, per operator,
// Prepare gives it its scratch and buffers and Finish releases what died.
class RunMemory {
 public:
  virtual ~RunMemory() = default;
  virtual void Bind(std::vector<std::byte*>* where) = 0;
  // The planned arena, or null.
  virtual const std::byte* arena() const { return nullptr; }
  // The row layouts of view values, or null (ArgsOf).
  virtual const Liveness* views() const { return nullptr; }
  // Before operator `pos`: its scratch buffers (and, unplanned, its values' buffers).
  virtual void Prepare(size_t pos, const Node& node, std::vector<std::byte*>* where,
                       std::vector<std::byte*>* scratch) = 0;
  // Whether the operator's outputs are in place already (a copy-free view concatenation).
  virtual bool InPlace(NodeId id) const { return false; }
  virtual void Finish(size_t pos) {}
  // Every byte the run allocated for computed values and scratch.
  virtual int64_t allocated_bytes() const = 0;
};

namespace {

// A planned run's memory: one arena laid out by the plan, every value at its home
// (plan/planned_layout.h); with `poison`, each buffer's bytes are poisoned when it starts.
class PlannedMemory final : public RunMemory {
 public:
  PlannedMemory(const Graph& graph, const Liveness& live, const Plan& plan, ArenaMemory* memory,
                bool poison)
      : graph_(graph), live_(live), plan_(plan), poison_(poison) {
    arena_ = memory->Reserve(plan.arena_bytes);
    if (poison_) std::fill(arena_, arena_ + plan.arena_bytes, kPoison);
  }

  void Bind(std::vector<std::byte*>* where) override {
    const std::vector<ValueHome> homes = PlannedHomes(graph_, live_, plan_);
    for (ValueId v = 0; v < graph_.num_values(); ++v) {
      if (homes[static_cast<size_t>(v)].home == Home::kArena)
        (*where)[static_cast<size_t>(v)] = arena_ + homes[static_cast<size_t>(v)].offset;
    }
    if (poison_) PoisonStartingBuffers(live_, plan_, 0, arena_);
  }
  const std::byte* arena() const override { return arena_; }
  const Liveness* views() const override { return &live_; }
  void Prepare(size_t pos, const Node& node, std::vector<std::byte*>*,
               std::vector<std::byte*>* scratch) override {
    if (poison_) PoisonStartingBuffers(live_, plan_, NodeTime(pos), arena_);
    for (int32_t r : live_.scratch_of[static_cast<size_t>(graph_.schedule[pos])])
      scratch->push_back(arena_ + plan_.offsets[static_cast<size_t>(r)]);
  }
  bool InPlace(NodeId id) const override { return AlreadyInPlace(live_, id); }
  int64_t allocated_bytes() const override { return plan_.arena_bytes; }

 private:
  const Graph& graph_;
  const Liveness& live_;
  const Plan& plan_;
  bool poison_;
  std::byte* arena_ = nullptr;
};

// An unplanned run's memory: every computed value (every root of shared storage) gets a
// poisoned buffer of its own when its producer runs, or at the start if it is fed, and loses it
// after the last operator that reads or writes it, so the run holds only the values live at the
// current step (graph outputs until the end). O(V + E) to set up.
class UnplannedMemory final : public RunMemory {
 public:
  UnplannedMemory(const Graph& graph, const SharedStorage& shared)
      : graph_(graph), shared_(shared) {}

  // Gives the values nothing produces (graph inputs, unwritten tensors) their buffers, and
  // works out when each buffer dies.
  void Bind(std::vector<std::byte*>* where) override {
    const auto values = static_cast<size_t>(graph_.num_values());
    own_.resize(values);
    owned_.assign(values, 0);
    last_use_.assign(values, -1);
    for (ValueId v = 0; v < graph_.num_values(); ++v) {
      const Value& value = graph_.value(v);
      owned_[static_cast<size_t>(v)] = !value.is_constant() &&
                                       (*where)[static_cast<size_t>(v)] == nullptr &&
                                       shared_.root[static_cast<size_t>(v)] == v;
    }
    for (size_t pos = 0; pos < graph_.schedule.size(); ++pos) {
      const Node& node = graph_.node(graph_.schedule[pos]);
      for (const std::vector<ValueId>* list : {&node.inputs, &node.outputs}) {
        for (ValueId v : *list) Use(v, static_cast<int64_t>(pos));
      }
    }
    for (ValueId v : graph_.outputs) Use(v, std::numeric_limits<int64_t>::max());
    for (ValueId v = 0; v < graph_.num_values(); ++v) {
      if (graph_.value(v).producer == kNoNode) Allocate(v, where);
    }
  }

  // Gives the operator its scratch, allocates its outputs and points every value it touches at
  // its root's buffer.
  void Prepare(size_t, const Node& node, std::vector<std::byte*>* where,
               std::vector<std::byte*>* scratch) override {
    scratch_.clear();
    if (const OpDef* def = OpOf(node); def->scratch != nullptr) {
      for (int64_t bytes : def->scratch(graph_, node)) {
        scratch_.emplace_back(static_cast<size_t>(bytes), kPoison);
        scratch->push_back(scratch_.back().data());
        allocated_ += bytes;
      }
    }
    for (const std::vector<ValueId>* list : {&node.inputs, &node.outputs}) {
      for (ValueId v : *list) {
        if (v == kNoValue) continue;
        const ValueId root = shared_.root[static_cast<size_t>(v)];
        Allocate(root, where);
        if ((*where)[static_cast<size_t>(v)] == nullptr)
          (*where)[static_cast<size_t>(v)] = (*where)[static_cast<size_t>(root)];
      }
    }
  }

  // Frees the buffers whose last use was the operator at `pos`.
  void Finish(size_t pos) override {
    const auto& dying = dies_at_.find(static_cast<int64_t>(pos));
    if (dying == dies_at_.end()) return;
    for (ValueId v : dying->second) Bytes().swap(own_[static_cast<size_t>(v)]);
    dies_at_.erase(dying);
  }

  // Every byte allocated during the run (not the peak: what one buffer per value would take).
  int64_t allocated_bytes() const override { return allocated_; }

 private:
  void Use(ValueId v, int64_t pos) {
    if (v == kNoValue) return;
    int64_t& last = last_use_[static_cast<size_t>(shared_.root[static_cast<size_t>(v)])];
    last = std::max(last, pos);
  }

  void Allocate(ValueId v, std::vector<std::byte*>* where) {
    const auto i = static_cast<size_t>(v);
    if (!owned_[i] || (*where)[i] != nullptr) return;
    own_[i].assign(static_cast<size_t>(graph_.value(v).bytes()), kPoison);
    (*where)[i] = own_[i].data();
    allocated_ += graph_.value(v).bytes();
    if (last_use_[i] >= 0 && last_use_[i] != std::numeric_limits<int64_t>::max())
      dies_at_[last_use_[i]].push_back(v);
  }

  const Graph& graph_;
  const SharedStorage& shared_;
  std::vector<Bytes> own_;
  std::vector<char> owned_;        // per value: a root this run allocates
  std::vector<int64_t> last_use_;  // per root: the last schedule position touching it
  std::map<int64_t, std::vector<ValueId>> dies_at_;
  std::vector<Bytes> scratch_;  // the current operator's
  int64_t allocated_ = 0;
};

}  // namespace

Session::Session(const Graph& graph)
    : graph_(graph),
      shared_(ComputeSharedStorage(graph)),
      storage_(static_cast<size_t>(graph.num_values())) {
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    if (OwnsPersistentBytes(v))
      storage_[static_cast<size_t>(v)] = PersistentInitialBytes(graph.value(v));
  }
}

bool Session::OwnsPersistentBytes(ValueId v) const {
  return shared_.persistent[static_cast<size_t>(v)] && shared_.root[static_cast<size_t>(v)] == v;
}

const Bytes* Session::Persistent(ValueId value) const {
  const ValueId root = shared_.root[static_cast<size_t>(value)];
  return shared_.persistent[static_cast<size_t>(root)] ? &storage_[static_cast<size_t>(root)]
                                                       : nullptr;
}

int64_t Session::persistent_bytes() const {
  int64_t total = 0;
  for (const Bytes& bytes : storage_) total += static_cast<int64_t>(bytes.size());
  return total;
}

Result<RunOutputs> Session::Run(const std::vector<Bytes>& inputs, const Liveness* live,
                                const Plan* plan, const ExecOptions& options) {
  MF_RETURN_IF_ERROR(CheckRunnable(graph_, inputs));
  if (live != nullptr && plan != nullptr) {
    PlannedMemory memory(graph_, *live, *plan, &arena_, options.poison);
    return RunIn(&memory, inputs, options);
  }
  UnplannedMemory memory(graph_, shared_);
  return RunIn(&memory, inputs, options);
}

Result<RunOutputs> Session::RunIn(RunMemory* memory, const std::vector<Bytes>& inputs,
                                  const ExecOptions& options) {
  const Graph& graph = graph_;
  std::vector<std::byte*> where(static_cast<size_t>(graph.num_values()), nullptr);
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    if (OwnsPersistentBytes(v))
      where[static_cast<size_t>(v)] = storage_[static_cast<size_t>(v)].data();
  }
  BindStreamedInputs(graph, inputs, &where);
  memory->Bind(&where);
  BindConstantsAndShared(graph, shared_, &where);
  std::vector<Bytes> captured(options.capture.size());
  CopyInputs(graph, inputs, where);
  RunMonitor* monitor = options.monitor;
  if (monitor != nullptr) MF_RETURN_IF_ERROR(monitor->Started(where, memory->arena()));
  for (size_t pos = 0; pos < graph.schedule.size(); ++pos) {
    const NodeId id = graph.schedule[pos];
    const Node& node = graph.node(id);
    std::vector<std::byte*> scratch;
    memory->Prepare(pos, node, &where, &scratch);
    const NodeKernelArgs args = ArgsOf(graph, node, where, memory->views());
    KernelError kernel_error;
    KernelContext context = args.Context(scratch);
    context.error = &kernel_error;
    AccessWatch* watch = nullptr;
    if (monitor != nullptr) {
      MF_ASSIGN_OR_RETURN(watch, monitor->Before(pos, node, context));
    }
    const bool runs = !OpOf(node)->alias && !memory->InPlace(id);
    const auto start = std::chrono::steady_clock::now();
    if (const int64_t fetched = FetchedInput(graph, node); runs && fetched >= 0 && options.fetch) {
      MF_RETURN_IF_ERROR(Fetch(graph, node, static_cast<size_t>(fetched), context, options));
    } else if (runs) {
      RunKernel(graph, node, context, watch);
    }
    if (kernel_error.message != nullptr) {
      return Status::Error("operator " + std::to_string(pos) + " '" + node.name + "' (" + node.op +
                           ") refuses its input: " + kernel_error.message);
    }
    if (options.layer_ms != nullptr) {
      (*options.layer_ms)[node.layer.empty() ? "other" : node.layer] +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
    }
    if (monitor != nullptr) MF_RETURN_IF_ERROR(monitor->After(pos, node, context, runs));
    Capture(graph, node, where, options.capture, &captured);
    memory->Finish(pos);
  }
  if (monitor != nullptr) MF_RETURN_IF_ERROR(monitor->Finished(where));
  RunOutputs result = CollectOutputs(graph, where);
  result.captured = std::move(captured);
  result.allocated_bytes = persistent_bytes() + memory->allocated_bytes();
  return result;
}

Result<RunOutputs> RunUnplanned(const Graph& graph, const std::vector<Bytes>& inputs,
                                const ExecOptions& options) {
  return Session(graph).Run(inputs, nullptr, nullptr, options);
}

Result<RunOutputs> RunPlanned(const Graph& graph, const Liveness& live, const Plan& plan,
                              const std::vector<Bytes>& inputs, const ExecOptions& options) {
  return Session(graph).Run(inputs, &live, &plan, options);
}

}  // namespace memfold

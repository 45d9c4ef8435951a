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

// An unplanned run's memory: every computed value (every root of shared storage) gets a
// poisoned buffer of its own when its producer runs, or at the start if it is fed, and loses it
// after the last operator that reads or writes it, so the run holds only the values live at the
// current step (graph outputs until the end). O(V + E) to set up.
class UnplannedMemory {
 public:
  UnplannedMemory(const Graph& graph, const SharedStorage& shared)
      : graph_(graph), shared_(shared) {}

  // Gives the values nothing produces (graph inputs, unwritten tensors) their buffers, and
  // works out when each buffer dies. Call once, after persistent and streamed values are bound.
  void BindFed(std::vector<std::byte*>* where) {
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

  // Allocates the outputs of `node` and points every value it touches at its root's buffer.
  void BindNode(const Node& node, std::vector<std::byte*>* where) {
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
  void ReleaseDead(size_t pos) {
    const auto& dying = dies_at_.find(static_cast<int64_t>(pos));
    if (dying == dies_at_.end()) return;
    for (ValueId v : dying->second) Bytes().swap(own_[static_cast<size_t>(v)]);
    dies_at_.erase(dying);
  }

  void AddScratch(int64_t bytes) { allocated_ += bytes; }
  // Every byte allocated during the run (not the peak: what one buffer per value would take).
  int64_t allocated_bytes() const { return allocated_; }

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
  const Graph& graph = graph_;
  MF_RETURN_IF_ERROR(CheckRunnable(graph, inputs));
  const bool planned = live != nullptr && plan != nullptr;
  std::vector<std::byte*> where(static_cast<size_t>(graph.num_values()), nullptr);
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    if (OwnsPersistentBytes(v))
      where[static_cast<size_t>(v)] = storage_[static_cast<size_t>(v)].data();
  }
  BindStreamedInputs(graph, inputs, &where);
  std::byte* const arena = planned ? arena_.Reserve(plan->arena_bytes) : nullptr;
  if (planned && options.poison) std::fill(arena, arena + plan->arena_bytes, kPoison);
  UnplannedMemory own(graph, shared_);  // unplanned: one buffer per value while it lives
  if (planned) {
    const std::vector<ValueHome> homes = PlannedHomes(graph, *live, *plan);
    for (ValueId v = 0; v < graph.num_values(); ++v) {
      if (homes[static_cast<size_t>(v)].home == Home::kArena)
        where[static_cast<size_t>(v)] = arena + homes[static_cast<size_t>(v)].offset;
    }
  } else {
    own.BindFed(&where);
  }
  BindConstantsAndShared(graph, shared_, &where);
  std::vector<Bytes> captured(options.capture.size());
  if (planned && options.poison) PoisonStartingBuffers(*live, *plan, 0, arena);
  CopyInputs(graph, inputs, where);
  RunMonitor* monitor = options.monitor;
  if (monitor != nullptr) MF_RETURN_IF_ERROR(monitor->Started(where, planned ? arena : nullptr));
  for (size_t pos = 0; pos < graph.schedule.size(); ++pos) {
    const NodeId id = graph.schedule[pos];
    const Node& node = graph.node(id);
    std::vector<Bytes> scratch_storage;
    std::vector<std::byte*> scratch;
    if (planned) {
      if (options.poison) PoisonStartingBuffers(*live, *plan, NodeTime(pos), arena);
      for (int32_t r : live->scratch_of[static_cast<size_t>(id)])
        scratch.push_back(arena + plan->offsets[static_cast<size_t>(r)]);
    } else if (const OpDef* def = OpOf(node); def->scratch != nullptr) {
      for (int64_t bytes : def->scratch(graph, node)) {
        scratch_storage.emplace_back(static_cast<size_t>(bytes), kPoison);
        scratch.push_back(scratch_storage.back().data());
        own.AddScratch(bytes);
      }
    }
    if (!planned) own.BindNode(node, &where);
    const NodeKernelArgs args = ArgsOf(graph, node, where, planned ? live : nullptr);
    KernelError kernel_error;
    KernelContext context = args.Context(scratch);
    context.error = &kernel_error;
    AccessWatch* watch = nullptr;
    if (monitor != nullptr) {
      MF_ASSIGN_OR_RETURN(watch, monitor->Before(pos, node, context));
    }
    const bool runs = !OpOf(node)->alias && !(planned && AlreadyInPlace(*live, id));
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
    if (!planned) own.ReleaseDead(pos);
  }
  if (monitor != nullptr) MF_RETURN_IF_ERROR(monitor->Finished(where));
  RunOutputs result = CollectOutputs(graph, where);
  result.captured = std::move(captured);
  result.allocated_bytes =
      persistent_bytes() + (planned ? plan->arena_bytes : own.allocated_bytes());
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

#include "memfold/exec/checked_run.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>

#include "memfold/ops/kernel_args.h"
#include "memfold/ops/registry.h"
#include "memfold/plan/shared_storage.h"

namespace memfold {
namespace {

// A 64-bit hash of a byte stream, independent of how the stream is cut into pieces. Words are
// the stream's 8-byte little-endian groups; each step h <- rotl((h ^ w) * m1, 31) * m2 is a
// bijection of h for a given w (odd multipliers), so streams of one length that differ in one
// word always hash differently.
class StreamHash {
 public:
  void Add(const std::byte* data, int64_t bytes) {
    total_ += bytes;
    for (; bytes > 0 && fill_ != 0; --bytes) Push(*data++);
    for (; bytes >= 8; data += 8, bytes -= 8) {
      uint64_t word;
      std::memcpy(&word, data, 8);
      state_ = Step(state_, word);
    }
    for (; bytes > 0; --bytes) Push(*data++);
  }
  uint64_t Finish() const {
    const uint64_t h = fill_ == 0 ? state_ : Step(state_, pending_);
    return Step(h, static_cast<uint64_t>(total_));
  }

 private:
  static uint64_t Step(uint64_t h, uint64_t word) {
    return std::rotl((h ^ word) * 0x9E3779B97F4A7C15ull, 31) * 0xBF58476D1CE4E5B9ull;
  }
  void Push(std::byte b) {
    pending_ |= static_cast<uint64_t>(b) << (8 * fill_);
    if (++fill_ == 8) {
      state_ = Step(state_, pending_);
      pending_ = 0;
      fill_ = 0;
    }
  }
  uint64_t state_ = 0x243F6A8885A308D3ull;
  uint64_t pending_ = 0;
  int fill_ = 0;
  int64_t total_ = 0;
};

std::string Hex(uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

// Calls visit(bytes, count) for each contiguous run of a value's bytes, in element order: the
// whole value, or its rows inside a concatenation's output.
template <typename Visit>
void ForEachRun(const TensorArg& arg, Visit&& visit) {
  const int64_t bytes = arg.bytes();
  if (arg.row == 0) {
    if (bytes > 0) visit(arg.data, bytes);
    return;
  }
  const int64_t element = ElementBytes(arg.dtype);
  const int64_t row = arg.row * element, stride = arg.row_stride * element;
  for (int64_t done = 0, k = 0; done < bytes; done += row, ++k) {
    visit(arg.data + k * stride, std::min(row, bytes - done));
  }
}

uint64_t HashOf(const TensorArg& arg) {
  StreamHash hash;
  ForEachRun(arg, [&](const std::byte* p, int64_t n) { hash.Add(p, n); });
  return hash.Finish();
}

// A box of a value of the original graph: [begin, begin + extent) in every dimension.
struct BoxKey {
  ValueId source = kNoValue;
  Shape begin;
  Shape extent;
  auto operator<=>(const BoxKey&) const = default;
};

// Hash of the box's bytes in row-major order of the box, read from the contiguous `data` of
// value `value`.
uint64_t HashBox(const std::byte* data, const Value& value, const BoxKey& box) {
  StreamHash hash;
  const size_t rank = value.shape.size();
  if (box.extent == value.shape) {  // the whole value (the begin is then all zero)
    hash.Add(data, value.bytes());
    return hash.Finish();
  }
  const int64_t element = ElementBytes(value.dtype);
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) stride[d] = stride[d + 1] * value.shape[d + 1];
  const int64_t run = box.extent[rank - 1] * element;
  std::vector<int64_t> index(rank, 0);  // over the box, last dimension fixed at 0
  if (NumElements(box.extent) == 0) return hash.Finish();
  while (true) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += (box.begin[d] + index[d]) * stride[d];
    hash.Add(data + offset * element, run);
    size_t d = rank - 1;
    while (d-- > 0 && ++index[d] == box.extent[d]) index[d] = 0;
    if (d == static_cast<size_t>(-1)) break;
  }
  return hash.Finish();
}

// The box of the original graph a planned value holds, or nullopt (no counterpart).
Result<std::optional<BoxKey>> KeyOf(const Graph& original, const Graph& planned, ValueId v) {
  const Value& value = planned.value(v);
  if (!value.origin) {
    if (v >= original.num_values()) return std::optional<BoxKey>();
    const Value& same = original.value(v);
    if (same.dtype != value.dtype || same.shape != value.shape) return std::optional<BoxKey>();
    return std::optional<BoxKey>(BoxKey{v, Shape(value.shape.size(), 0), value.shape});
  }
  const ValueOrigin& origin = *value.origin;
  const auto bad = [&] {
    return Status::Error("value '" + value.name +
                         "' records an origin that is not a box of the "
                         "original graph's values (a rewriting pass is wrong)");
  };
  if (origin.source < 0 || origin.source >= original.num_values()) return bad();
  const Value& source = original.value(origin.source);
  if (source.dtype != value.dtype || source.dtype == DType::kBit ||
      source.shape.size() != value.shape.size() || origin.begin.size() != value.shape.size()) {
    return bad();
  }
  for (size_t d = 0; d < value.shape.size(); ++d) {
    if (origin.begin[d] < 0 || origin.begin[d] + value.shape[d] > source.shape[d]) return bad();
  }
  return std::optional<BoxKey>(BoxKey{origin.source, origin.begin, value.shape});
}

// The unplanned run of the original graph: records the hash of every box the planned run will
// read, when its value is produced (or at the start, for inputs and state), and the hash of
// every read of a state tensor, in order.
class ReferenceRecorder final : public RunMonitor {
 public:
  // `persistent`: per value of `original`, whether its bytes outlive a run (SharedStorage).
  ReferenceRecorder(const Graph& original, std::vector<char> persistent,
                    std::map<ValueId, std::vector<BoxKey>> wanted)
      : original_(original), persistent_(std::move(persistent)), wanted_(std::move(wanted)) {}

  Status Started(const std::vector<std::byte*>& where, const std::byte*) override {
    for (const auto& [v, boxes] : wanted_) {
      if (original_.value(v).producer == kNoNode && where[static_cast<size_t>(v)] != nullptr) {
        Record(v, where[static_cast<size_t>(v)]);
      }
    }
    return Status::Ok();
  }
  Result<AccessWatch*> Before(size_t, const Node& node, const KernelContext& args) override {
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      if (node.inputs[k] != kNoValue && persistent_[static_cast<size_t>(node.inputs[k])]) {
        state_reads_[node.inputs[k]].push_back(HashOf(args.inputs[k]));
      }
    }
    return static_cast<AccessWatch*>(nullptr);
  }
  Status After(size_t, const Node& node, const KernelContext& args, bool) override {
    for (size_t k = 0; k < node.outputs.size(); ++k) Record(node.outputs[k], args.outputs[k].data);
    return Status::Ok();
  }

  std::optional<uint64_t> BoxHash(const BoxKey& box) const {
    auto it = hashes_.find(box);
    return it == hashes_.end() ? std::nullopt : std::optional<uint64_t>(it->second);
  }
  std::optional<uint64_t> StateRead(ValueId v, size_t k) const {
    auto it = state_reads_.find(v);
    if (it == state_reads_.end() || k >= it->second.size()) return std::nullopt;
    return it->second[k];
  }

 private:
  void Record(ValueId v, const std::byte* data) {
    auto it = wanted_.find(v);
    if (it == wanted_.end() || data == nullptr) return;
    for (const BoxKey& box : it->second) hashes_[box] = HashBox(data, original_.value(v), box);
  }

  const Graph& original_;
  std::vector<char> persistent_;  // persistent values are compared read by read, in order
  std::map<ValueId, std::vector<BoxKey>> wanted_;
  std::map<BoxKey, uint64_t> hashes_;
  std::map<ValueId, std::vector<uint64_t>> state_reads_;
};

// The in-kernel check: over the arena bytes an operator both writes and reads, no input byte
// may be read after the operator wrote it. One flag per watched byte.
class ClobberWatch final : public AccessWatch {
 public:
  // Reads are watched only where something was written already.
  void Arm(const std::byte* lo, const std::byte* hi) {
    begin = lo;
    end = hi;
    read_begin = read_end = lo;
    written_.assign(static_cast<size_t>(hi - lo), 0);
    clobbered_ = nullptr;
  }
  void Read(const std::byte* p, int64_t bytes) override {
    if (clobbered_ != nullptr) return;
    for (const std::byte* q = std::max(p, begin); q < std::min(p + bytes, end); ++q) {
      if (written_[static_cast<size_t>(q - begin)]) {
        clobbered_ = q;
        return;
      }
    }
  }
  void Write(const std::byte* p, int64_t bytes) override {
    const std::byte* lo = std::max(p, begin);
    const std::byte* hi = std::min(p + bytes, end);
    for (const std::byte* q = lo; q < hi; ++q) written_[static_cast<size_t>(q - begin)] = 1;
    if (read_begin == read_end) {
      read_begin = lo;
      read_end = hi;
    }
    read_begin = std::min(read_begin, lo);
    read_end = std::max(read_end, hi);
  }
  const std::byte* clobbered() const { return clobbered_; }

 private:
  std::vector<uint8_t> written_;
  const std::byte* clobbered_ = nullptr;
};

struct Span {
  int64_t lo, hi;  // arena byte offsets [lo, hi)
};

// The planned run: the value, owner and in-kernel checks. Any error it returns means it found
// the first difference, which difference() holds.
class PlanChecker final : public RunMonitor {
 public:
  PlanChecker(const Graph& planned, const Liveness& live, const Plan& plan,
              const std::vector<std::optional<BoxKey>>& keys, const ReferenceRecorder& reference)
      : graph_(planned),
        shared_(live.shared),
        live_(live),
        plan_(plan),
        keys_(keys),
        reference_(reference) {}

  Status Started(const std::vector<std::byte*>& where, const std::byte* arena) override {
    arena_ = arena;
    tags_.assign(static_cast<size_t>(plan_.arena_bytes), 0);
    for (ValueId v : graph_.inputs) {
      const int32_t buffer = live_.buffer_of[static_cast<size_t>(v)];
      if (buffer == kNoBuffer) continue;
      ForEachRun(TensorArgOf(graph_.value(v), where[static_cast<size_t>(v)]),
                 [&](const std::byte* p, int64_t n) {
                   std::fill_n(tags_.begin() + (p - arena_), n, Tag(buffer));
                 });
    }
    return Status::Ok();
  }

  Result<AccessWatch*> Before(size_t position, const Node& node,
                              const KernelContext& args) override {
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const ValueId v = node.inputs[k];
      if (v == kNoValue || graph_.value(v).is_constant()) continue;
      MF_RETURN_IF_ERROR(CheckRead(static_cast<int64_t>(position), &node, v, args.inputs[k]));
    }
    return Arm(position, node, args);
  }

  Status After(size_t position, const Node& node, const KernelContext& args, bool ran) override {
    if (armed_) {
      armed_ = false;
      if (const std::byte* p = watch_.clobbered(); p != nullptr)
        return Clobbered(position, node, args, p);
    }
    return ran ? TagWrites(position, node, args) : Status::Ok();
  }

  Status Finished(const std::vector<std::byte*>& where) override {
    for (ValueId v : graph_.outputs) {
      if (graph_.value(v).is_constant()) continue;
      MF_RETURN_IF_ERROR(
          CheckRead(-1, nullptr, v, TensorArgOf(graph_.value(v), where[static_cast<size_t>(v)])));
    }
    return Status::Ok();
  }

  const std::optional<ReadDifference>& difference() const { return difference_; }
  int64_t values_checked() const { return values_checked_; }
  int64_t reads_without_counterpart() const { return reads_without_counterpart_; }
  int64_t operators_traced() const { return operators_traced_; }

 private:
  static uint32_t Tag(int32_t buffer) { return static_cast<uint32_t>(buffer) + 1; }

  // The hash the unplanned run had for this read of `v`, if it has a counterpart.
  std::optional<uint64_t> Expected(ValueId v) {
    if (shared_.persistent[static_cast<size_t>(v)])
      return reference_.StateRead(v, state_reads_[v]++);
    const std::optional<BoxKey>& key = keys_[static_cast<size_t>(v)];
    return key ? reference_.BoxHash(*key) : std::nullopt;
  }

  Status CheckRead(int64_t position, const Node* node, ValueId v, const TensorArg& arg) {
    const uint64_t actual = HashOf(arg);
    const std::optional<uint64_t> expected = Expected(v);
    if (expected) {
      ++values_checked_;
      if (*expected != actual) return Stop(position, node, v, expected, actual, "its bytes differ");
    } else {
      ++reads_without_counterpart_;
    }
    const int32_t buffer = live_.buffer_of[static_cast<size_t>(v)];
    if (buffer == kNoBuffer) return Status::Ok();
    int64_t seen = 0;
    std::optional<std::pair<int64_t, uint32_t>> foreign;  // byte of the value, the tag found
    ForEachRun(arg, [&](const std::byte* p, int64_t n) {
      for (int64_t i = 0; i < n && !foreign; ++i) {
        const uint32_t tag = tags_[static_cast<size_t>(p - arena_ + i)];
        if (tag != Tag(buffer)) foreign.emplace(seen + i, tag);
      }
      seen += n;
    });
    if (!foreign) return Status::Ok();
    return Stop(position, node, v, expected, actual,
                "byte " + std::to_string(foreign->first) + " of it was last written " +
                    WriterOf(foreign->second) + ", not as part of it",
                "owner");
  }

  // "as part of 'conv1'", "as scratch of operator 'mean'", "by nothing since the run began".
  std::string WriterOf(uint32_t tag) const {
    if (tag == 0) return "by nothing since the run began";
    const auto buffer = static_cast<size_t>(tag - 1);
    const ValueId v = live_.value_of[buffer];
    if (v != kNoValue) return "as part of '" + graph_.value(v).name + "'";
    for (NodeId n = 0; n < graph_.num_nodes(); ++n) {
      for (int32_t r : live_.scratch_of[static_cast<size_t>(n)]) {
        if (static_cast<size_t>(r) == buffer)
          return "as scratch of operator '" + graph_.node(n).name + "'";
      }
    }
    return "as scratch";
  }

  Span SpanOf(const TensorArg& arg) const {
    Span span{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
    ForEachRun(arg, [&](const std::byte* p, int64_t n) {
      span.lo = std::min(span.lo, p - arena_);
      span.hi = std::max(span.hi, p - arena_ + n);
    });
    return span;
  }

  bool InArena(ValueId v) const {
    return v != kNoValue && live_.buffer_of[static_cast<size_t>(v)] != kNoBuffer;
  }

  // Arms the in-kernel watch over the bytes the node both writes and reads, if any.
  AccessWatch* Arm(size_t position, const Node& node, const KernelContext& args) {
    const KernelEntry* entry =
        OpOf(node)->alias ? nullptr
                          : OpOf(node)->FindKernelEntry(graph_.value(node.inputs[0]).dtype);
    if (entry == nullptr || entry->traced == nullptr) return nullptr;
    std::vector<Span> reads, writes;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      if (InArena(node.inputs[k]) && args.inputs[k].bytes() > 0)
        reads.push_back(SpanOf(args.inputs[k]));
    }
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      if (InArena(node.outputs[k]) && args.outputs[k].bytes() > 0)
        writes.push_back(SpanOf(args.outputs[k]));
    }
    const std::vector<int32_t>& scratch = ScratchOf(position);
    for (size_t k = 0; k < scratch.size(); ++k) {
      const int64_t at = args.scratch[k] - arena_;
      writes.push_back({at, at + live_.requests[static_cast<size_t>(scratch[k])].bytes});
    }
    Span shared{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
    for (const Span& w : writes) {
      for (const Span& r : reads) {
        if (w.lo < r.hi && r.lo < w.hi) {
          shared.lo = std::min(shared.lo, std::max(w.lo, r.lo));
          shared.hi = std::max(shared.hi, std::min(w.hi, r.hi));
        }
      }
    }
    if (shared.lo >= shared.hi) return nullptr;
    watch_.Arm(arena_ + shared.lo, arena_ + shared.hi);
    armed_ = true;
    ++operators_traced_;
    return &watch_;
  }

  // The scratch requests of the node at `position`, in the order of its scratch pointers.
  const std::vector<int32_t>& ScratchOf(size_t position) const {
    return live_.scratch_of[static_cast<size_t>(graph_.schedule[position])];
  }

  Status Clobbered(size_t position, const Node& node, const KernelContext& args,
                   const std::byte* p) {
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      if (!InArena(node.inputs[k])) continue;
      int64_t seen = 0;
      std::optional<int64_t> at;
      ForEachRun(args.inputs[k], [&](const std::byte* q, int64_t n) {
        if (!at && p >= q && p < q + n) at = seen + (p - q);
        seen += n;
      });
      if (at) {
        return Stop(static_cast<int64_t>(position), &node, node.inputs[k], std::nullopt,
                    std::nullopt,
                    "the operator read byte " + std::to_string(*at) +
                        " of it after writing that byte as one of its results",
                    "in-kernel");
      }
    }
    return Stop(static_cast<int64_t>(position), &node, node.inputs[0], std::nullopt, std::nullopt,
                "the operator read an input byte after writing it", "in-kernel");
  }

  // Tags the bytes the node wrote; two of its results sharing a byte is a difference too.
  Status TagWrites(size_t position, const Node& node, const KernelContext& args) {
    std::vector<uint32_t> written;
    std::optional<int64_t> shared;
    auto tag = [&](const std::byte* p, int64_t n, uint32_t t) {
      for (int64_t i = 0; i < n; ++i) {
        uint32_t& cell = tags_[static_cast<size_t>(p - arena_ + i)];
        if (!shared && cell != t &&
            std::find(written.begin(), written.end(), cell) != written.end()) {
          shared = p - arena_ + i;
        }
        cell = t;
      }
    };
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      if (!InArena(node.outputs[k])) continue;
      const uint32_t t = Tag(live_.buffer_of[static_cast<size_t>(node.outputs[k])]);
      ForEachRun(args.outputs[k], [&](const std::byte* p, int64_t n) { tag(p, n, t); });
      written.push_back(t);
      if (shared) {
        return Stop(static_cast<int64_t>(position), &node, node.outputs[k], std::nullopt,
                    std::nullopt,
                    "it shares arena byte " + std::to_string(*shared) +
                        " with another result of the same operator",
                    "owner");
      }
    }
    const std::vector<int32_t>& scratch = ScratchOf(position);
    for (size_t k = 0; k < scratch.size(); ++k) {
      tag(args.scratch[k], live_.requests[static_cast<size_t>(scratch[k])].bytes, Tag(scratch[k]));
      written.push_back(Tag(scratch[k]));
      if (shared) {
        return Stop(static_cast<int64_t>(position), &node, kNoValue, std::nullopt, std::nullopt,
                    "its scratch shares arena byte " + std::to_string(*shared) +
                        " with another of its results",
                    "owner");
      }
    }
    return Status::Ok();
  }

  Status Stop(int64_t position, const Node* node, ValueId v, std::optional<uint64_t> expected,
              std::optional<uint64_t> actual, std::string detail, std::string check = "value") {
    ReadDifference d;
    d.check = position < 0 && check == "value" ? "output" : std::move(check);
    d.position = position;
    if (node != nullptr) {
      d.op_name = node->name;
      d.op = node->op;
    }
    d.value_name = v == kNoValue ? "(scratch)" : graph_.value(v).name;
    d.expected_hash = expected ? Hex(*expected) : "";
    d.actual_hash = actual ? Hex(*actual) : "";
    d.detail = std::move(detail);
    difference_ = std::move(d);
    return Status::Error("checked execution stopped at the first difference");
  }

  const Graph& graph_;
  const SharedStorage& shared_;
  const Liveness& live_;
  const Plan& plan_;
  const std::vector<std::optional<BoxKey>>& keys_;
  const ReferenceRecorder& reference_;
  const std::byte* arena_ = nullptr;
  std::vector<uint32_t> tags_;  // per arena byte: 1 + the buffer that last wrote it, 0: none
  std::map<ValueId, size_t> state_reads_;
  ClobberWatch watch_;
  bool armed_ = false;
  std::optional<ReadDifference> difference_;
  int64_t values_checked_ = 0;
  int64_t reads_without_counterpart_ = 0;
  int64_t operators_traced_ = 0;
};

// Every planned value's counterpart, and the boxes of original values the planned run reads.
Status CollectKeys(const Graph& original, const Graph& planned,
                   std::vector<std::optional<BoxKey>>* keys,
                   std::map<ValueId, std::vector<BoxKey>>* wanted) {
  keys->assign(static_cast<size_t>(planned.num_values()), std::nullopt);
  std::vector<char> read(static_cast<size_t>(planned.num_values()), 0);
  for (NodeId n : planned.schedule) {
    for (ValueId v : planned.node(n).inputs) {
      if (v != kNoValue) read[static_cast<size_t>(v)] = 1;
    }
  }
  for (ValueId v : planned.outputs) read[static_cast<size_t>(v)] = 1;
  for (ValueId v = 0; v < planned.num_values(); ++v) {
    if (!read[static_cast<size_t>(v)] || planned.value(v).is_constant()) continue;
    MF_ASSIGN_OR_RETURN((*keys)[static_cast<size_t>(v)], KeyOf(original, planned, v));
    if (const auto& key = (*keys)[static_cast<size_t>(v)]) {
      std::vector<BoxKey>& boxes = (*wanted)[key->source];
      if (std::find(boxes.begin(), boxes.end(), *key) == boxes.end()) boxes.push_back(*key);
    }
  }
  return Status::Ok();
}

}  // namespace

struct ReferenceRun {
  std::vector<std::optional<BoxKey>> keys;  // per planned value
  std::unique_ptr<ReferenceRecorder> hashes;
  RunOutputs outputs;
};

Result<CheckedRunner> CheckedRunner::Make(const Graph& original, const Graph& planned,
                                          const std::vector<Bytes>& inputs) {
  if (planned.inputs != original.inputs || planned.outputs != original.outputs) {
    return Status::Error("the planned graph's inputs and outputs are not the original's");
  }
  auto reference = std::make_shared<ReferenceRun>();
  std::map<ValueId, std::vector<BoxKey>> wanted;
  MF_RETURN_IF_ERROR(CollectKeys(original, planned, &reference->keys, &wanted));
  Session unplanned(original);
  reference->hashes = std::make_unique<ReferenceRecorder>(original, unplanned.shared().persistent,
                                                          std::move(wanted));
  MF_ASSIGN_OR_RETURN(reference->outputs, unplanned.Run(inputs, nullptr, nullptr,
                                                        {.monitor = reference->hashes.get()}));
  CheckedRunner runner;
  runner.planned_ = &planned;
  runner.inputs_ = inputs;
  runner.reference_ = std::move(reference);
  return runner;
}

Result<CheckedRun> CheckedRunner::Run(const Liveness& liveness, const Plan& plan) const {
  PlanChecker checker(*planned_, liveness, plan, reference_->keys, *reference_->hashes);
  Result<RunOutputs> run = RunPlanned(*planned_, liveness, plan, inputs_, {.monitor = &checker});
  CheckedRun result;
  result.unplanned = reference_->outputs;
  result.values_checked = checker.values_checked();
  result.reads_without_counterpart = checker.reads_without_counterpart();
  result.operators_traced = checker.operators_traced();
  result.first_difference = checker.difference();
  if (result.first_difference) return result;
  if (!run.ok()) return run.status();
  result.planned = std::move(run).value();
  return result;
}

Result<CheckedRun> RunChecked(const Graph& original, const Graph& planned, const Liveness& liveness,
                              const Plan& plan, const std::vector<Bytes>& inputs) {
  MF_ASSIGN_OR_RETURN(CheckedRunner runner, CheckedRunner::Make(original, planned, inputs));
  return runner.Run(liveness, plan);
}

std::string DescribeDifference(const ReadDifference& d) {
  std::string text = d.position < 0 ? "graph output '" + d.value_name + "'"
                                    : "operator " + std::to_string(d.position) + " '" + d.op_name +
                                          "' (" + d.op + ") reads '" + d.value_name + "'";
  text += ": " + d.detail;
  if (!d.actual_hash.empty() && !d.expected_hash.empty()) {
    text += " (hash " + d.actual_hash + " planned, " + d.expected_hash + " unplanned)";
  }
  return text;
}

}  // namespace memfold

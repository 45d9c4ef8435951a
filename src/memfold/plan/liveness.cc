#include "memfold/plan/liveness.h"

#include <algorithm>
#include <variant>

#include "memfold/ops/registry.h"
#include "memfold/plan/shared_storage.h"

namespace memfold {
namespace {

bool NeedsArena(const Value& value) {
  return !value.is_constant() && value.role != Role::kWeight && value.role != Role::kState &&
         value.role != Role::kStreamed && value.role != Role::kOptimizerState && value.bytes() > 0;
}

// Whether `node` is an op of view rule `rule` asked to be a copy-free view (attribute view).
bool WantsView(const Node& node, ViewRule rule) {
  if (RulesOf(node).view != rule) return false;
  const AttrValue* view = node.attrs.Find("view");
  return view != nullptr && std::holds_alternative<int64_t>(*view) && std::get<int64_t>(*view) != 0;
}

// Where each value's bytes live: the value whose buffer it uses (itself, unless it is a view or
// an in-place update of another value), its byte offset inside that buffer, and its row layout
// there (a concat input along an inner axis).
struct Storage {
  std::vector<ValueId> root;
  std::vector<int64_t> offset;
  std::vector<RowLayout> rows;
  std::vector<char> copy_free;  // per node
};

// `axis` normalised into [0, rank), or -1 when it is out of range.
int64_t NormalAxis(const Shape& shape, int64_t axis) {
  const auto rank = static_cast<int64_t>(shape.size());
  if (axis < 0) axis += rank;
  return axis < 0 || axis >= rank ? -1 : axis;
}

// A concat input may live inside the concat's output: it is read once, by the concat; it is
// neither a graph input nor output; and its producer writes one output of its own (a kernel's
// or a concat's, which may itself hold its inputs: nested bands), not a view or alias.
bool CanLiveInsideConcat(const Graph& graph, const std::vector<std::vector<NodeId>>& consumers,
                         const std::vector<char>& is_io, ValueId in) {
  if (in == kNoValue || is_io[static_cast<size_t>(in)] ||
      consumers[static_cast<size_t>(in)].size() != 1)
    return false;
  const Value& value = graph.value(in);
  if (!NeedsArena(value) || value.dtype == DType::kBit || value.producer == kNoNode) return false;
  const Node& producer = graph.node(value.producer);
  const OpDef* def = OpOf(producer);
  return def != nullptr && !def->alias && def->updates_input.empty() &&
         producer.outputs.size() == 1 && !WantsView(producer, ViewRule::kSliceRows);
}

// Places each eligible input of a view concat inside the concat's output: back to back along
// an outermost axis, in rows of the output along an inner one. The concat is copy-free (true)
// when every input was placed; otherwise it still runs and copies the others. A concat whose
// own output lies in rows places its inputs in those rows when it joins whole rows along its
// outermost axis (a strip of tiles inside a band of columns); otherwise it keeps them apart:
// rows of rows along an inner axis are not modelled.
bool PlaceConcatInputs(const Graph& graph, const std::vector<std::vector<NodeId>>& consumers,
                       const std::vector<char>& is_io, const Node& node, Storage* storage) {
  const auto out_id = static_cast<size_t>(node.outputs[0]);
  const Value& out = graph.value(node.outputs[0]);
  if (!NeedsArena(out) || out.dtype == DType::kBit || out.producer == kNoNode || is_io[out_id] == 2)
    return false;
  for (NodeId reader : consumers[out_id]) {  // an in-place update would move its bytes
    const OpDef* def = OpOf(graph.node(reader));
    if (def == nullptr || !def->updates_input.empty()) return false;
  }
  const int64_t axis = NormalAxis(out.shape, node.attrs.Int("axis"));
  if (axis < 0) return false;
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out.shape[static_cast<size_t>(d)];
  const RowLayout in_rows = storage->rows[out_id];
  if (in_rows.row_bytes != 0) {
    const bool whole_rows =
        outer == 1 && std::all_of(node.inputs.begin(), node.inputs.end(), [&](ValueId in) {
          return graph.value(in).bytes() % in_rows.row_bytes == 0;
        });
    if (!whole_rows) return false;
  }
  const int64_t stride = out.bytes() / outer;  // one row of the output: a row of every input
  int64_t offset = storage->offset[out_id];    // non-zero when nested in another concat
  bool all_placed = true;
  for (ValueId in : node.inputs) {
    const int64_t row = graph.value(in).bytes() / outer;
    if (CanLiveInsideConcat(graph, consumers, is_io, in)) {
      const auto i = static_cast<size_t>(in);
      storage->root[i] = storage->root[out_id];
      storage->offset[i] = offset;
      if (in_rows.row_bytes != 0) {
        storage->rows[i] = in_rows;
      } else if (outer > 1) {
        storage->rows[i] = {row, stride};
      }
    } else {
      all_placed = false;
    }
    offset += in_rows.row_bytes != 0 ? row / in_rows.row_bytes * in_rows.stride_bytes : row;
  }
  return all_placed;
}

// Byte offset of a slice's output inside its input when the output is one contiguous range of
// the input (unit dimensions before one axis, whole dimensions after it), or -1.
int64_t ContiguousSliceOffset(const Graph& graph, const Node& node) {
  const Value& in = graph.value(node.inputs[0]);
  const Value& out = graph.value(node.outputs[0]);
  const auto& begin = node.attrs.Ints("begin");
  if (in.dtype == DType::kBit || begin.size() != in.shape.size()) return -1;
  size_t axis = 0;
  while (axis + 1 < out.shape.size() && out.shape[axis] == 1) ++axis;
  int64_t elements = 0, stride = 1;
  for (size_t d = in.shape.size(); d-- > 0;) {
    if (d > axis && (begin[d] != 0 || out.shape[d] != in.shape[d])) return -1;
    elements += begin[d] * stride;
    stride *= in.shape[d];
  }
  return StorageBytes(in.dtype, elements);
}

// A view slice reads its input's buffer in place unless its input is not in the arena, its
// output is a graph output, or a consumer updates the output in place.
bool PlaceSliceOutput(const Graph& graph, const std::vector<std::vector<NodeId>>& consumers,
                      const std::vector<char>& is_io, const Node& node, Storage* storage) {
  const ValueId in = node.inputs[0];
  const ValueId out = node.outputs[0];
  if (!NeedsArena(graph.value(in)) || is_io[static_cast<size_t>(out)]) return false;
  for (NodeId reader : consumers[static_cast<size_t>(out)]) {
    const OpDef* def = OpOf(graph.node(reader));
    if (def == nullptr || !def->updates_input.empty()) return false;
  }
  const int64_t offset = ContiguousSliceOffset(graph, node);
  if (offset < 0) return false;
  storage->root[static_cast<size_t>(out)] = storage->root[static_cast<size_t>(in)];
  storage->offset[static_cast<size_t>(out)] = storage->offset[static_cast<size_t>(in)] + offset;
  return true;
}

// per value: 1 = graph input, 2 = graph output.
std::vector<char> GraphInterface(const Graph& graph) {
  std::vector<char> is_io(static_cast<size_t>(graph.num_values()), 0);
  for (ValueId v : graph.inputs) is_io[static_cast<size_t>(v)] = 1;
  for (ValueId v : graph.outputs) is_io[static_cast<size_t>(v)] = 2;
  return is_io;
}

// View concats first, in reverse schedule order so that a concat nested in another already
// knows its place; then view slices and the values that share bytes (plan/shared_storage.h) in
// schedule order, so that a chain of views resolves to its first buffer.
Storage StorageRoots(const Graph& graph, const SharedStorage& shared) {
  Storage storage;
  const auto num_values = static_cast<size_t>(graph.num_values());
  storage.root.resize(num_values);
  storage.offset.assign(num_values, 0);
  storage.rows.assign(num_values, {});
  storage.copy_free.assign(static_cast<size_t>(graph.num_nodes()), 0);
  for (ValueId v = 0; v < graph.num_values(); ++v) storage.root[static_cast<size_t>(v)] = v;
  const std::vector<char> is_io = GraphInterface(graph);
  std::vector<std::vector<NodeId>> consumers;
  for (auto it = graph.schedule.rbegin(); it != graph.schedule.rend(); ++it) {
    const NodeId id = *it;
    const Node& node = graph.node(id);
    if (!WantsView(node, ViewRule::kConcatRows)) continue;
    if (consumers.empty()) consumers = graph.Consumers();
    storage.copy_free[static_cast<size_t>(id)] =
        PlaceConcatInputs(graph, consumers, is_io, node, &storage);
  }
  for (NodeId id : graph.schedule) {
    const Node& node = graph.node(id);
    if (WantsView(node, ViewRule::kSliceRows)) {
      if (consumers.empty()) consumers = graph.Consumers();
      storage.copy_free[static_cast<size_t>(id)] =
          PlaceSliceOutput(graph, consumers, is_io, node, &storage);
    }
    for (ValueId out : node.outputs) {  // aliases and in-place updates share their input's bytes
      const auto from = static_cast<size_t>(shared.root[static_cast<size_t>(out)]);
      if (from == static_cast<size_t>(out)) continue;
      storage.root[static_cast<size_t>(out)] = storage.root[from];
      storage.offset[static_cast<size_t>(out)] = storage.offset[from];
    }
  }
  return storage;
}

void AddScratchRequests(const Graph& graph, Liveness* live) {
  live->scratch_of.assign(static_cast<size_t>(graph.num_nodes()), {});
  for (size_t pos = 0; pos < graph.schedule.size(); ++pos) {
    const NodeId id = graph.schedule[pos];
    const OpDef* def = OpOf(graph.node(id));
    if (def == nullptr || def->scratch == nullptr) continue;
    for (int64_t bytes : def->scratch(graph, graph.node(id))) {
      BufferRequest request;
      request.id = static_cast<int32_t>(live->requests.size());
      request.bytes = bytes;
      request.alignment = kArenaAlignment;
      request.first = request.last = NodeTime(pos);
      live->scratch_of[static_cast<size_t>(id)].push_back(request.id);
      live->value_of.push_back(kNoValue);
      live->requests.push_back(std::move(request));
    }
  }
}

}  // namespace

Liveness ComputeLiveness(const Graph& graph) {
  const auto num_values = static_cast<size_t>(graph.num_values());
  SharedStorage shared = ComputeSharedStorage(graph);
  Storage storage = StorageRoots(graph, shared);
  const std::vector<ValueId>& root = storage.root;
  std::vector<int32_t> first(num_values, -1), last(num_values, -1);
  auto touch = [&](ValueId v, int32_t time) {
    const auto r = static_cast<size_t>(root[static_cast<size_t>(v)]);
    if (first[r] < 0) first[r] = time;
    last[r] = std::max(last[r], time);
  };
  for (ValueId v : graph.inputs) touch(v, 0);
  for (size_t pos = 0; pos < graph.schedule.size(); ++pos) {
    const Node& node = graph.node(graph.schedule[pos]);
    for (ValueId in : node.inputs) {
      if (in != kNoValue) touch(in, NodeTime(pos));
    }
    for (ValueId out : node.outputs) touch(out, NodeTime(pos));
  }
  Liveness live;
  live.shared = std::move(shared);
  live.end_time = NodeTime(graph.schedule.size());
  for (ValueId v : graph.outputs) touch(v, live.end_time);

  live.buffer_of.assign(num_values, kNoBuffer);
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    const auto i = static_cast<size_t>(v);
    if (root[i] != v || first[i] < 0 || !NeedsArena(graph.value(v))) continue;
    live.buffer_of[i] = static_cast<int32_t>(live.requests.size());
    live.value_of.push_back(v);
    BufferRequest request;
    request.id = static_cast<int32_t>(live.requests.size());
    request.bytes = graph.value(v).bytes();
    request.alignment = kArenaAlignment;
    request.first = first[i];
    request.last = last[i];
    live.requests.push_back(std::move(request));
  }
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    const auto r = static_cast<size_t>(root[static_cast<size_t>(v)]);
    if (root[static_cast<size_t>(v)] != v)
      live.buffer_of[static_cast<size_t>(v)] = live.buffer_of[r];
  }
  AddScratchRequests(graph, &live);
  live.view_offset = std::move(storage.offset);
  live.view_rows = std::move(storage.rows);
  live.copy_free = std::move(storage.copy_free);
  return live;
}

std::vector<int64_t> LiveBytesPerStep(const Liveness& live) {
  std::vector<int64_t> bytes(static_cast<size_t>(live.end_time) + 2, 0);
  for (const BufferRequest& r : live.requests) {
    bytes[static_cast<size_t>(r.first)] += r.bytes;
    bytes[static_cast<size_t>(r.last) + 1] -= r.bytes;
  }
  for (size_t t = 1; t < bytes.size(); ++t) bytes[t] += bytes[t - 1];
  bytes.pop_back();
  return bytes;
}

}  // namespace memfold

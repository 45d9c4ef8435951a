#include "memfold/passes/split.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "memfold/ops/registry.h"
#include "memfold/ops/window.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {
namespace {

constexpr size_t kAxisH = 1, kAxisW = 2;

bool IsWindowOp(const Node& node) {
  const TileRule rule = RulesOf(node).tile;
  return rule == TileRule::kConvWindow || rule == TileRule::kPoolWindow;
}

bool IsSlice(const Node& node) { return RulesOf(node).tile == TileRule::kSlice; }

// How an op maps output indices to input indices along one spatial axis: output o reads
// input [o * stride - before, o * stride - before + extent). Elementwise ops are the identity,
// pads and slices shifts.
struct AxisMap {
  int64_t extent = 1;  // (k - 1) * dilation + 1
  int64_t stride = 1;
  int64_t before = 0;
};

// Rows [h0, h1) and columns [w0, w1) of an NHWC value; batch and channels whole.
struct Box {
  int64_t h0 = 0, h1 = 0, w0 = 0, w1 = 0;
  bool operator==(const Box&) const = default;
  bool empty() const { return h1 <= h0 || w1 <= w0; }
  Box Hull(const Box& other) const {
    if (empty()) return other;
    return {std::min(h0, other.h0), std::max(h1, other.h1), std::min(w0, other.w0),
            std::max(w1, other.w1)};
  }
};

Box WholeBox(const Value& value) { return {0, value.shape[kAxisH], 0, value.shape[kAxisW]}; }

enum class TileKind { kWindow, kElementwise, kPad, kSlice };

// One op of a region and how its output box maps to its inputs' boxes (the same map for every
// activation input).
struct RegionOp {
  const Node* node = nullptr;
  TileKind kind = TileKind::kElementwise;
  AxisMap h, w;
};

bool IsBatchOneNhwc(const Value& value) { return value.shape.size() == 4 && value.shape[0] == 1; }

std::string NodeLabel(const Graph& graph, int32_t position) {
  const Node& node = graph.node(graph.schedule[static_cast<size_t>(position)]);
  return "operator " + std::to_string(position) + " '" + node.name + "' (" + node.op + ")";
}

Result<TileKind> KindOf(const Graph& graph, const Node& node, const std::string& label) {
  const TileRule rule = RulesOf(node).tile;
  if (IsWindowOp(node)) return TileKind::kWindow;
  if (rule == TileRule::kUnary && node.inputs.size() == 1) return TileKind::kElementwise;
  if (rule == TileRule::kBinary && node.inputs.size() == 2) {
    for (ValueId in : node.inputs) {
      if (in == kNoValue || graph.value(in).is_constant() ||
          graph.value(in).shape != graph.value(node.outputs[0]).shape) {
        return Status::Error(label + " cannot be split: it broadcasts or reads a constant");
      }
    }
    return TileKind::kElementwise;
  }
  if (rule == TileRule::kPad) {
    const auto& pads = node.attrs.Ints("paddings");
    if (pads.size() != 8 || pads[0] != 0 || pads[1] != 0 || pads[6] != 0 || pads[7] != 0) {
      return Status::Error(label + " cannot be split: it pads more than H and W");
    }
    return TileKind::kPad;
  }
  if (rule == TileRule::kSlice) {
    const Value& in = graph.value(node.inputs[0]);
    const Value& out = graph.value(node.outputs[0]);
    if (in.shape.size() != 4 || node.attrs.Ints("begin")[3] != 0 || out.shape[3] != in.shape[3]) {
      return Status::Error(label + " cannot be split: it slices more than H and W");
    }
    return TileKind::kSlice;
  }
  return Status::Error(label +
                       " cannot be split: only windows (conv2d, depthwise_conv2d, pools), "
                       "elementwise ops, pads and slices along H and W can");
}

Status CheckRegionOp(const Graph& graph, int32_t position) {
  const Node& node = graph.node(graph.schedule[static_cast<size_t>(position)]);
  const std::string label = NodeLabel(graph, position);
  if (node.outputs.size() != 1 || node.inputs.empty() || node.inputs[0] == kNoValue) {
    return Status::Error(label + " needs one activation input and one output to be split");
  }
  if (!IsBatchOneNhwc(graph.value(node.inputs[0])) ||
      !IsBatchOneNhwc(graph.value(node.outputs[0]))) {
    return Status::Error(label + " is not on rank-4 batch-1 NHWC tensors");
  }
  MF_ASSIGN_OR_RETURN(TileKind kind, KindOf(graph, node, label));
  if (kind != TileKind::kWindow) return Status::Ok();
  for (size_t k = 1; k < node.inputs.size(); ++k) {
    if (node.inputs[k] != kNoValue && !graph.value(node.inputs[k]).is_constant()) {
      return Status::Error(label + " input " + std::to_string(k) + " is not a constant");
    }
  }
  return Status::Ok();
}

Result<RegionOp> RegionOpOf(const Graph& graph, const Node& node) {
  RegionOp op{.node = &node};
  MF_ASSIGN_OR_RETURN(op.kind, KindOf(graph, node, "'" + node.name + "'"));
  if (op.kind == TileKind::kPad) {
    const auto& pads = node.attrs.Ints("paddings");
    op.h.before = pads[2];
    op.w.before = pads[4];
  } else if (op.kind == TileKind::kSlice) {
    op.h.before = -node.attrs.Ints("begin")[1];
    op.w.before = -node.attrs.Ints("begin")[2];
  }
  if (op.kind != TileKind::kWindow) return op;
  const Shape& in = graph.value(node.inputs[0]).shape;
  int64_t k_h = 0, k_w = 0;
  if (RulesOf(node).tile == TileRule::kConvWindow) {
    const Shape& filter = graph.value(node.inputs[1]).shape;  // [O or 1, kh, kw, I or C]
    k_h = filter[1];
    k_w = filter[2];
  } else {
    k_h = node.attrs.Ints("filter")[0];
    k_w = node.attrs.Ints("filter")[1];
  }
  MF_ASSIGN_OR_RETURN(Window2D w, ComputeWindow(node.attrs, in[1], in[2], k_h, k_w));
  op.h = {(w.k_h - 1) * w.dil_h + 1, w.stride_h, w.pad_top};
  op.w = {(w.k_w - 1) * w.dil_w + 1, w.stride_w, w.pad_left};
  return op;
}

// The input indices [lo, hi) an output range [o0, o1) reads along one axis, unclipped (it may
// reach into padding on either side).
std::pair<int64_t, int64_t> Reads(const AxisMap& map, int64_t o0, int64_t o1) {
  return {o0 * map.stride - map.before, (o1 - 1) * map.stride - map.before + map.extent};
}

// What one op of a tile reads of its input (the box, clipped to the input) and the padding that
// makes up the rest, per side: {top, bottom, left, right}.
struct TileRead {
  Box box;
  std::array<int64_t, 4> pads{};
};

TileRead ReadOf(const RegionOp& op, const Box& out, const Value& input) {
  const auto [h_lo, h_hi] = Reads(op.h, out.h0, out.h1);
  const auto [w_lo, w_hi] = Reads(op.w, out.w0, out.w1);
  TileRead read;
  read.box = {std::max<int64_t>(h_lo, 0), std::min(h_hi, input.shape[kAxisH]),
              std::max<int64_t>(w_lo, 0), std::min(w_hi, input.shape[kAxisW])};
  read.pads = {read.box.h0 - h_lo, h_hi - read.box.h1, read.box.w0 - w_lo, w_hi - read.box.w1};
  return read;
}

// Copies every value (producers are set again as nodes are added) and the graph's interface.
Graph CopyValues(const Graph& graph) {
  Graph out;
  out.name = graph.name;
  out.inputs = graph.inputs;
  out.outputs = graph.outputs;
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    Value value = graph.value(v);
    value.producer = kNoNode;
    out.AddValue(std::move(value));
  }
  return out;  // offline_offsets dropped: a file's arena plan does not describe the new graph
}

// Adds `op` with the original's quantisation and layer tag on its output.
Result<ValueId> AddLike(Graph* out, const Node& original, ValueId like, std::vector<ValueId> inputs,
                        Attrs attrs, std::string name) {
  MF_ASSIGN_OR_RETURN(std::vector<ValueId> outputs, AddOp(out, original.op, std::move(inputs),
                                                          std::move(attrs), std::move(name)));
  out->value(outputs[0]).quant = out->value(like).quant;
  out->node(out->num_nodes() - 1).layer = original.layer;
  return outputs[0];
}

// A slice of `source` (which holds `held` of the original value `original`) holding `want`, a
// view where liveness allows; it records the box of `original` it holds.
Result<ValueId> AddBoxSlice(Graph* out, ValueId source, const Box& held, ValueId original,
                            const Box& want, const std::string& name) {
  const Shape& shape = out->value(source).shape;
  Attrs attrs;
  attrs.Set("begin", std::vector<int64_t>{0, want.h0 - held.h0, want.w0 - held.w0, 0});
  attrs.Set("size", std::vector<int64_t>{1, want.h1 - want.h0, want.w1 - want.w0, shape[3]});
  attrs.Set("view", int64_t{1});
  MF_ASSIGN_OR_RETURN(std::vector<ValueId> outputs,
                      AddOp(out, "slice", {source}, std::move(attrs), name));
  out->value(outputs[0]).quant = out->value(source).quant;
  out->SetOriginWithin(outputs[0], original, {0, want.h0, want.w0, 0});
  return outputs[0];
}

// A region and, for one tile, the box every value must hold and the value holding it.
struct Region {
  std::vector<RegionOp> ops;
  std::vector<char> inside;         // per value: produced by the region
  bool caches_at_tile_end = false;  // RegionSplit::caches_at_tile_end
};

struct Tile {
  std::string tag;              // "tile<r*cols+c>", or "warm<k>.<strip>" for a warm-up tile
  std::vector<Box> need;        // per value of the region: the hull of its readers' reads
  std::vector<Box> box;         // per value: its need within the value (what the tile holds)
  std::vector<Box> computed;    // per value: what the tile computes of it (less the cached rows)
  std::vector<ValueId> holder;  // per value of the region: the tile's value holding its box
  std::vector<ValueId> cache;   // per value: the rows kept from the band before, or kNoValue
};

// The rows of `need` a tile must compute when the tile above it needed `before`: those past
// it, when the tiles advance monotonically down the same columns and overlap (the rest is
// cached); all of them otherwise.
Box NewRows(const Box& need, const Box& before) {
  if (need.empty() || before.empty() || need.h0 < before.h0 || need.h0 >= before.h1 ||
      need.w0 != before.w0 || need.w1 != before.w1)
    return need;
  Box rows = need;
  rows.h0 = std::min(need.h1, before.h1);
  return rows;
}

// `box` within the value's rows (columns are clipped already), or the empty box.
Box Clipped(const Box& box, const Value& value) {
  const Box clipped{std::max<int64_t>(box.h0, 0), std::min(box.h1, value.shape[kAxisH]), box.w0,
                    box.w1};
  return clipped.empty() ? Box{} : clipped;
}

// Works the tile's boxes backwards from the region output's box `out`: each value's need is the
// hull of what its readers' new rows read, kept unclipped above the image so that a warm-up
// tile (output rows above it, WarmUps) reaches the rows those virtual rows would read; its box
// is that need within the value. With `before` (the band before, halos cached), each op
// computes only the rows past what that band needed.
Status BoxesOfTile(const Graph& graph, const Region& region, const Box& out, const Tile* before,
                   Tile* tile) {
  for (const RegionOp& op : region.ops) tile->need[static_cast<size_t>(op.node->outputs[0])] = {};
  tile->need[static_cast<size_t>(region.ops.back().node->outputs[0])] = out;
  for (size_t i = region.ops.size(); i-- > 0;) {
    const RegionOp& op = region.ops[i];
    const auto v = static_cast<size_t>(op.node->outputs[0]);
    const Value& value = graph.value(op.node->outputs[0]);
    Box& need = tile->need[v];
    need.h1 = std::min(need.h1, value.shape[kAxisH]);
    tile->box[v] = Clipped(need, value);
    const Box fresh = before != nullptr ? NewRows(need, before->need[v]) : need;
    tile->computed[v] = Clipped(fresh, value);
    if (fresh.empty()) continue;  // no reader needs it in this tile, or it is all cached
    const auto [h_lo, h_hi] = Reads(op.h, fresh.h0, fresh.h1);
    for (size_t k = 0; k < (op.kind == TileKind::kWindow ? 1 : op.node->inputs.size()); ++k) {
      const ValueId in = op.node->inputs[k];
      const TileRead read = ReadOf(op, fresh, graph.value(in));
      if (read.box.empty() && !tile->computed[v].empty()) {
        return Status::Error("'" + op.node->name + "': a tile of " +
                             std::to_string(out.h1 - out.h0) + "x" +
                             std::to_string(out.w1 - out.w0) +
                             " output pixels reads nothing but padding; use fewer tiles");
      }
      if (region.inside[static_cast<size_t>(in)]) {
        Box& in_need = tile->need[static_cast<size_t>(in)];
        in_need = in_need.Hull({h_lo, h_hi, read.box.w0, read.box.w1});
      }
    }
  }
  return Status::Ok();
}

// Whether a tile computes nothing.
bool Idle(const Region& region, const Tile& tile) {
  return std::all_of(region.ops.begin(), region.ops.end(), [&](const RegionOp& op) {
    return tile.computed[static_cast<size_t>(op.node->outputs[0])].empty();
  });
}

// The value a tile's op reads for input `in` needing `want`: the tile's holder (sliced when it
// holds more), or a slice of a value from outside the region (the whole value when it is all
// needed, unless `fresh`).
Result<ValueId> TileInput(Graph* out, const Graph& graph, const Region& region, const Tile& tile,
                          ValueId in, const Box& want, bool fresh, const std::string& name) {
  if (region.inside[static_cast<size_t>(in)]) {
    const Box& held = tile.box[static_cast<size_t>(in)];
    const ValueId holder = tile.holder[static_cast<size_t>(in)];
    if (want == held && !fresh) return holder;
    return AddBoxSlice(out, holder, held, in, want, name);
  }
  const Box whole = WholeBox(graph.value(in));
  if (want == whole && !fresh && graph.value(in).role != Role::kStreamed) return in;
  return AddBoxSlice(out, in, whole, in, want, name);
}

// Emits the tile's copy of one region op computing `box` of its output.
Result<ValueId> EmitTileOp(Graph* out, const Graph& graph, const Region& region, const Tile& tile,
                           const RegionOp& op, SplitStats* stats) {
  const Node& original = *op.node;
  const ValueId target = original.outputs[0];
  const Box& box = tile.computed[static_cast<size_t>(target)];
  const std::string suffix = "/" + tile.tag;
  const TileRead read = ReadOf(op, box, graph.value(original.inputs[0]));
  if (op.kind == TileKind::kSlice) {
    return TileInput(out, graph, region, tile, original.inputs[0], read.box, true,
                     original.name + suffix);
  }
  Attrs attrs = original.attrs;
  std::vector<ValueId> inputs = original.inputs;
  const size_t activations = op.kind == TileKind::kWindow ? 1 : inputs.size();
  for (size_t k = 0; k < activations; ++k) {
    MF_ASSIGN_OR_RETURN(inputs[k], TileInput(out, graph, region, tile, inputs[k], read.box, false,
                                             original.name + "/in" + std::to_string(k) + suffix));
  }
  if (op.kind == TileKind::kWindow) {
    attrs.Set("padding", std::string("explicit"));
    attrs.Set("pads", std::vector<int64_t>{read.pads.begin(), read.pads.end()});
  } else if (op.kind == TileKind::kPad) {
    attrs.Set("paddings", std::vector<int64_t>{0, 0, read.pads[0], read.pads[1], read.pads[2],
                                               read.pads[3], 0, 0});
  }
  MF_ASSIGN_OR_RETURN(ValueId x, AddLike(out, original, target, std::move(inputs), std::move(attrs),
                                         original.name + suffix));
  out->SetOriginWithin(x, target, {0, box.h0, box.w0, 0});
  if (out->value(x).shape[kAxisH] != box.h1 - box.h0 ||
      out->value(x).shape[kAxisW] != box.w1 - box.w0) {
    return Status::Error("split: " + tile.tag + " of '" + original.name +
                         "' has the wrong size (internal error)");
  }
  stats->extra_flops += NodeCost(*out, out->node(out->num_nodes() - 1)).flops;
  stats->duplicated_elements += out->value(x).elements();
  if (&op != &region.ops.back())
    stats->max_tile_bytes = std::max(stats->max_tile_bytes, out->value(x).bytes());
  return x;
}

// A concat of `parts` along `axis` into `target` (a new value when kNoValue), holding `box` of
// the region output `whole`.
Result<ValueId> EmitConcat(Graph* out, const std::vector<ValueId>& parts, int64_t axis,
                           ValueId target, ValueId whole, const Box& box, const std::string& name,
                           bool copy_free) {
  Node node;
  node.op = "concat";
  node.name = name;
  node.inputs = parts;
  node.attrs.Set("axis", axis);
  node.attrs.Set("view", int64_t{copy_free ? 1 : 0});
  MF_RETURN_IF_ERROR(CheckAndFillAttrs(*FindOp("concat"), &node));
  MF_ASSIGN_OR_RETURN(std::vector<TensorType> types, InferNode(*out, node));
  if (target == kNoValue) {
    Value value = out->value(whole);
    value.name = name;
    value.shape = types[0].shape;
    value.role = Role::kActivation;
    value.origin.reset();
    target = out->AddValue(std::move(value));
    out->SetOriginWithin(target, whole, {0, box.h0, box.w0, 0});
  }
  if (types[0].shape != out->value(target).shape) {
    return Status::Error("split: the tiles of '" + name + "' concatenate to " +
                         ShapeString(types[0].shape) + ", not " +
                         ShapeString(out->value(target).shape) + " (internal error)");
  }
  node.outputs = {target};
  out->AddNode(std::move(node));
  return target;
}

// The band [begin, end) of `size` cut into `parts` near-equal pieces: piece `i`.
std::pair<int64_t, int64_t> Piece(int64_t size, int32_t parts, int32_t i) {
  return {size * i / parts, size * (i + 1) / parts};
}

// Between two bands with cached halos: the rows of value `v` that the next band needs and
// `tile` (the band before it) holds, copied out of `tile`'s value (so that it can die) unless
// they are all of it. Returns the bytes kept.
Result<int64_t> EmitCache(Graph* out, ValueId v, const std::string& name, const Tile& tile,
                          Tile* next) {
  const auto i = static_cast<size_t>(v);
  next->cache[i] = kNoValue;
  const Box& held = next->box[i];
  if (held.empty() || next->computed[i] == held) return 0;
  Box rows = held;
  rows.h1 = next->computed[i].empty() ? held.h1 : next->computed[i].h0;
  if (tile.holder[i] == kNoValue)
    return Status::Error("split: " + name + " has no rows in " + tile.tag + " for " + next->tag +
                         " to keep (internal error)");
  if (rows == tile.box[i]) {
    next->cache[i] = tile.holder[i];
  } else {
    MF_ASSIGN_OR_RETURN(next->cache[i], AddBoxSlice(out, tile.holder[i], tile.box[i], v, rows,
                                                    name + "/cache-" + next->tag));
    out->node(out->num_nodes() - 1).attrs.Set("view", int64_t{0});
  }
  return out->value(next->cache[i]).bytes();
}

// Per op of the region (by index): the values of the region whose holder in `tile` it is the
// last op to read (or, read by none, to set), so that the rows the next band keeps of them are
// copied out right there and the tile's copy dies early; or, with caches_at_tile_end, all of
// them at the last op.
std::vector<std::vector<ValueId>> LastUses(const Region& region, const Tile& tile) {
  std::vector<int64_t> last_op(region.inside.size(), -1);
  for (size_t i = 0; i < region.ops.size(); ++i) {
    const Node& node = *region.ops[i].node;
    if (!tile.box[static_cast<size_t>(node.outputs[0])].empty())
      last_op[static_cast<size_t>(node.outputs[0])] = static_cast<int64_t>(i);
    if (tile.computed[static_cast<size_t>(node.outputs[0])].empty()) continue;
    for (ValueId in : node.inputs) {
      if (region.inside[static_cast<size_t>(in)])
        last_op[static_cast<size_t>(in)] = static_cast<int64_t>(i);
    }
  }
  std::vector<std::vector<ValueId>> last(region.ops.size());
  for (const RegionOp& op : region.ops) {
    const ValueId v = op.node->outputs[0];
    const int64_t at = last_op[static_cast<size_t>(v)];
    if (at >= 0)
      last[region.caches_at_tile_end ? last.size() - 1 : static_cast<size_t>(at)].push_back(v);
  }
  return last;
}

// The value holding a tile's box of `op`'s output: what the tile computed, after the rows
// cached from the band before (a copying concat, which the diagonal planner may overlap with
// the computed rows).
Result<ValueId> EmitHolder(Graph* out, const Graph& graph, const Region& region, const Tile& tile,
                           const RegionOp& op, SplitStats* stats) {
  const ValueId v = op.node->outputs[0];
  const ValueId cache = tile.cache.empty() ? kNoValue : tile.cache[static_cast<size_t>(v)];
  if (tile.computed[static_cast<size_t>(v)].empty()) return cache;
  MF_ASSIGN_OR_RETURN(ValueId computed, EmitTileOp(out, graph, region, tile, op, stats));
  if (cache == kNoValue) return computed;
  const Box& held = tile.box[static_cast<size_t>(v)];
  return EmitConcat(out, {cache, computed}, kAxisH, kNoValue, v, held,
                    op.node->name + "/joined-" + tile.tag, false);
}

// Emits one tile: every op with something to compute, in region order. With `next` (the band
// below, halos cached), each value's rows `next` keeps are copied out after its last use here.
Status EmitTile(Graph* out, const Graph& graph, const Region& region, Tile* tile, Tile* next,
                SplitStats* stats) {
  const std::vector<std::vector<ValueId>> last_uses =
      next != nullptr ? LastUses(region, *tile) : std::vector<std::vector<ValueId>>();
  int64_t cached_bytes = 0;
  for (size_t i = 0; i < region.ops.size(); ++i) {
    const RegionOp& op = region.ops[i];
    const auto v = static_cast<size_t>(op.node->outputs[0]);
    if (!tile->box[v].empty()) {
      MF_ASSIGN_OR_RETURN(tile->holder[v], EmitHolder(out, graph, region, *tile, op, stats));
    }
    if (next == nullptr) continue;
    for (ValueId used : last_uses[i]) {
      const std::string& name = graph.node(graph.value(used).producer).name;
      MF_ASSIGN_OR_RETURN(const int64_t bytes, EmitCache(out, used, name, *tile, next));
      cached_bytes += bytes;
    }
  }
  stats->cache_bytes = std::max(stats->cache_bytes, cached_bytes);
  return Status::Ok();
}

// The warm-up tiles of a strip whose first tile has output rows `box`, top first: one per
// band of virtual output rows above the image whose reads still reach into it, each computing
// only the rows past the one above. They compute the first tile's rows of every value a few
// at a time, as a line-buffered pipeline fills, so that the first tile of a strip (which would
// compute every halo row from the top at once) is no heavier than the others. None when an op
// of the region reads rows above its output's (a slice from a later row): virtual rows there
// would compute rows no tile needs. `blank` makes the k-th (k = 1 is the last).
template <typename Blank>
std::vector<Tile> WarmUps(const Graph& graph, const Region& region, const Box& box, Blank blank) {
  constexpr int32_t kMaxWarmUps = 64;
  std::vector<Tile> warm_ups;
  if (std::any_of(region.ops.begin(), region.ops.end(),
                  [](const RegionOp& op) { return op.h.before < 0; }))
    return warm_ups;
  const int64_t rows = box.h1 - box.h0;
  std::vector<Box> outs;
  for (int32_t k = 1; k <= kMaxWarmUps; ++k) {
    const Box out{box.h0 - k * rows, box.h1 - k * rows, box.w0, box.w1};
    Tile probe = blank(k);
    // A warm-up whose op would compute padding rows alone (an explicit pad) reads nothing:
    // the tiles below compute those rows.
    if (!BoxesOfTile(graph, region, out, nullptr, &probe).ok() || Idle(region, probe)) break;
    outs.push_back(out);
  }
  for (size_t j = outs.size(); j-- > 0;) {
    Tile warm = blank(static_cast<int32_t>(j + 1));
    if (!BoxesOfTile(graph, region, outs[j], warm_ups.empty() ? nullptr : &warm_ups.back(), &warm)
             .ok())
      return {};
    warm_ups.push_back(std::move(warm));
  }
  return warm_ups;
}

// Emits a strip's warm-ups (WarmUps) before its first tile `first` (output rows `box`), whose
// boxes then count what they computed as cached; none when that first tile would compute
// padding rows alone.
Status EmitWarmUps(Graph* out, const Graph& graph, const Region& region, const Box& box,
                   std::vector<Tile>* warm_ups, Tile* first, SplitStats* stats) {
  if (warm_ups->empty()) return Status::Ok();
  if (!BoxesOfTile(graph, region, box, &warm_ups->back(), first).ok())
    return BoxesOfTile(graph, region, box, nullptr, first);
  for (size_t j = 0; j < warm_ups->size(); ++j) {
    Tile* next = j + 1 < warm_ups->size() ? &(*warm_ups)[j + 1] : first;
    MF_RETURN_IF_ERROR(EmitTile(out, graph, region, &(*warm_ups)[j], next, stats));
  }
  return Status::Ok();
}

// Tiles in raster order (each row of tiles concatenated along W, then the rows along H) or,
// with cached halos, strip by strip (each column of tiles along H, then the strips along W), so
// that every tile follows the one above it, whose halo rows it keeps.
Status EmitSplitStage(const Graph& graph, const Region& region, const RegionSplit& split,
                      Graph* out, SplitStats* stats) {
  const Node& tail = *region.ops.back().node;
  const ValueId target = tail.outputs[0];
  const Value& whole = graph.value(target);
  const int64_t height = whole.shape[kAxisH], width = whole.shape[kAxisW];
  const auto values = static_cast<size_t>(graph.num_values());
  const bool strips = split.cache_halos;
  const int32_t lines = strips ? split.cols : split.rows;
  const int32_t steps = strips ? split.rows : split.cols;
  const auto fresh_tile = [&](int32_t step, int32_t line) {
    Tile tile;
    const int32_t r = strips ? step : line, c = strips ? line : step;
    tile.tag = "tile" + std::to_string(r * split.cols + c);
    tile.need.assign(values, {});
    tile.box.assign(values, {});
    tile.computed.assign(values, {});
    tile.holder.assign(values, kNoValue);
    if (strips) tile.cache.assign(values, kNoValue);
    const auto [h0, h1] = Piece(height, split.rows, r);
    const auto [w0, w1] = Piece(width, split.cols, c);
    return std::make_pair(std::move(tile), Box{h0, h1, w0, w1});
  };
  std::vector<ValueId> line_values;
  for (int32_t line = 0; line < lines; ++line) {
    std::vector<ValueId> pieces;
    auto [tile, box] = fresh_tile(0, line);
    MF_RETURN_IF_ERROR(BoxesOfTile(graph, region, box, nullptr, &tile));
    if (strips && split.warm_ups) {
      std::vector<Tile> warm_ups = WarmUps(graph, region, box, [&](int32_t k) {
        Tile warm = fresh_tile(0, line).first;
        warm.tag = "warm" + std::to_string(k) + "." + std::to_string(line);
        return warm;
      });
      MF_RETURN_IF_ERROR(EmitWarmUps(out, graph, region, box, &warm_ups, &tile, stats));
    }
    for (int32_t step = 0; step < steps; ++step) {
      std::optional<Tile> next;
      if (strips && step + 1 < steps) {
        auto [below, below_box] = fresh_tile(step + 1, line);
        MF_RETURN_IF_ERROR(BoxesOfTile(graph, region, below_box, &tile, &below));
        next = std::move(below);
      }
      MF_RETURN_IF_ERROR(EmitTile(out, graph, region, &tile, next ? &*next : nullptr, stats));
      pieces.push_back(tile.holder[static_cast<size_t>(target)]);
      if (next) {
        tile = std::move(*next);
      } else if (step + 1 < steps) {
        std::tie(tile, box) = fresh_tile(step + 1, line);
        MF_RETURN_IF_ERROR(BoxesOfTile(graph, region, box, nullptr, &tile));
      }
    }
    if (pieces.size() == 1) {
      line_values.push_back(pieces[0]);
      continue;
    }
    const auto [a0, a1] = Piece(strips ? width : height, lines, line);
    const Box box_of_line = strips ? Box{0, height, a0, a1} : Box{a0, a1, 0, width};
    const std::string name = tail.name + (strips ? "/strip" : "/row") + std::to_string(line);
    // Strips of cached tiles are written in place (tiles in rows of the output, which is then
    // live from the first tile on) or copied into their rows of it when each strip is done.
    const bool view = split.copy_free_concat && (!strips || split.strips_in_place);
    MF_ASSIGN_OR_RETURN(ValueId joined, EmitConcat(out, pieces, strips ? kAxisH : kAxisW, kNoValue,
                                                   target, box_of_line, name, view));
    line_values.push_back(joined);
  }
  return EmitConcat(out, line_values, strips ? kAxisW : kAxisH, target, target, WholeBox(whole),
                    tail.name + "/concat", split.copy_free_concat)
      .status();
}

// Node id -> schedule position.
std::vector<int32_t> PositionsOf(const Graph& graph) {
  std::vector<int32_t> position(static_cast<size_t>(graph.num_nodes()), -1);
  for (size_t pos = 0; pos < graph.schedule.size(); ++pos)
    position[static_cast<size_t>(graph.schedule[pos])] = static_cast<int32_t>(pos);
  return position;
}

// Every value an op of first..last-1 produces is read only inside the region and is no graph
// output.
Status CheckPrivate(const Graph& graph, const std::vector<std::vector<NodeId>>& consumers,
                    const std::vector<int32_t>& position, int32_t first, int32_t last) {
  for (int32_t pos = first; pos < last; ++pos) {
    const ValueId v = graph.node(graph.schedule[static_cast<size_t>(pos)]).outputs[0];
    bool private_value =
        std::find(graph.outputs.begin(), graph.outputs.end(), v) == graph.outputs.end();
    for (NodeId reader : consumers[static_cast<size_t>(v)]) {
      const int32_t at = position[static_cast<size_t>(reader)];
      private_value = private_value && at > pos && at <= last;
    }
    if (!private_value) {
      return Status::Error(NodeLabel(graph, pos) +
                           " output is read outside the region (only the last operator's may be)");
    }
  }
  return Status::Ok();
}

}  // namespace

RegionChecker::RegionChecker(const Graph& graph)
    : graph_(graph), consumers_(graph.Consumers()), position_(PositionsOf(graph)) {}

Status RegionChecker::Op(int32_t position) const { return CheckRegionOp(graph_, position); }

Status RegionChecker::Bounds(int32_t first, int32_t last) const {
  if (IsSlice(graph_.node(graph_.schedule[static_cast<size_t>(last)])))
    return Status::Error(NodeLabel(graph_, last) + ": a region cannot end with a slice");
  return CheckPrivate(graph_, consumers_, position_, first, last);
}

Status RegionChecker::Check(int32_t first, int32_t last) const {
  const auto size = static_cast<int32_t>(graph_.schedule.size());
  if (first < 0 || last < first || last >= size) {
    return Status::Error("split: region " + std::to_string(first) + ".." + std::to_string(last) +
                         " is not inside the schedule of " + std::to_string(size) + " operators");
  }
  for (int32_t pos = first; pos <= last; ++pos) MF_RETURN_IF_ERROR(Op(pos));
  return Bounds(first, last);
}

Status CheckRegion(const Graph& graph, int32_t first, int32_t last) {
  return RegionChecker(graph).Check(first, last);
}

Result<Graph> SplitRegion(const Graph& graph, const RegionSplit& split, SplitStats* stats) {
  MF_RETURN_IF_ERROR(CheckRegion(graph, split.first, split.last));
  Region region;
  region.inside.assign(static_cast<size_t>(graph.num_values()), 0);
  region.caches_at_tile_end = split.caches_at_tile_end;
  double original_flops = 0;
  int64_t original_elements = 0;
  for (int32_t pos = split.first; pos <= split.last; ++pos) {
    const Node& node = graph.node(graph.schedule[static_cast<size_t>(pos)]);
    MF_ASSIGN_OR_RETURN(RegionOp op, RegionOpOf(graph, node));
    region.ops.push_back(op);
    region.inside[static_cast<size_t>(node.outputs[0])] = 1;
    if (op.kind == TileKind::kSlice) continue;  // tiles read their boxes; no extra work
    original_flops += NodeCost(graph, node).flops;
    original_elements += graph.value(node.outputs[0]).elements();
  }
  const Node& tail = *region.ops.back().node;
  const Shape& out_shape = graph.value(tail.outputs[0]).shape;
  if (split.rows < 1 || split.rows > out_shape[kAxisH] || split.cols < 1 ||
      split.cols > out_shape[kAxisW]) {
    return Status::Error(
        "split: " + std::to_string(split.rows) + "x" + std::to_string(split.cols) + " tiles for '" +
        tail.name + "', which is " + std::to_string(out_shape[kAxisH]) + "x" +
        std::to_string(out_shape[kAxisW]) + "; use 1.." + std::to_string(out_shape[kAxisH]) +
        " x 1.." + std::to_string(out_shape[kAxisW]));
  }
  SplitStats local;
  Graph out = CopyValues(graph);
  for (int32_t pos = 0; pos < static_cast<int32_t>(graph.schedule.size()); ++pos) {
    if (pos == split.first) {
      local.first_position = static_cast<int32_t>(out.schedule.size());
      MF_RETURN_IF_ERROR(EmitSplitStage(graph, region, split, &out, &local));
      local.last_position = static_cast<int32_t>(out.schedule.size()) - 1;
    }
    if (pos < split.first || pos > split.last)
      out.AddNode(graph.node(graph.schedule[static_cast<size_t>(pos)]));
  }
  local.output = tail.outputs[0];
  local.extra_flops -= original_flops;
  local.duplicated_elements -= original_elements;
  if (stats != nullptr) *stats = local;
  return out;
}

// Channel splitting.
namespace {

// Whether `node` averages a rank-4 NHWC input over H and W alone (a global average pool as a
// converter or an ONNX exporter writes it: MEAN, ReduceMean, GlobalAveragePool), so that each
// output channel comes from its input channel; keepdims or not, the channels are last.
bool IsSpatialMean(const Graph& graph, const Node& node) {
  if (node.op != "mean" || node.inputs.size() != 1 || graph.value(node.inputs[0]).shape.size() != 4)
    return false;
  std::vector<int64_t> axes = node.attrs.Ints("axes");
  for (int64_t& axis : axes) axis = axis < 0 ? axis + 4 : axis;
  std::sort(axes.begin(), axes.end());
  return axes == std::vector<int64_t>{1, 2};
}

// Whether `node` computes each output channel from the same input channel alone: pools, spatial
// means, depthwise convolutions of multiplier 1 and unary elementwise ops.
bool IsPerChannel(const Graph& graph, const Node& node) {
  if (IsSpatialMean(graph, node)) return true;
  const TileRule rule = RulesOf(node).tile;
  if (rule == TileRule::kPoolWindow) return true;
  if (rule == TileRule::kUnary && node.inputs.size() == 1) return true;
  return node.op == "depthwise_conv2d" && node.attrs.Int("multiplier") == 1;
}

// A new constant holding [begin, begin + size) of constant `v` along `axis`, its per-channel
// quantisation sliced with it (an error when it runs along another axis).
Result<ValueId> SliceConstant(Graph* out, ValueId v, size_t axis, int64_t begin, int64_t size) {
  Value value = out->value(v);
  const int64_t element = ElementBytes(value.dtype);
  if (element == 0 || axis >= value.shape.size())
    return Status::Error("split: constant '" + value.name + "' cannot be sliced by channel");
  int64_t inner = element, outer = 1;
  for (size_t k = axis + 1; k < value.shape.size(); ++k) inner *= value.shape[k];
  for (size_t k = 0; k < axis; ++k) outer *= value.shape[k];
  const int64_t stride = value.shape[axis] * inner;
  auto data = std::make_shared<Bytes>();
  data->reserve(static_cast<size_t>(outer * size * inner));
  for (int64_t o = 0; o < outer; ++o) {
    const auto from = value.data->begin() + o * stride + begin * inner;
    data->insert(data->end(), from, from + size * inner);
  }
  if (value.quant && value.quant->per_channel() && static_cast<size_t>(value.quant->axis) != axis) {
    return Status::Error("split: constant '" + value.name +
                         "' is quantised per channel along another axis than its channels");
  }
  if (value.quant && value.quant->per_channel()) {
    Quantization& q = *value.quant;
    q.scale.assign(q.scale.begin() + begin, q.scale.begin() + begin + size);
    q.zero_point.assign(q.zero_point.begin() + begin, q.zero_point.begin() + begin + size);
  }
  value.shape[axis] = size;
  value.name += "/ch" + std::to_string(begin);
  value.data = std::move(data);
  value.producer = kNoNode;
  value.origin.reset();
  return out->AddValue(std::move(value));
}

// The constant inputs of a channel group's copy of `node`: filters and biases cut to channels
// [begin, begin + size) (conv2d filters are OHWI, depthwise ones 1HWC; biases are per channel).
Result<std::vector<ValueId>> GroupConstants(Graph* out, const Node& node, int64_t begin,
                                            int64_t size) {
  std::vector<ValueId> inputs;
  const size_t filter_axis = node.op == "conv2d" ? 0 : 3;
  for (size_t k = 1; k < node.inputs.size(); ++k) {
    if (node.inputs[k] == kNoValue) {
      inputs.push_back(kNoValue);
      continue;
    }
    MF_ASSIGN_OR_RETURN(ValueId sliced,
                        SliceConstant(out, node.inputs[k], k == 1 ? filter_axis : 0, begin, size));
    inputs.push_back(sliced);
  }
  return inputs;
}

// Channels [begin, begin + size) of every op of the region, in order; returns the last output.
Result<ValueId> EmitChannelGroup(const Graph& graph, const ChannelSplit& split, int64_t begin,
                                 int64_t size, int32_t group, Graph* out, SplitStats* stats) {
  ValueId x = kNoValue;
  for (int32_t pos = split.first; pos <= split.last; ++pos) {
    const Node& node = graph.node(graph.schedule[static_cast<size_t>(pos)]);
    std::vector<ValueId> inputs = {pos == split.first ? node.inputs[0] : x};
    if (node.inputs.size() > 1) {
      MF_ASSIGN_OR_RETURN(std::vector<ValueId> constants, GroupConstants(out, node, begin, size));
      inputs.insert(inputs.end(), constants.begin(), constants.end());
    }
    MF_ASSIGN_OR_RETURN(x, AddLike(out, node, node.outputs[0], std::move(inputs), node.attrs,
                                   node.name + "/ch" + std::to_string(group)));
    Shape at(out->value(x).shape.size(), 0);  // channels last, whatever the rank
    at.back() = begin;
    out->SetOriginWithin(x, node.outputs[0], at);
    stats->extra_flops += NodeCost(*out, out->node(out->num_nodes() - 1)).flops;
    if (pos != split.last)
      stats->max_tile_bytes = std::max(stats->max_tile_bytes, out->value(x).bytes());
  }
  return x;
}

}  // namespace

Status RegionChecker::Channels(int32_t first, int32_t last) const {
  const auto size = static_cast<int32_t>(graph_.schedule.size());
  if (first < 0 || last >= size || first > last)
    return Status::Error("split: positions " + std::to_string(first) + ".." + std::to_string(last) +
                         " are not inside the schedule");
  for (int32_t pos = first; pos <= last; ++pos) {
    const Node& node = graph_.node(graph_.schedule[static_cast<size_t>(pos)]);
    const bool ok =
        pos == first
            ? node.op == "conv2d"
            : IsPerChannel(graph_, node) &&
                  node.inputs[0] ==
                      graph_.node(graph_.schedule[static_cast<size_t>(pos - 1)]).outputs[0];
    if (!ok)
      return Status::Error(NodeLabel(graph_, pos) +
                           (pos == first ? " is not a conv2d: channel groups start with one"
                                         : " does not act on each channel of the op before alone"));
    if (!IsSpatialMean(graph_, node)) MF_RETURN_IF_ERROR(Op(pos));  // NHWC batch 1
  }
  return Bounds(first, last);  // one output, read after the region
}

Status CheckChannelRegion(const Graph& graph, int32_t first, int32_t last) {
  return RegionChecker(graph).Channels(first, last);
}

Result<Graph> SplitChannels(const Graph& graph, const ChannelSplit& split, SplitStats* stats) {
  MF_RETURN_IF_ERROR(CheckChannelRegion(graph, split.first, split.last));
  const Node& tail = graph.node(graph.schedule[static_cast<size_t>(split.last)]);
  const Shape& joined = graph.value(tail.outputs[0]).shape;
  const int64_t channels = joined.back();
  if (split.groups < 2 || split.groups > channels)
    return Status::Error("split: " + std::to_string(split.groups) + " channel groups of '" +
                         tail.name + "', which has " + std::to_string(channels) +
                         " channels; use 2.." + std::to_string(channels));
  SplitStats local;
  Graph out = CopyValues(graph);
  for (int32_t pos = 0; pos < static_cast<int32_t>(graph.schedule.size()); ++pos) {
    if (pos == split.first) {
      local.first_position = static_cast<int32_t>(out.schedule.size());
      std::vector<ValueId> parts;
      for (int32_t g = 0; g < split.groups; ++g) {
        const auto [begin, end] = Piece(channels, split.groups, g);
        MF_ASSIGN_OR_RETURN(ValueId part,
                            EmitChannelGroup(graph, split, begin, end - begin, g, &out, &local));
        parts.push_back(part);
      }
      MF_RETURN_IF_ERROR(EmitConcat(&out, parts, static_cast<int64_t>(joined.size()) - 1,
                                    tail.outputs[0], tail.outputs[0], Box{}, tail.name + "/join",
                                    false)
                             .status());
      local.last_position = static_cast<int32_t>(out.schedule.size()) - 1;
    }
    if (pos < split.first || pos > split.last)
      out.AddNode(graph.node(graph.schedule[static_cast<size_t>(pos)]));
  }
  for (int32_t pos = split.first; pos <= split.last; ++pos)
    local.extra_flops -=
        NodeCost(graph, graph.node(graph.schedule[static_cast<size_t>(pos)])).flops;
  local.output = tail.outputs[0];
  if (stats != nullptr) *stats = local;
  return out;
}

}  // namespace memfold

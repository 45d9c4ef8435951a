#include "memfold/passes/split.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

#include "memfold/ops/registry.h"
#include "memfold/ops/window.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {
namespace {

constexpr int64_t kAxisH = 1;

bool IsWindowOp(std::string_view op) {
  return op == "conv2d" || op == "depthwise_conv2d" || op == "max_pool2d" || op == "avg_pool2d";
}

bool IsUnaryElementwise(std::string_view op) {
  return op == "relu" || op == "relu6" || op == "tanh" || op == "sigmoid" || op == "exp" ||
         op == "neg" || op == "hard_swish";
}

// How one op maps output rows to input rows: out row r reads input rows
// [r * stride - pad_top, r * stride - pad_top + extent). Elementwise ops are 1x1 windows.
struct RowMap {
  int64_t extent = 1;  // (k_h - 1) * dilation + 1
  int64_t stride = 1;
  int64_t pad_top = 0;
  int64_t pad_left = 0;
  int64_t pad_right = 0;
  bool window = false;
};

Result<RowMap> RowMapOf(const Graph& graph, const Node& node) {
  RowMap map;
  if (!IsWindowOp(node.op)) return map;
  const Shape& in = graph.value(node.inputs[0]).shape;
  int64_t k_h = 0, k_w = 0;
  if (node.op == "conv2d" || node.op == "depthwise_conv2d") {
    const Shape& filter = graph.value(node.inputs[1]).shape;  // [O or 1, kh, kw, I or C]
    k_h = filter[1];
    k_w = filter[2];
  } else {
    k_h = node.attrs.Ints("filter")[0];
    k_w = node.attrs.Ints("filter")[1];
  }
  MF_ASSIGN_OR_RETURN(Window2D w, ComputeWindow(node.attrs, in[1], in[2], k_h, k_w));
  map.window = true;
  map.extent = (w.k_h - 1) * w.dil_h + 1;
  map.stride = w.stride_h;
  map.pad_top = w.pad_top;
  map.pad_left = w.pad_left;
  const int64_t extent_w = (w.k_w - 1) * w.dil_w + 1;
  map.pad_right = std::max<int64_t>(0, (w.out_w - 1) * w.stride_w + extent_w - w.in_w - w.pad_left);
  return map;
}

bool IsBatchOneNhwc(const Value& value) { return value.shape.size() == 4 && value.shape[0] == 1; }

std::string NodeLabel(const Graph& graph, int32_t position) {
  const Node& node = graph.node(graph.schedule[static_cast<size_t>(position)]);
  return "operator " + std::to_string(position) + " '" + node.name + "' (" + node.op + ")";
}

Status CheckChainOp(const Graph& graph, int32_t position) {
  const Node& node = graph.node(graph.schedule[static_cast<size_t>(position)]);
  const std::string label = NodeLabel(graph, position);
  if (!IsWindowOp(node.op) && !IsUnaryElementwise(node.op)) {
    return Status::Error(
        label +
        " cannot be split: only conv2d, depthwise_conv2d, pools and unary elementwise ops can");
  }
  if (node.outputs.size() != 1 || node.inputs.empty() || node.inputs[0] == kNoValue) {
    return Status::Error(label + " needs one activation input and one output to be split");
  }
  if (!IsBatchOneNhwc(graph.value(node.inputs[0])) ||
      !IsBatchOneNhwc(graph.value(node.outputs[0]))) {
    return Status::Error(label + " is not on rank-4 batch-1 NHWC tensors");
  }
  for (size_t k = 1; k < node.inputs.size(); ++k) {
    if (node.inputs[k] != kNoValue && !graph.value(node.inputs[k]).is_constant()) {
      return Status::Error(label + " input " + std::to_string(k) + " is not a constant");
    }
  }
  return Status::Ok();
}

// The value between chain positions `position` and `position + 1` must be private to the chain.
Status CheckLink(const Graph& graph, const std::vector<std::vector<NodeId>>& consumers,
                 int32_t position) {
  const NodeId id = graph.schedule[static_cast<size_t>(position)];
  const NodeId next = graph.schedule[static_cast<size_t>(position) + 1];
  const ValueId link = graph.node(id).outputs[0];
  const bool output =
      std::find(graph.outputs.begin(), graph.outputs.end(), link) != graph.outputs.end();
  const auto& readers = consumers[static_cast<size_t>(link)];
  if (output || readers.size() != 1 || readers[0] != next || graph.node(next).inputs[0] != link) {
    return Status::Error(NodeLabel(graph, position) +
                         " output is read by more than the next operator of the chain");
  }
  return Status::Ok();
}

// Rows of every chain op's output and input for one band, worked backwards from the chain's
// last output rows [begin, end).
struct BandRows {
  int64_t in_begin = 0, in_end = 0;  // rows of the op's input the band reads
  int64_t pad_top = 0, pad_bottom = 0;
};

Result<std::vector<BandRows>> RowsOfBand(const Graph& graph, const std::vector<const Node*>& chain,
                                         const std::vector<RowMap>& maps, int64_t begin,
                                         int64_t end) {
  std::vector<BandRows> rows(chain.size());
  for (size_t i = chain.size(); i-- > 0;) {
    const RowMap& map = maps[i];
    const int64_t in_h = graph.value(chain[i]->inputs[0]).shape[kAxisH];
    const int64_t lo = begin * map.stride - map.pad_top;
    const int64_t hi = (end - 1) * map.stride - map.pad_top + map.extent;
    BandRows& r = rows[i];
    r.in_begin = std::max<int64_t>(lo, 0);
    r.in_end = std::min(hi, in_h);
    r.pad_top = r.in_begin - lo;
    r.pad_bottom = hi - r.in_end;
    if (r.in_end <= r.in_begin) {
      return Status::Error("'" + chain[i]->name + "': a band of " + std::to_string(end - begin) +
                           " output rows reads no input row; use fewer tiles");
    }
    begin = r.in_begin;
    end = r.in_end;
  }
  return rows;
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

Result<ValueId> AddRowSlice(Graph* out, ValueId source, const BandRows& rows,
                            const std::string& name) {
  const Shape& shape = out->value(source).shape;
  Attrs attrs;
  attrs.Set("begin", std::vector<int64_t>{0, rows.in_begin, 0, 0});
  attrs.Set("size", std::vector<int64_t>{1, rows.in_end - rows.in_begin, shape[2], shape[3]});
  attrs.Set("view", int64_t{1});
  MF_ASSIGN_OR_RETURN(std::vector<ValueId> outputs,
                      AddOp(out, "slice", {source}, std::move(attrs), name));
  out->value(outputs[0]).quant = out->value(source).quant;
  out->SetOriginWithin(outputs[0], source, {0, rows.in_begin, 0, 0});
  return outputs[0];
}

struct ChainView {
  std::vector<const Node*> nodes;
  std::vector<RowMap> maps;
};

// Emits one band: the slice of the chain's input, then a copy of every op on the band, each
// band value recorded as the rows of the unsplit value it holds (`first_row`: the band's first
// row of the chain's output).
Result<ValueId> EmitBand(Graph* out, const ChainView& chain, const std::vector<BandRows>& rows,
                         int32_t band, int64_t first_row, SplitStats* stats) {
  const Node& head = *chain.nodes.front();
  const std::string suffix = "/band" + std::to_string(band);
  MF_ASSIGN_OR_RETURN(ValueId x, AddRowSlice(out, head.inputs[0], rows.front(),
                                             head.name + "/rows" + std::to_string(band)));
  for (size_t i = 0; i < chain.nodes.size(); ++i) {
    const Node& original = *chain.nodes[i];
    Attrs attrs = original.attrs;
    if (chain.maps[i].window) {
      attrs.Set("padding", std::string("explicit"));
      attrs.Set("pads", std::vector<int64_t>{rows[i].pad_top, rows[i].pad_bottom,
                                             chain.maps[i].pad_left, chain.maps[i].pad_right});
    }
    std::vector<ValueId> inputs = original.inputs;
    inputs[0] = x;
    MF_ASSIGN_OR_RETURN(x, AddLike(out, original, original.outputs[0], std::move(inputs),
                                   std::move(attrs), original.name + suffix));
    const int64_t row = i + 1 < chain.nodes.size() ? rows[i + 1].in_begin : first_row;
    out->SetOriginWithin(x, original.outputs[0], {0, row, 0, 0});
    const Node& copy = out->node(out->num_nodes() - 1);
    stats->extra_flops += NodeCost(*out, copy).flops;
    stats->duplicated_elements += out->value(x).elements();
    if (i + 1 < chain.nodes.size())
      stats->max_tile_bytes = std::max(stats->max_tile_bytes, out->value(x).bytes());
  }
  return x;
}

// The concat of the bands, writing the chain's original output value.
Status EmitConcat(Graph* out, const std::vector<ValueId>& bands, ValueId target,
                  const std::string& name, bool copy_free) {
  Node node;
  node.op = "concat";
  node.name = name;
  node.inputs = bands;
  node.outputs = {target};
  node.attrs.Set("axis", kAxisH);
  node.attrs.Set("view", int64_t{copy_free ? 1 : 0});
  MF_RETURN_IF_ERROR(CheckAndFillAttrs(*FindOp("concat"), &node));
  MF_ASSIGN_OR_RETURN(std::vector<TensorType> types, InferNode(*out, node));
  const Value& expected = out->value(target);
  if (types[0].shape != expected.shape) {
    return Status::Error("split: the bands of '" + name + "' concatenate to " +
                         ShapeString(types[0].shape) + ", not " + ShapeString(expected.shape) +
                         " (internal error)");
  }
  out->AddNode(std::move(node));
  return Status::Ok();
}

Status EmitSplitStage(const Graph& graph, const ChainView& chain, const ChainSplit& split,
                      Graph* out, SplitStats* stats) {
  const int32_t tiles = split.tiles;
  const Node& tail = *chain.nodes.back();
  const ValueId target = tail.outputs[0];
  const int64_t rows = graph.value(target).shape[kAxisH];
  std::vector<ValueId> bands;
  for (int32_t t = 0; t < tiles; ++t) {
    const int64_t begin = rows * t / tiles;
    const int64_t end = rows * (t + 1) / tiles;
    MF_ASSIGN_OR_RETURN(std::vector<BandRows> band_rows,
                        RowsOfBand(graph, chain.nodes, chain.maps, begin, end));
    MF_ASSIGN_OR_RETURN(ValueId band, EmitBand(out, chain, band_rows, t, begin, stats));
    if (out->value(band).shape[kAxisH] != end - begin) {
      return Status::Error("split: band " + std::to_string(t) + " of '" + tail.name +
                           "' has the wrong height (internal error)");
    }
    bands.push_back(band);
  }
  return EmitConcat(out, bands, target, tail.name + "/concat", split.copy_free_concat);
}

}  // namespace

Status CheckChain(const Graph& graph, int32_t first, int32_t last) {
  const auto size = static_cast<int32_t>(graph.schedule.size());
  if (first < 0 || last < first || last >= size) {
    return Status::Error("split: chain " + std::to_string(first) + ".." + std::to_string(last) +
                         " is not inside the schedule of " + std::to_string(size) + " operators");
  }
  for (int32_t pos = first; pos <= last; ++pos) MF_RETURN_IF_ERROR(CheckChainOp(graph, pos));
  if (first == last) return Status::Ok();
  const std::vector<std::vector<NodeId>> consumers = graph.Consumers();
  for (int32_t pos = first; pos < last; ++pos) MF_RETURN_IF_ERROR(CheckLink(graph, consumers, pos));
  return Status::Ok();
}

Result<Graph> SplitChain(const Graph& graph, const ChainSplit& split, SplitStats* stats) {
  MF_RETURN_IF_ERROR(CheckChain(graph, split.first, split.last));
  ChainView chain;
  double original_flops = 0;
  int64_t original_elements = 0;
  for (int32_t pos = split.first; pos <= split.last; ++pos) {
    const Node& node = graph.node(graph.schedule[static_cast<size_t>(pos)]);
    chain.nodes.push_back(&node);
    MF_ASSIGN_OR_RETURN(RowMap map, RowMapOf(graph, node));
    chain.maps.push_back(map);
    original_flops += NodeCost(graph, node).flops;
    original_elements += graph.value(node.outputs[0]).elements();
  }
  const int64_t rows = graph.value(chain.nodes.back()->outputs[0]).shape[kAxisH];
  if (split.tiles < 1 || split.tiles > rows) {
    return Status::Error("split: " + std::to_string(split.tiles) + " tiles for '" +
                         chain.nodes.back()->name + "', which has " + std::to_string(rows) +
                         " rows; use 1.." + std::to_string(rows));
  }
  SplitStats local;
  Graph out = CopyValues(graph);
  for (int32_t pos = 0; pos < static_cast<int32_t>(graph.schedule.size()); ++pos) {
    if (pos == split.first) {
      local.first_position = static_cast<int32_t>(out.schedule.size());
      MF_RETURN_IF_ERROR(EmitSplitStage(graph, chain, split, &out, &local));
      local.last_position = static_cast<int32_t>(out.schedule.size()) - 1;
    }
    if (pos < split.first || pos > split.last)
      out.AddNode(graph.node(graph.schedule[static_cast<size_t>(pos)]));
  }
  local.output = chain.nodes.back()->outputs[0];
  local.extra_flops -= original_flops;
  local.duplicated_elements -= original_elements;
  if (stats != nullptr) *stats = local;
  return out;
}

namespace {

double TotalFlops(const Graph& graph) {
  double total = 0;
  for (NodeId id : graph.schedule) {
    if (OpOf(graph.node(id)) != nullptr) total += NodeCost(graph, graph.node(id)).flops;
  }
  return total;
}

// Chains of up to `max_ops` operators that contain a position next to the peak operator.
std::vector<std::pair<int32_t, int32_t>> ChainsNearPeak(const Graph& graph, int32_t peak_position,
                                                        int32_t max_ops) {
  std::vector<std::pair<int32_t, int32_t>> chains;
  const auto size = static_cast<int32_t>(graph.schedule.size());
  const int32_t lo = std::max(0, peak_position - max_ops),
                hi = std::min(size - 1, peak_position + max_ops);
  for (int32_t first = lo; first <= hi; ++first) {
    for (int32_t last = first; last <= hi && last - first < max_ops; ++last) {
      if (last < peak_position - 1 || first > peak_position + 1) continue;
      if (!CheckChain(graph, first, last).ok()) break;  // longer chains from `first` fail too
      chains.emplace_back(first, last);
    }
  }
  return chains;
}

struct Candidate {
  Graph graph;
  SplitStage stage;
  int64_t search_arena = 0;  // planned with the search's overlap source
  int64_t stage_peak = 0;    // most payload bytes live while the split stage runs
};

// The most payload bytes live at any time of the split stage (positions of `stats`).
int64_t StagePeak(const GraphPlan& plan, const SplitStats& stats) {
  const std::vector<int64_t> live = LiveBytesPerStep(plan.liveness);
  int64_t peak = 0;
  for (int32_t pos = stats.first_position; pos <= stats.last_position; ++pos) {
    peak = std::max(peak, live[static_cast<size_t>(NodeTime(static_cast<size_t>(pos)))]);
  }
  return peak;
}

// Tile counts past the best one for a chain that may still improve on it before the chain is
// abandoned (the arena falls with the band size, then flattens or grows with the halo).
constexpr int32_t kTilePatience = 3;

// Candidates of one round kept for re-planning with exact overlaps: the search ranks by the
// cheaper closed-form overlaps, which may order close candidates differently.
constexpr size_t kFinalists = 4;

// Smaller arena first; among equal arenas (the peak now lies elsewhere) the split that leaves
// its own stage lowest, so that a later round, lowering that other peak, does not find this
// stage in the way; then fewer extra FLOPs.
// How a round ranks candidate splits: by the arena of the placement heuristics, or by the
// overlap-aware lower bound. The heuristics scatter around the bound on split graphs (which the
// refined plan of a winner then reaches or nears), so a split the heuristics place badly may
// still be the one to take; neither ranking finds the better sequence of rounds every time.
enum class SplitRanking { kArena, kLowerBound };

// Where a round looks for chains: around the peak of the heuristics' plan, or of the refined
// exact plan (the heuristics' peak may be a placement accident).
enum class PeakSource { kHeuristic, kRefined };

int64_t SearchKey(const GraphPlan& plan, SplitRanking ranking) {
  return ranking == SplitRanking::kArena ? plan.plan.arena_bytes : plan.lower_bound;
}

bool Ranks(const Candidate& a, const Candidate& b) {
  if (a.search_arena != b.search_arena) return a.search_arena < b.search_arena;
  if (a.stage_peak != b.stage_peak) return a.stage_peak < b.stage_peak;
  return a.stage.stats.extra_flops < b.stage.stats.extra_flops;
}

// Keeps `candidate` if it ranks among the best kFinalists, best first.
void Offer(Candidate candidate, std::vector<Candidate>* best) {
  if (best->size() == kFinalists && !Ranks(candidate, best->back())) return;
  if (best->size() == kFinalists) best->pop_back();
  const auto at = std::upper_bound(best->begin(), best->end(), candidate, Ranks);
  best->insert(at, std::move(candidate));
}

// The best splits of one round by the search's arenas, best first: those below `bar`.
Result<std::vector<Candidate>> BestSplits(const Graph& graph, int32_t peak_position, int64_t bar,
                                          double flops_left, const SplitOptions& options,
                                          SplitRanking ranking, int32_t* planned) {
  std::vector<Candidate> best;
  for (const auto& [first, last] : ChainsNearPeak(graph, peak_position, options.max_chain_ops)) {
    int64_t chain_best = std::numeric_limits<int64_t>::max();
    int32_t since_chain_best = 0;
    for (int32_t tiles = options.min_tiles;
         tiles <= options.max_tiles && since_chain_best < kTilePatience; ++tiles) {
      int64_t tiles_best = std::numeric_limits<int64_t>::max();
      for (const bool copy_free : {true, false}) {
        const ChainSplit split{first, last, tiles, copy_free};
        SplitStats stats;
        Result<Graph> graph_split = SplitChain(graph, split, &stats);
        if (!graph_split.ok() || stats.extra_flops > flops_left) break;
        MF_ASSIGN_OR_RETURN(GraphPlan plan, PlanGraph(*graph_split, options.planner,
                                                      {.overlaps = options.search_overlaps}));
        ++*planned;
        const int64_t arena = SearchKey(plan, ranking);
        tiles_best = std::min(tiles_best, arena);
        if (arena >= bar) continue;
        SplitStage stage{.split = split, .stats = stats};
        for (int32_t pos = first; pos <= last; ++pos) {
          stage.ops.push_back(graph.node(graph.schedule[static_cast<size_t>(pos)]).name);
        }
        const int64_t stage_peak = StagePeak(plan, stats);
        Offer(Candidate{std::move(*graph_split), std::move(stage), arena, stage_peak}, &best);
      }
      if (tiles_best == std::numeric_limits<int64_t>::max()) break;  // over budget: more tiles too
      since_chain_best = tiles_best < chain_best ? 0 : since_chain_best + 1;
      chain_best = std::min(chain_best, tiles_best);
    }
  }
  return best;
}

// Rounds of splitting around the moving peak, candidates ranked by `ranking`; `plan` is the
// input graph's refined plan.
Result<SplitResult> SplitRounds(const Graph& graph, const GraphPlan& plan,
                                const SplitOptions& options, SplitRanking ranking,
                                PeakSource peaks) {
  MF_ASSIGN_OR_RETURN(GraphPlan search_plan,
                      PlanGraph(graph, options.planner, {.overlaps = options.search_overlaps}));
  SplitResult result;
  result.graph = graph;
  result.arena_before = result.arena_after = plan.plan.arena_bytes;
  result.total_flops = TotalFlops(graph);
  const double budget = options.max_recompute * result.total_flops;
  int64_t bar = SearchKey(search_plan, ranking);
  const bool refined_peaks = peaks == PeakSource::kRefined;
  int32_t peak_position = std::max(0, (refined_peaks ? plan : search_plan).peak_time - 1);
  for (int32_t round = 0; round < options.max_rounds; ++round) {
    MF_ASSIGN_OR_RETURN(std::vector<Candidate> finalists,
                        BestSplits(result.graph, peak_position, bar, budget - result.extra_flops,
                                   options, ranking, &result.candidates_planned));
    // The first finalist whose refined plan with exact overlaps is smaller too wins the round.
    std::optional<Candidate> best;
    int32_t best_peak_time = 0;
    for (Candidate& candidate : finalists) {
      MF_ASSIGN_OR_RETURN(GraphPlan exact,
                          PlanGraph(candidate.graph, options.planner, {.refine = true}));
      if (exact.plan.arena_bytes < result.arena_after) {
        candidate.stage.arena_bytes = exact.plan.arena_bytes;
        best_peak_time = exact.peak_time;
        best = std::move(candidate);
        break;
      }
    }
    if (!best) break;
    MF_ASSIGN_OR_RETURN(GraphPlan searched, PlanGraph(best->graph, options.planner,
                                                      {.overlaps = options.search_overlaps}));
    result.arena_after = best->stage.arena_bytes;
    bar = SearchKey(searched, ranking);
    peak_position = std::max(0, (refined_peaks ? best_peak_time : searched.peak_time) - 1);
    result.extra_flops += best->stage.stats.extra_flops;
    result.duplicated_elements += best->stage.stats.duplicated_elements;
    result.stages.push_back(std::move(best->stage));
    result.graph = std::move(best->graph);
  }
  return result;
}

}  // namespace

Result<SplitResult> SplitForMemory(const Graph& graph, const SplitOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  MF_ASSIGN_OR_RETURN(GraphPlan plan, PlanGraph(graph, options.planner, {.refine = true}));
  // A small portfolio of round strategies; none finds the better sequence of splits every
  // time, the smallest result (then the fewest extra FLOPs) is kept.
  std::optional<SplitResult> best;
  int32_t planned = 0;
  for (const auto& [ranking, peaks] :
       {std::pair{SplitRanking::kArena, PeakSource::kHeuristic},
        std::pair{SplitRanking::kLowerBound, PeakSource::kHeuristic},
        std::pair{SplitRanking::kLowerBound, PeakSource::kRefined}}) {
    MF_ASSIGN_OR_RETURN(SplitResult tried, SplitRounds(graph, plan, options, ranking, peaks));
    planned += tried.candidates_planned;
    if (!best || tried.arena_after < best->arena_after ||
        (tried.arena_after == best->arena_after && tried.extra_flops < best->extra_flops))
      best = std::move(tried);
  }
  SplitResult result = std::move(*best);
  result.candidates_planned = planned;
  result.search_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace memfold

// `memfold overlap`: the safe overlap O_s of every operator by the three methods.
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "memfold/exec/overlap_trace.h"
#include "memfold/io/text.h"

namespace memfold::cli {
namespace {

using Json = nlohmann::ordered_json;

Json OrNull(const std::optional<int64_t>& v) { return v ? Json(*v) : Json(); }
std::string OrDash(const std::optional<int64_t>& v) { return v ? GroupDigits(*v) : "-"; }

}  // namespace

int OverlapCommand(const CommonOptions& options) {
  Result<Graph> loaded = LoadModel(options.model);
  if (!loaded.ok()) return Fail(loaded.status().message());
  const Graph& g = *loaded;
  const OverlapReport report = AnalyseOverlaps(g);
  if (options.json) {
    Json ops = Json::array();
    for (const NodeOverlap& n : report.nodes) {
      const Node& node = g.node(n.node);
      ops.push_back(
          {{"index", n.position},
           {"op", node.op},
           {"name", node.name},
           {"input",
            n.input < 0 ? Json() : Json(g.value(node.inputs[static_cast<size_t>(n.input)]).name)},
           {"output_bytes", n.output_bytes},
           {"os_analytic", OrNull(n.analytic)},
           {"os_algorithmic", OrNull(n.algorithmic)},
           {"os_trace", OrNull(n.trace)}});
    }
    std::cout << JsonText(Json{{"model", options.model},
                               {"ops", ops},
                               {"analytic_ms", report.analytic_ms},
                               {"algorithmic_ms", report.algorithmic_ms},
                               {"trace_ms", report.trace_ms}})
              << "\n";
    return kExitOk;
  }
  TextTable table(
      {">#", "op", "name", ">output B", ">O_s analytic", ">O_s algorithmic", ">O_s trace"});
  for (const NodeOverlap& n : report.nodes) {
    const Node& node = g.node(n.node);
    table.Add({std::to_string(n.position), node.op, node.name, GroupDigits(n.output_bytes),
               OrDash(n.analytic), OrDash(n.algorithmic), OrDash(n.trace)});
  }
  std::cout << table.Render() << "\ntime: analytic " << report.analytic_ms << " ms, algorithmic "
            << report.algorithmic_ms << " ms, trace " << report.trace_ms << " ms\n";
  return kExitOk;
}

}  // namespace memfold::cli

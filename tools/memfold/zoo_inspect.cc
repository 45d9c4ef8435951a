// `memfold zoo` and `memfold inspect`.
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "memfold/exec/executor.h"
#include "memfold/io/file.h"
#include "memfold/io/text.h"
#include "memfold/io/tflite_graph_writer.h"
#include "memfold/zoo/zoo.h"

namespace memfold::cli {
namespace {

using Json = nlohmann::ordered_json;

Json TensorJson(const Value& v) {
  return {{"name", v.name}, {"dtype", DTypeName(v.dtype)}, {"shape", v.shape}};
}

int64_t BytesWithRole(const Graph& g, bool weights) {
  int64_t total = 0;
  for (const Value& v : g.values()) {
    if ((v.is_constant() || v.role == Role::kWeight) == weights) total += v.bytes();
  }
  return total;
}

}  // namespace

int ZooCommand(bool json) {
  if (json) {
    Json models = Json::array();
    for (const ZooModel& m : ZooModels()) {
      Json keys = Json::object();
      for (const ZooKey& k : m.keys)
        keys[std::string(k.name)] = {{"default", k.default_value}, {"help", k.help}};
      models.push_back({{"name", m.name}, {"summary", m.summary}, {"keys", keys}});
    }
    std::cout << JsonText(Json{{"models", models}}) << "\n";
    return kExitOk;
  }
  TextTable table({"model", "keys (defaults)", "summary"});
  for (const ZooModel& m : ZooModels()) {
    std::string keys;
    for (const ZooKey& k : m.keys)
      keys += (keys.empty() ? "" : ",") + std::string(k.name) + "=" + std::string(k.default_value);
    table.Add({"zoo:" + std::string(m.name), keys, std::string(m.summary)});
  }
  std::cout << table.Render();
  return kExitOk;
}

int InspectCommand(const CommonOptions& options, const std::optional<std::string>& write_tflite) {
  Result<Graph> loaded = LoadModel(options.model, options.input_layout);
  if (!loaded.ok()) return Fail(loaded.status().message());
  const Graph& g = *loaded;
  if (write_tflite) {
    Result<Bytes> file = GraphToTflite(g);
    if (!file.ok()) return Fail(options.model + ": " + file.status().message());
    const Status written = WriteFile(
        *write_tflite, std::string(reinterpret_cast<const char*>(file->data()), file->size()));
    if (!written.ok()) return Fail(written.message());
  }
  std::map<std::string, int> histogram;
  for (NodeId id : g.schedule) ++histogram[g.node(id).op];
  if (options.json) {
    Json ops = Json::array(), values = Json::array(), inputs = Json::array(),
         outputs = Json::array();
    for (size_t pos = 0; pos < g.schedule.size(); ++pos) {
      const Node& n = g.node(g.schedule[pos]);
      Json in = Json::array(), out = Json::array();
      for (ValueId v : n.inputs) in.push_back(v == kNoValue ? Json() : Json(g.value(v).name));
      for (ValueId v : n.outputs) out.push_back(g.value(v).name);
      ops.push_back(
          {{"index", pos}, {"name", n.name}, {"op", n.op}, {"inputs", in}, {"outputs", out}});
    }
    for (const Value& v : g.values()) {
      Json j = TensorJson(v);
      j["role"] = RoleName(v.role);
      j["bytes"] = v.bytes();
      values.push_back(j);
    }
    for (ValueId v : g.inputs) inputs.push_back(TensorJson(g.value(v)));
    for (ValueId v : g.outputs) outputs.push_back(TensorJson(g.value(v)));
    Json unsupported = Json::array();
    for (const OperatorGap& gap : OperatorsThatCannotRun(g)) {
      const Node& n = g.node(g.schedule[gap.position]);
      unsupported.push_back(
          {{"index", gap.position}, {"name", n.name}, {"op", n.op}, {"reason", gap.reason}});
    }
    std::cout << JsonText(Json{{"model", options.model},
                               {"runs", unsupported.empty()},
                               {"unsupported", unsupported},
                               {"ops", ops},
                               {"values", values},
                               {"inputs", inputs},
                               {"outputs", outputs},
                               {"op_histogram", histogram},
                               {"offline_plan", !g.offline_offsets.empty()}})
              << "\n";
    return kExitOk;
  }
  std::cout << options.model << ": " << g.schedule.size() << " ops, " << g.num_values()
            << " values, weights " << HumanBytes(BytesWithRole(g, true)) << ", activations "
            << HumanBytes(BytesWithRole(g, false)) << " (unplanned)\n";
  for (ValueId v : g.inputs)
    std::cout << "  input  " << g.value(v).name << "  " << DTypeName(g.value(v).dtype) << " "
              << ShapeString(g.value(v).shape) << "\n";
  for (ValueId v : g.outputs)
    std::cout << "  output " << g.value(v).name << "  " << DTypeName(g.value(v).dtype) << " "
              << ShapeString(g.value(v).shape) << "\n";
  const std::vector<OperatorGap> gaps = OperatorsThatCannotRun(g);
  if (gaps.empty()) std::cout << "  runs: every operator has a kernel\n";
  for (const OperatorGap& gap : gaps) std::cout << "  cannot run: " << gap.reason << "\n";
  if (!g.offline_offsets.empty()) {
    std::cout << "  carries an offline arena plan (OfflineMemoryAllocation); plan it with "
                 "--planner offline\n";
  }
  std::cout << "\n";
  TextTable table({">#", "op", "name", "output", ">bytes"});
  for (size_t pos = 0; pos < g.schedule.size(); ++pos) {
    const Node& n = g.node(g.schedule[pos]);
    const Value& out = g.value(n.outputs[0]);
    table.Add({std::to_string(pos), n.op, n.name,
               std::string(DTypeName(out.dtype)) + " " + ShapeString(out.shape),
               GroupDigits(out.bytes())});
  }
  std::cout << table.Render() << "\nop histogram:";
  for (const auto& [op, count] : histogram) std::cout << " " << op << "×" << count;
  std::cout << "\n";
  return kExitOk;
}

}  // namespace memfold::cli

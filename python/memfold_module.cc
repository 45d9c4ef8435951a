// The Python extension memfold._memfold (pybind11) over the library's entry points:
//   * inference (pipeline/): plan any model source (a .tflite path, its bytes, "zoo:NAME")
//     into one verified planned program, run it checked against an unplanned run, compile it
//     for a micro-controller board (memfold.plan / run / compile, python/memfold/__init__.py);
//   * training: the joint-graph reader and training pipeline for PyTorch's partitioner
//     (python/memfold/torch/). The graph crosses as the joint-graph file's JSON text
//     (joint/joint_graph.h), so Python and `memfold train FILE` read the same format.
// Errors raise ValueError with memfold's message; a run that differs is a result, not an error.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <vector>

#include "memfold/exec/executor.h"
#include "memfold/io/sha256.h"
#include "memfold/io/tflite_graph_writer.h"
#include "memfold/joint/joint_graph.h"
#include "memfold/ops/runnable.h"
#include "memfold/passes/budget.h"
#include "memfold/passes/echo.h"
#include "memfold/passes/recompute.h"
#include "memfold/passes/stash_model.h"
#include "memfold/pipeline/device.h"
#include "memfold/pipeline/export.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/pipeline/program.h"

namespace py = pybind11;

namespace {

template <typename T>
T OrRaise(memfold::Result<T> result) {
  if (!result.ok()) throw py::value_error(result.status().message());
  return std::move(result).value();
}

void RaiseIfError(const memfold::Status& status) {
  if (!status.ok()) throw py::value_error(status.message());
}

// The node ids marked in `choice` among the file's first `nodes`.
std::vector<int> Marked(const std::vector<char>& choice, size_t nodes) {
  std::vector<int> ids;
  for (size_t id = 0; id < nodes && id < choice.size(); ++id) {
    if (choice[id]) ids.push_back(static_cast<int>(id));
  }
  return ids;
}

// Plans the joint graph `json_text` under `strategy` and says what the plan keeps.
py::dict PlanJoint(const std::string& json_text, const std::string& strategy,
                   const std::string& planner) {
  memfold::JointGraph joint = OrRaise(memfold::ReadJointGraph(json_text));
  const std::map<std::string, int> kept = joint.kept_forward;
  const auto nodes = static_cast<size_t>(joint.graph.num_nodes());
  memfold::PlannedTraining p =
      OrRaise(memfold::PlanJointGraph(std::move(joint), strategy, planner));
  py::dict out;
  out["recomputed"] = Marked(p.recomputed, nodes);
  out["chosen_strategy"] = p.chosen_strategy();
  out["fell_back"] = p.fell_back;
  out["total_bytes"] = p.profile.breakdown.total();
  out["feature_map_bytes"] = p.profile.breakdown.feature_maps;
  out["echo_own_bytes"] = p.echo_own_bytes;
  out["recomputed_nodes"] = p.recomputed_nodes;
  out["forward_nodes"] = p.training.forward_nodes;
  out["kept_forward"] = kept;
  out["plan_ms"] = p.plan_ms;
  return out;
}

// Echo's and Mirror's recomputation choices for the joint graph, without planning, and the
// memory-budget choice for `budget` bytes when it is not negative.
py::dict RecomputeChoices(const std::string& json_text, int64_t budget) {
  const memfold::JointGraph joint = OrRaise(memfold::ReadJointGraph(json_text));
  const auto nodes = static_cast<size_t>(joint.graph.num_nodes());
  const memfold::StashModel stash(joint.graph, joint.training);
  py::dict out, kept;
  auto add = [&](const char* name, const std::vector<char>& choice) {
    out[name] = Marked(choice, nodes);
    kept[name] = stash.TotalKeptBytes(choice);
  };
  add("echo", memfold::EchoChoice(joint.graph, joint.training));
  add("mirror", memfold::MirrorChoice(joint.graph, joint.training));
  if (budget >= 0) add("budget", memfold::BudgetChoice(joint.graph, joint.training, budget));
  out["kept_bytes"] = kept;  // memfold's estimate of what each choice keeps
  return out;
}

// --- inference -----------------------------------------------------------------------------

// A model source: a path or "zoo:NAME[,key=value...]" (str), or a .tflite file's bytes; its
// image inputs in `layout` ("model" or "nhwc", passes/input_layout.h).
memfold::Graph LoadSource(const py::object& model, const std::string& layout = "model") {
  const memfold::InputLayout parsed = OrRaise(memfold::ParseInputLayout(layout));
  if (py::isinstance<py::bytes>(model) || py::isinstance<py::bytearray>(model)) {
    const std::string data = py::cast<std::string>(py::bytes(model));
    const auto* begin = reinterpret_cast<const std::byte*>(data.data());
    memfold::Graph graph =
        OrRaise(memfold::LoadTflite(memfold::Bytes(begin, begin + data.size()), "<bytes>"));
    return OrRaise(memfold::WithInputLayout(std::move(graph), parsed, "<bytes>"));
  }
  return OrRaise(memfold::LoadModel(py::cast<std::string>(model), parsed));
}

// The model's inputs: CONTRACT.md's default when `inputs` is None, else one bytes-like object
// per graph input (numpy arrays included), each of exactly the input's size.
std::vector<memfold::Bytes> InputsOf(const memfold::Graph& graph, const py::object& inputs) {
  std::vector<memfold::Bytes> out;
  if (inputs.is_none()) out = memfold::DefaultInputs(graph);
  for (const py::handle item : inputs.is_none() ? py::list() : py::list(inputs)) {
    const py::buffer_info info = py::reinterpret_borrow<py::buffer>(item).request();
    const auto* begin = static_cast<const std::byte*>(info.ptr);
    out.emplace_back(begin, begin + info.size * info.itemsize);
  }
  RaiseIfError(memfold::CheckRunnable(graph, out));
  return out;
}

memfold::PlannedProgram Plan(const py::object& model, const std::string& planner,
                             double max_recompute, bool stream_input, const std::string& objective,
                             const std::string& input_layout) {
  const memfold::Objective chosen = OrRaise(memfold::ParseObjective(objective));
  return OrRaise(memfold::PlanProgram(
      LoadSource(model, input_layout),
      {planner,
       {.objective = chosen, .max_recompute = max_recompute, .stream_input = stream_input}}));
}

// PlanBestCurve's plans as dicts, each run checked against the unplanned model when `check`.
py::list Pareto(const py::object& model, double max_recompute, bool stream_input, int points,
                bool check, const std::string& input_layout) {
  const memfold::Graph source = LoadSource(model, input_layout);
  const std::vector<memfold::BestPlan> curve = OrRaise(memfold::PlanBestCurve(
      source, {.max_recompute = max_recompute, .stream_input = stream_input}, points));
  const std::vector<memfold::Bytes> inputs = memfold::DefaultInputs(source);
  py::list out;
  for (const memfold::BestPlan& plan : curve) {
    py::dict d;
    d["arena_bytes"] = plan.plan.plan.arena_bytes;
    d["lower_bound_bytes"] = plan.plan.lower_bound;
    d["recompute_fraction"] = plan.recompute_fraction;
    d["overhead_factor"] = 1 + plan.recompute_fraction;
    d["operators"] = plan.graph.schedule.size();
    d["split"] = plan.steps.back().detail;
    if (check) {
      const memfold::CheckedRun run = OrRaise(
          memfold::RunChecked(source, plan.graph, plan.plan.liveness, plan.plan.plan, inputs));
      d["identical_to_unplanned"] = run.identical();
      d["values_checked"] = run.values_checked;
    }
    out.append(d);
  }
  return out;
}

py::list Buffers(const memfold::PlannedProgram& p) {
  py::list buffers;
  const memfold::Liveness& live = p.liveness();
  for (const memfold::BufferRequest& r : live.requests) {
    const memfold::ValueId v = live.value_of[static_cast<size_t>(r.id)];
    py::dict b;
    b["value"] = v == memfold::kNoValue ? std::string("(scratch)") : p.graph().value(v).name;
    b["offset"] = p.plan().plan.offsets[static_cast<size_t>(r.id)];
    b["bytes"] = r.bytes;
    b["first"] = r.first;
    b["last"] = r.last;
    buffers.append(b);
  }
  return buffers;
}

py::list Steps(const memfold::PlannedProgram& p) {
  py::list steps;
  for (const memfold::BestStep& s : p.steps()) {
    py::dict d;
    d["step"] = s.name;
    d["arena_bytes"] = s.arena_bytes;
    d["ms"] = s.ms;
    d["detail"] = s.detail;
    steps.append(d);
  }
  return steps;
}

py::bytes AsPyBytes(const memfold::Bytes& data) {
  return py::bytes(reinterpret_cast<const char*>(data.data()), data.size());
}

// Outputs as dicts: name, dtype, shape, data (bytes), sha256.
py::list Outputs(const memfold::Graph& g, const std::vector<memfold::Bytes>& outputs) {
  py::list out;
  for (size_t k = 0; k < g.outputs.size() && k < outputs.size(); ++k) {
    const memfold::Value& v = g.value(g.outputs[k]);
    py::dict d;
    d["name"] = v.name;
    d["dtype"] = std::string(memfold::DTypeName(v.dtype));
    d["shape"] = v.shape;
    d["data"] = AsPyBytes(outputs[k]);
    d["sha256"] = memfold::Sha256Hex(outputs[k].data(), outputs[k].size());
    out.append(d);
  }
  return out;
}

py::dict RunProgram(const memfold::PlannedProgram& p, const py::object& inputs) {
  const memfold::CheckedRun run = OrRaise(memfold::RunChecked(p, InputsOf(p.source(), inputs)));
  py::dict out;
  out["arena_bytes"] = p.arena_bytes();
  out["identical_to_unplanned"] = run.identical();
  out["values_checked"] = run.values_checked;
  out["operators_traced"] = run.operators_traced;
  out["first_difference"] = run.identical()
                                ? py::object(py::none())
                                : py::object(py::str(DescribeDifference(*run.first_difference)));
  out["outputs"] =
      Outputs(p.source(), run.identical() ? run.planned.outputs : run.unplanned.outputs);
  return out;
}

py::dict CompileProgram(const memfold::PlannedProgram& p, const std::string& output,
                        const std::string& name, const std::string& target, bool run,
                        const py::object& inputs) {
  const memfold::Board* board = memfold::FindBoard(target);
  if (board == nullptr) throw py::value_error(target + " is not a board memfold builds for");
  const std::vector<memfold::Bytes> data = InputsOf(p.source(), inputs);
  const memfold::CodegenOptions codegen{memfold::CIdentifier(name), "python", p.planner()};
  const memfold::DeviceFit fit = memfold::CheckDeviceFit(p, *board);
  const std::vector<memfold::GeneratedFile> tree =
      OrRaise(memfold::CompileProgram(p, fit, codegen, data, *board, output));
  py::dict out;
  out["dir"] = output;
  out["arena_bytes"] = p.arena_bytes();
  out["constants_bytes"] = fit.counted.constants;
  out["state_bytes"] = fit.counted.state;
  py::list files;
  for (const memfold::GeneratedFile& f : tree) files.append(f.path);
  out["files"] = files;
  if (!run) return out;
  const memfold::BoardRun ran =
      OrRaise(memfold::RunProgramOnBoard(p, data, {.dir = output, .name = codegen.name}, *board));
  out["elf"] = ran.elf;
  out["ram_bytes"] = ran.measured.ram();
  out["stack_bytes"] = ran.measured.stack;
  out["flash_bytes"] = ran.measured.flash;
  out["identical_to_host"] = ran.identical;
  out["agrees_with_host"] = ran.agrees;
  out["instructions"] = ran.instructions;
  out["outputs"] = Outputs(p.graph(), ran.outputs);
  return out;
}

// Every value the model computes or is fed, from one unplanned run: a list indexed by value id
// (for a .tflite file, value k is subgraph 0's tensor k), each a dict of name, dtype, shape and
// data, or None for constants, weights and state, which the run reads in place. For comparing
// intermediate tensors with another runtime (python/tests/test_tflm.py); the planned runs are
// compared with this unplanned run read by read by Program.run.
py::list Values(const py::object& model, const py::object& inputs) {
  const memfold::Graph graph = LoadSource(model);
  memfold::ExecOptions options;
  for (memfold::ValueId v = 0; v < graph.num_values(); ++v) {
    const memfold::Value& value = graph.value(v);
    if (!value.is_constant() && value.role != memfold::Role::kState &&
        value.role != memfold::Role::kWeight) {
      options.capture.push_back(v);
    }
  }
  const std::vector<memfold::Bytes> fed = InputsOf(graph, inputs);
  const memfold::RunOutputs run = OrRaise(memfold::RunUnplanned(graph, fed, options));
  py::list values(graph.num_values());
  for (memfold::ValueId v = 0; v < graph.num_values(); ++v) values[v] = py::none();
  auto set = [&](memfold::ValueId v, const memfold::Bytes& data) {
    const memfold::Value& value = graph.value(v);
    py::dict d;
    d["name"] = value.name;
    d["dtype"] = std::string(memfold::DTypeName(value.dtype));
    d["shape"] = value.shape;
    d["data"] = AsPyBytes(data);
    values[v] = d;
  };
  for (size_t k = 0; k < options.capture.size(); ++k) set(options.capture[k], run.captured[k]);
  for (size_t k = 0; k < graph.inputs.size(); ++k) set(graph.inputs[k], fed[k]);
  return values;
}

// The model's graph input and output value ids (a .tflite file's tensor indices), the outputs'
// names and the inputs' element types.
py::dict ModelIo(const py::object& model) {
  const memfold::Graph graph = LoadSource(model);
  py::dict out;
  out["inputs"] = graph.inputs;
  out["outputs"] = graph.outputs;
  py::list names, dtypes;
  for (const memfold::ValueId v : graph.outputs) names.append(graph.value(v).name);
  for (const memfold::ValueId v : graph.inputs)
    dtypes.append(std::string(memfold::DTypeName(graph.value(v).dtype)));
  out["output_names"] = names;
  out["input_dtypes"] = dtypes;
  return out;
}

// The contract's default input of each graph input (CONTRACT.md), as bytes.
py::list DefaultInputBytes(const py::object& model) {
  py::list out;
  for (const memfold::Bytes& input : memfold::DefaultInputs(LoadSource(model)))
    out.append(AsPyBytes(input));
  return out;
}

// The model written as a .tflite file (a zoo model, say), for TFLM.
py::bytes WriteTflite(const py::object& model) {
  return AsPyBytes(OrRaise(memfold::GraphToTflite(LoadSource(model))));
}

// The .tflite file at `path` with the plan of `planner` (and best's options) as its offline
// memory plan, which TFLM loads.
py::bytes TfliteWithPlan(const std::string& path, const std::string& planner, double max_recompute,
                         const std::string& objective) {
  const memfold::PlannedProgram program =
      Plan(py::str(path), planner, max_recompute, /*stream_input=*/false, objective, "model");
  return AsPyBytes(OrRaise(memfold::TfliteWithPlan(path, program)));
}

}  // namespace

PYBIND11_MODULE(_memfold, m) {
  m.doc() = "memfold: memory planning for inference programs and training steps";
  py::class_<memfold::PlannedProgram>(m, "Program",
                                      "A verified planned program (pipeline/program.h).")
      .def_property_readonly("planner", &memfold::PlannedProgram::planner)
      .def_property_readonly("chosen_planner",
                             [](const memfold::PlannedProgram& p) { return p.plan().plan.planner; })
      .def_property_readonly("arena_bytes", &memfold::PlannedProgram::arena_bytes)
      .def_property_readonly("lower_bound_bytes",
                             [](const memfold::PlannedProgram& p) { return p.plan().lower_bound; })
      .def_property_readonly(
          "operators", [](const memfold::PlannedProgram& p) { return p.graph().schedule.size(); })
      .def_property_readonly("rewritten", &memfold::PlannedProgram::rewritten)
      .def_property_readonly("buffers", &Buffers)
      .def_property_readonly("steps", &Steps)
      .def("run", &RunProgram, py::arg("inputs") = py::none(),
           "Runs the program in its arena (dead memory poisoned) and the model unplanned, "
           "compared at every read.")
      .def("compile", &CompileProgram, py::arg("output"), py::arg("name") = "model",
           py::arg("target") = "cortex-m4", py::arg("run") = false, py::arg("inputs") = py::none(),
           "Writes the bare-metal C++ tree; with run=True builds it and runs it under QEMU.");
  m.def("plan", &Plan, py::arg("model"), py::arg("planner") = "greedy",
        py::arg("max_recompute") = 0.10, py::arg("stream_input") = false,
        py::arg("objective") = "memory", py::arg("input_layout") = "model",
        "Plans a model (a .tflite or .onnx path, .tflite bytes, or zoo:NAME) into a verified "
        "Program; objective (best): memory, balanced (least extra work within 5 % of the "
        "smallest arena) or speed; input_layout='nhwc' makes an ONNX model's NCHW image "
        "inputs NHWC (the caller gives HWC images; the first layers then stream and split).");
  m.def("pareto", &Pareto, py::arg("model"), py::arg("max_recompute") = 1.0,
        py::arg("stream_input") = true, py::arg("points") = 12, py::arg("check") = true,
        py::arg("input_layout") = "model",
        "The best planner's memory / extra-work curve: every verified plan no other beats in "
        "both arena and extra FLOPs (a list of dicts, extra work ascending), each run checked "
        "against the unplanned model when check=True.");
  m.def("tflite_with_plan", &TfliteWithPlan, py::arg("path"), py::arg("planner") = "diagonal",
        py::arg("max_recompute") = 0.10, py::arg("objective") = "memory",
        "The .tflite file with the plan as its offline memory plan: TFLM places every tensor "
        "at memfold's offset. A re-ordered best plan is written as the "
        "re-ordered model; a split one is refused.");
  m.def("values", &Values, py::arg("model"), py::arg("inputs") = py::none(),
        "Every value of one unplanned run, indexed by value id (a .tflite file's tensor index); "
        "None for constants, weights and state.");
  m.def("model_io", &ModelIo, py::arg("model"),
        "The model's input and output value ids (a .tflite file's tensor indices), output "
        "names and input element types.");
  m.def("default_inputs", &DefaultInputBytes, py::arg("model"),
        "The contract's default input of each model input, as bytes.");
  m.def("write_tflite", &WriteTflite, py::arg("model"),
        "The model written as a .tflite file (for TFLM or the TFLite interpreter).");
  m.def("planners", [] {
    py::list rows;
    for (const memfold::ProgramPlanner& r : memfold::ProgramPlanners()) rows.append(r.name);
    return rows;
  });
  m.def("plan_joint", &PlanJoint, py::arg("json_text"), py::arg("strategy") = "echo",
        py::arg("planner") = "mxnet",
        "Plans a memfold-joint-graph (JSON text) under none, mirror or echo; returns the "
        "recomputed node indices, whose graph was kept and the planned bytes.");
  m.def("recompute_choices", &RecomputeChoices, py::arg("json_text"), py::arg("budget") = -1,
        "Echo's and Mirror's choices of forward nodes to recompute (node indices), unplanned, "
        "and with budget >= 0 the fewest-FLOPs choice that keeps at most `budget` bytes.");
}

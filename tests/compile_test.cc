// `memfold compile` without the cross toolchain: what the code generator writes (one arena of
// the planned size, tables the compiler must initialise statically, typed entry points,
// offsets and kernels exactly as the host executor uses them) and every refusal's exit code
// and message. The builds and runs on the emulated Cortex-M are tests/device/.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "memfold/compile/codegen.h"
#include "memfold/compile/embedded_sources.h"
#include "memfold/ops/registry.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/plan/plan_graph.h"
#include "memfold/plan/planned_layout.h"
#include "memfold/plan/shared_storage.h"
#include "tests/program_runner.h"

namespace memfold {
namespace {

using testing::Memfold;
using testing::ReadFile;

const std::string kShared = MEMFOLD_SHARED_DIR;
const std::string kKws = kShared + "/models/mlcommons-tiny/kws_ref_model.tflite";

std::string TempDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("memfold_compile_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

struct Generated {
  Graph graph;
  GraphPlan plan;
  std::string header, source;
};

Generated Generate(const std::string& model, const std::string& planner) {
  Generated g{LoadModel(model).value()};
  g.plan = PlanGraph(g.graph, planner, {.refine = true}).value();
  auto files = GenerateModel(g.graph, g.plan.liveness, g.plan.plan, {"kws", model, planner});
  EXPECT_TRUE(files.ok()) << files.status().message();
  g.header = (*files)[0].text;
  g.source = (*files)[1].text;
  return g;
}

TEST(Codegen, OneArenaOfThePlannedSizeAndEveryTableStatic) {
  const Generated g = Generate(kKws, "diagonal");
  const std::string arena =
      "std::byte g_arena[" + std::to_string(g.plan.plan.arena_bytes) + "] __attribute__";
  EXPECT_NE(g.source.find(arena), std::string::npos);
  EXPECT_EQ(g.source.find("std::byte g_arena["), g.source.rfind("std::byte g_arena["))
      << "one arena, no other activation memory";
  // Every table at namespace scope is constinit: the compiler must initialise it statically
  // (flash), never by a constructor copying it into RAM.
  const std::regex table(R"(^(?:alignas\(16\) )?(?:\[\[maybe_unused\]\] )?(constinit )?const )",
                         std::regex::multiline);
  int tables = 0;
  for (auto it = std::sregex_iterator(g.source.begin(), g.source.end(), table);
       it != std::sregex_iterator(); ++it, ++tables) {
    EXPECT_TRUE((*it)[1].matched) << "a table that is not constinit at " << it->position();
  }
  EXPECT_GT(tables, 20);
  EXPECT_NE(g.header.find("int memfold_kws_invoke(const int8_t* input0, int8_t* output0);"),
            std::string::npos)
      << g.header;
  EXPECT_NE(
      g.header.find("#define MEMFOLD_KWS_ARENA_BYTES " + std::to_string(g.plan.plan.arena_bytes)),
      std::string::npos);
}

TEST(Codegen, EveryArenaTensorSitsAtTheOffsetTheHostExecutorUses) {
  const Generated g = Generate(kKws, "diagonal");
  const std::vector<ValueHome> homes = PlannedHomes(g.graph, g.plan.liveness, g.plan.plan);
  int checked = 0;
  for (const NodeId id : g.graph.schedule) {
    for (const ValueId v : g.graph.node(id).outputs) {
      const ValueHome& home = homes[static_cast<size_t>(v)];
      if (home.home != Home::kArena) continue;
      // One descriptor per line: in the arena, at this offset.
      const std::regex desc("\\{\\.present = true, \\.in_arena = true, [^\\n]*\\.offset = " +
                            std::to_string(home.offset) + "u\\}");
      EXPECT_TRUE(std::regex_search(g.source, desc)) << g.graph.value(v).name;
      ++checked;
    }
  }
  EXPECT_GT(checked, 5);
  // The kernels are the host's own, named by the registry.
  EXPECT_NE(g.source.find("&memfold::Conv2DI8<memfold::Direct>"), std::string::npos);
  EXPECT_NE(g.source.find("&memfold::DepthwiseConv2DI8<memfold::Direct>"), std::string::npos);
}

TEST(Codegen, TheTreeCarriesOnlyFreestandingSources) {
  int sources = 0;
  for (const EmbeddedFile& f : EmbeddedSources()) {
    EXPECT_EQ(f.text.find("#include <vector>"), std::string_view::npos) << f.path;
    EXPECT_EQ(f.text.find("#include <string>"), std::string_view::npos) << f.path;
    EXPECT_EQ(f.text.find("#include <iostream>"), std::string_view::npos) << f.path;
    EXPECT_EQ(f.text.find("memfold/ops/registry.h"), std::string_view::npos) << f.path;
    EXPECT_EQ(f.text.find("memfold/ir/graph.h"), std::string_view::npos) << f.path;
    EXPECT_FALSE(f.path.find("/host/") != std::string_view::npos) << f.path;
    sources += f.path.ends_with(".cc") ? 1 : 0;
  }
  EXPECT_GE(sources, 10);
}

// The registry's device flag says which kernels device trees carry: every kernel marked device
// is declared in an embedded header, and no host-only kernel is.
TEST(Codegen, EveryDeviceKernelIsDeclaredInTheTreeAndNoHostKernelIs) {
  int device = 0, host = 0;
  for (const OpDef& def : AllOps()) {
    for (const KernelEntry& k : def.kernels) {
      if (k.symbol.empty()) continue;
      const std::string base(k.symbol.substr(0, k.symbol.find('<')));
      const std::string declaration = " " + base + "(const KernelContext& ctx);";
      bool declared = false;
      for (const EmbeddedFile& f : EmbeddedSources())
        declared = declared || (f.path.ends_with(".h") && f.text.find(declaration) != f.text.npos);
      EXPECT_EQ(declared, k.device) << def.name << ": " << base;
      ++(k.device ? device : host);
    }
  }
  EXPECT_GT(device, 100);
  EXPECT_GT(host, 20);
}

TEST(Codegen, CIdentifiers) {
  EXPECT_EQ(CIdentifier("vww_96_int8"), "vww_96_int8");
  EXPECT_EQ(CIdentifier("mobilenet_v1,alpha=0.25,res=128"), "mobilenet_v1_alpha_0_25_res_128");
  EXPECT_EQ(CIdentifier("2-stage"), "m_2_stage");
  EXPECT_EQ(CIdentifier("***"), "m_");
}

TEST(CompileCli, WritesATreeWithItsMakefile) {
  const std::string dir = TempDir("tree");
  const auto out = Memfold("compile " + kKws + " --planner best -o " + dir + " --json");
  ASSERT_EQ(out.code, 0) << out.err;
  const auto json = out.Json();
  EXPECT_EQ(json["name"], "kws_ref_model");
  EXPECT_GT(json["arena_bytes"].get<int64_t>(), 0);
  for (const char* file :
       {"Makefile", "model/kws_ref_model.h", "model/kws_ref_model.cc", "model/main.cc",
        "memfold/runtime/program.cc", "memfold/ops/kernels/int_conv.cc", "target/startup.c",
        "target/mps2_an386.ld"}) {
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir) / file)) << file;
  }
  EXPECT_NE(ReadFile(std::filesystem::path(dir) / "Makefile").find("qemu-system-arm -M mps2-an386"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(CompileCli, RefusesWhatItCannotBuild) {
  const std::string dir = TempDir("refused");
  auto out = Memfold("compile " + kKws + " --target cortex-z9 -o " + dir);
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.err.find("cortex-m4"), std::string::npos) << out.err;
  out = Memfold("compile zoo:nmt,size=tiny -o " + dir);
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.err.find("training model"), std::string::npos) << out.err;
  out = Memfold("compile " + kShared + "/models/tflite-micro/person_detect_vela.tflite -o " + dir);
  EXPECT_EQ(out.code, 2);
  EXPECT_NE(out.err.find("ethos-u"), std::string::npos) << out.err;
  std::filesystem::remove_all(dir);
}

TEST(CompileCli, APlanOverTheBudgetOrTheBoardIsExitOneNamingBothSizes) {
  const std::string dir = TempDir("fit");
  auto out = Memfold("compile " + kKws + " --planner diagonal --budget 4K -o " + dir);
  EXPECT_EQ(out.code, 1);
  EXPECT_NE(out.err.find("does not fit the 4.00 KiB budget"), std::string::npos) << out.err;
  EXPECT_EQ(std::count(out.err.begin(), out.err.end(), '\n'), 1) << "one line: " << out.err;
  out = Memfold("compile zoo:mobilenet_v1 -o " + dir);
  EXPECT_EQ(out.code, 1);
  EXPECT_NE(out.err.find("16,888,228 B of flash; the mps2-an386 has 4,194,304 B"),
            std::string::npos)
      << out.err;
  EXPECT_FALSE(std::filesystem::exists(dir)) << "nothing written for a model that cannot fit";
}

TEST(CompileCli, AMissingCrossToolchainNamesThePackage) {
  const std::string dir = TempDir("toolchain");
  const auto out = Memfold("compile " + kKws + " -o " + dir + " --run", "env PATH=/nonexistent ");
  EXPECT_EQ(out.code, 1);
  EXPECT_NE(out.err.find("gcc-arm-none-eabi"), std::string::npos) << out.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace memfold

// The layering, enforced: every file of a module of src/memfold (its tests included) may
// include only its own module and the modules below it. The modules and their direct
// dependencies come from CMakeLists.txt (MEMFOLD_MODULES), which also links each module's
// library only against those; this test catches what linking cannot, an upward #include of a
// header. A folder under src/memfold that is not a listed module fails too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace memfold {
namespace {

namespace fs = std::filesystem;

// "base: ir:base plan:ops,placement ..." -> module -> direct dependencies.
std::map<std::string, std::set<std::string>> Modules() {
  std::map<std::string, std::set<std::string>> modules;
  std::istringstream entries(MEMFOLD_MODULES);
  std::string entry;
  while (entries >> entry) {
    const size_t colon = entry.find(':');
    std::set<std::string>& deps = modules[entry.substr(0, colon)];
    std::istringstream list(entry.substr(colon + 1));
    std::string dep;
    while (std::getline(list, dep, ',')) {
      if (!dep.empty()) deps.insert(dep);
    }
  }
  return modules;
}

std::set<std::string> Allowed(const std::map<std::string, std::set<std::string>>& modules,
                              const std::string& module) {
  std::set<std::string> allowed = {module};
  std::vector<std::string> work = {module};
  while (!work.empty()) {
    const std::string m = work.back();
    work.pop_back();
    for (const std::string& dep : modules.at(m)) {
      if (allowed.insert(dep).second) work.push_back(dep);
    }
  }
  return allowed;
}

TEST(Layering, NoModuleIncludesAModuleAboveIt) {
  const auto modules = Modules();
  ASSERT_GE(modules.size(), 9u);
  const fs::path root = fs::path(MEMFOLD_SOURCE_DIR) / "src" / "memfold";
  const std::regex include(R"(#include\s+"memfold/([a-z_]+)/)");
  int files = 0;
  for (const auto& dir : fs::directory_iterator(root)) {
    const std::string module = dir.path().filename().string();
    ASSERT_TRUE(modules.contains(module)) << module << " is not a module in CMakeLists.txt";
    const std::set<std::string> allowed = Allowed(modules, module);
    for (const auto& entry : fs::recursive_directory_iterator(dir.path())) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path());
      std::string line;
      int number = 0;
      ++files;
      while (std::getline(in, line)) {
        ++number;
        std::smatch match;
        if (!std::regex_search(line, match, include)) continue;
        EXPECT_TRUE(allowed.contains(match[1].str()))
            << fs::relative(entry.path(), root).string() << ":" << number << " (module " << module
            << ") includes memfold/" << match[1].str() << ", a module above it";
      }
    }
  }
  EXPECT_GT(files, 100);
}

// The list itself is bottom-up: a module depends only on modules listed before it.
TEST(Layering, ModulesAreListedBottomUp) {
  std::istringstream entries(MEMFOLD_MODULES);
  std::set<std::string> seen;
  std::string entry;
  while (entries >> entry) {
    const size_t colon = entry.find(':');
    std::istringstream list(entry.substr(colon + 1));
    std::string dep;
    while (std::getline(list, dep, ',')) {
      if (dep.empty()) continue;
      EXPECT_TRUE(seen.contains(dep)) << entry << ": " << dep << " comes later";
    }
    seen.insert(entry.substr(0, colon));
  }
}

}  // namespace
}  // namespace memfold

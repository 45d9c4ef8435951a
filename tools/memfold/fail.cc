// Error reporting and JSON output for the CLI.
#include <iostream>

#include "commands.h"
#include "progress.h"

namespace memfold::cli {

int Fail(const std::string& message, int code) {
  ClearProgress();
  std::cerr << "memfold: " << message << "\n";
  return code;
}

std::string JsonText(const nlohmann::ordered_json& json) {
  return json.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace memfold::cli

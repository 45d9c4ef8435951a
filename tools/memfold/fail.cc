// Error reporting for the CLI.
#include <iostream>

#include "commands.h"
#include "progress.h"

namespace memfold::cli {

int Fail(const std::string& message, int code) {
  ClearProgress();
  std::cerr << "memfold: " << message << "\n";
  return code;
}

}  // namespace memfold::cli

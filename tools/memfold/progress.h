// What memfold says on stderr besides errors: progress and timings.
//
// Three levels, set once by the global flags: --quiet (errors only), normal, --verbose (every
// phase's wall time, one line each: "memfold: plan diagonal: 11.9 ms"). Progress lines ("memfold:
// planning echo...") appear only when stderr is a terminal and the level is not quiet; each is
// overwritten in place by the next and erased when done, so piped or redirected stderr carries
// nothing but errors and, with --verbose, timings. Stdout is never touched here.
#pragma once

#include <chrono>
#include <string>

namespace memfold::cli {

enum class Verbosity { kQuiet, kNormal, kVerbose };

void SetVerbosity(Verbosity verbosity);
Verbosity GetVerbosity();

// Shows `what` as the current progress line (terminal only); replaces the previous one.
void ShowProgress(const std::string& what);
// Erases the progress line, if one is shown.
void ClearProgress();
// With --verbose, prints "memfold: MESSAGE" on its own line (the progress line is erased first).
void VerboseNote(const std::string& message);

// One phase of a command: shows "NAME..." as progress while it runs and, with --verbose,
// prints its wall time when it ends (destruction or Done()).
class Phase {
 public:
  explicit Phase(std::string name);
  ~Phase();
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;
  // Ends the phase now; `result` (e.g. "4.59 MiB") is appended to the timing line.
  double Done(const std::string& result = "");

 private:
  std::string name_;
  std::chrono::steady_clock::time_point start_;
  double ms_ = 0;
  bool done_ = false;
};

}  // namespace memfold::cli

#include "progress.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace memfold::cli {
namespace {

Verbosity g_verbosity = Verbosity::kNormal;
bool g_progress_shown = false;

bool ProgressEnabled() {
  static const bool terminal = ::isatty(STDERR_FILENO) == 1;
  return terminal && g_verbosity != Verbosity::kQuiet;
}

}  // namespace

void SetVerbosity(Verbosity verbosity) { g_verbosity = verbosity; }
Verbosity GetVerbosity() { return g_verbosity; }

void ShowProgress(const std::string& what) {
  if (!ProgressEnabled()) return;
  std::cerr << "\r\033[K"
            << "memfold: " << what << "..." << std::flush;
  g_progress_shown = true;
}

void ClearProgress() {
  if (!g_progress_shown) return;
  std::cerr << "\r\033[K" << std::flush;
  g_progress_shown = false;
}

void VerboseNote(const std::string& message) {
  if (g_verbosity != Verbosity::kVerbose) return;
  ClearProgress();
  std::cerr << "memfold: " << message << "\n" << std::flush;
}

Phase::Phase(std::string name) : name_(std::move(name)), start_(std::chrono::steady_clock::now()) {
  ShowProgress(name_);
}

Phase::~Phase() { Done(); }

double Phase::Done(const std::string& result) {
  if (done_) return ms_;
  done_ = true;
  ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  ClearProgress();
  char time[32];
  std::snprintf(time, sizeof(time), "%.1f ms", ms_);
  VerboseNote(name_ + ": " + time + (result.empty() ? "" : " (" + result + ")"));
  return ms_;
}

}  // namespace memfold::cli

// Every output path of every command on one model file: the fuzzer's check that nothing a file
// holds can crash memfold, break its JSON or its one-line error contract (CONTRACT.md).
//
// The model's bytes are written to a temporary file and the commands run in-process (the CLI's
// commands, tools/memfold/commands.h) with stdout and stderr captured and progress off: inspect
// and plan (greedy: text, JSON and the SVG picture) always; when `executable` (small models whose
// every operator has a kernel) also plan --planner diagonal, overlap, run, compare, each in text
// and JSON, and report (the HTML page; its text and JSON modes write the same page). The rules: the
// exit code is 0, 1 or 2; with --json, stdout is one valid JSON value (strict UTF-8); a command
// that fails prints exactly one line on stderr, starting "memfold: "; no exception escapes.
//
// Cost: the commands' own (planning, and for executable models running and tracing).
#pragma once

#include <cstdint>
#include <span>

#include "memfold/base/status.h"

namespace memfold::fuzz {

Status CheckCommandOutputs(std::span<const uint8_t> bytes, bool executable);

}  // namespace memfold::fuzz

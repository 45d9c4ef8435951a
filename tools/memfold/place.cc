// `memfold place`: a placement problem from a CSV file (placement/problem_csv.h) placed by the
// portfolio (placement/portfolio.h), checked by VerifyPlan, written back with offsets.
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "memfold/io/file.h"
#include "memfold/io/text.h"
#include "memfold/placement/portfolio.h"
#include "memfold/placement/problem_csv.h"
#include "memfold/placement/verify_plan.h"

namespace memfold::cli {

int PlaceCommand(const PlaceOptions& options) {
  int64_t capacity = 0;
  if (options.capacity && !ParseByteSize(*options.capacity, &capacity))
    return Fail("--capacity " + *options.capacity + " is not a size; use bytes or K/M/G/T");
  if (!(options.time_limit >= 0 && options.time_limit <= 86400))
    return Fail("--time-limit must be 0 .. 86400 seconds");
  Result<std::string> text = ReadWholeFile(options.problem, "the problem file");
  if (!text.ok()) return Fail(text.status().message());
  Result<PlacementProblem> problem = ReadPlacementCsv(*text, options.problem);
  if (!problem.ok()) return Fail(problem.status().message());
  const PortfolioResult result = PlaceWithPortfolio(
      problem->requests,
      {.capacity = capacity, .seconds = options.time_limit, .start = problem->offsets});
  if (const Status verified = VerifyPlan(problem->requests, result.plan); !verified.ok())
    return Fail("memfold bug: the placement fails VerifyPlan: " + verified.message(), kExitFailed);
  const bool fits = capacity <= 0 || result.plan.arena_bytes <= capacity;
  if (fits && options.output) {
    if (Status written =
            WriteFile(*options.output, WritePlacementCsv(*problem, result.plan.offsets));
        !written.ok())
      return Fail(written.message());
  }
  if (options.json) {
    nlohmann::ordered_json j = {
        {"problem", options.problem},
        {"buffers", problem->requests.size()},
        {"arena_bytes", result.plan.arena_bytes},
        {"lower_bound", result.lower_bound},
        {"optimal", result.optimal},
        {"gap_to_lower_bound", GapToLowerBound(result.plan.arena_bytes, result.lower_bound)},
        {"seconds", result.seconds},
        {"solver", result.plan.planner}};
    if (capacity > 0) {
      j["capacity"] = capacity;
      j["fits"] = fits;
    }
    std::cout << JsonText(j) << "\n";
  } else {
    std::cout << options.problem << ": " << problem->requests.size() << " buffers, lower bound "
              << GroupDigits(result.lower_bound) << " B\narena "
              << GroupDigits(result.plan.arena_bytes) << " B ("
              << (result.optimal ? "optimal" : "not proven optimal") << ", "
              << Fixed(100 * GapToLowerBound(result.plan.arena_bytes, result.lower_bound), 2)
              << " % above the bound) by " << result.plan.planner << " in "
              << Fixed(result.seconds, 3) << " s\n";
  }
  if (!fits) {
    return Fail("no placement within " + GroupDigits(capacity) + " B found (best " +
                    GroupDigits(result.plan.arena_bytes) + " B)",
                kExitFailed);
  }
  return kExitOk;
}

}  // namespace memfold::cli

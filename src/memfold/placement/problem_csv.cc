#include "memfold/placement/problem_csv.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <sstream>

namespace memfold {

namespace {

// At most this many rows of at most kMaxSize bytes each: their sum stays within int64 (2^62),
// and no real problem is near.
constexpr size_t kMaxRows = size_t{1} << 22;
constexpr int64_t kMaxSize = int64_t{1} << 40;

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> SplitFields(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    fields.push_back(Trim(std::string_view(line).substr(start, comma - start)));
    if (comma == std::string::npos) return fields;
    start = comma + 1;
  }
}

Result<int64_t> ParseInt(const std::string& text, const std::string& where) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end)
    return Status::Error(where + ": '" + text + "' is not an integer");
  return value;
}

struct Columns {
  int id = -1, lower = -1, upper = -1, size = -1, alignment = -1, overlaps = -1;
};

Result<Columns> FindColumns(const std::vector<std::string>& header, const std::string& label) {
  Columns c;
  const std::map<std::string, int*> known = {
      {"id", &c.id},     {"lower", &c.lower},         {"upper", &c.upper},
      {"size", &c.size}, {"alignment", &c.alignment}, {"overlaps", &c.overlaps}};
  for (size_t k = 0; k < header.size(); ++k) {
    const auto it = known.find(header[k]);
    if (it == known.end()) continue;
    if (*it->second >= 0) return Status::Error(label + ": column '" + header[k] + "' twice");
    *it->second = static_cast<int>(k);
  }
  for (const auto& [name, index] : known) {
    if (*index < 0 && name != "alignment" && name != "overlaps")
      return Status::Error(label + ": the header has no '" + name +
                           "' column (expected id,lower,upper,size)");
  }
  return c;
}

// The `overlaps` field: space-separated ID:BYTES pairs. An allowance beyond the buffer's own
// size means no more than its size (it may then lie over all of a smaller input).
Status ReadOverlaps(const std::string& field, const std::map<std::string, int32_t>& ids,
                    const std::string& where, BufferRequest* request) {
  std::istringstream pairs(field);
  std::string pair;
  while (pairs >> pair) {
    const size_t colon = pair.rfind(':');
    if (colon == std::string::npos)
      return Status::Error(where + ": overlap '" + pair + "' is not ID:BYTES");
    const auto input = ids.find(pair.substr(0, colon));
    if (input == ids.end())
      return Status::Error(where + ": overlap names unknown id '" + pair.substr(0, colon) + "'");
    MF_ASSIGN_OR_RETURN(int64_t bytes, ParseInt(pair.substr(colon + 1), where));
    if (bytes < 0 || input->second == request->id)
      return Status::Error(where + ": overlap '" + pair + "' is invalid");
    bytes = std::min(bytes, request->bytes);
    request->may_overlap.push_back({input->second, bytes});
  }
  return Status::Ok();
}

// The `offset` column, if the file has one with a non-negative integer in every row.
void ReadOffsets(const std::vector<std::string>& header, PlacementProblem* problem) {
  const auto column = std::find(header.begin(), header.end(), "offset");
  if (column == header.end()) return;
  const auto index = static_cast<size_t>(column - header.begin());
  std::vector<int64_t> offsets;
  for (const std::vector<std::string>& row : problem->rows) {
    const Result<int64_t> offset = ParseInt(row[index], "");
    if (!offset.ok() || *offset < 0) return;
    offsets.push_back(*offset);
  }
  problem->offsets = std::move(offsets);
}

}  // namespace

Result<PlacementProblem> ReadPlacementCsv(const std::string& text, const std::string& label) {
  PlacementProblem problem;
  std::istringstream lines(text);
  std::string line;
  std::vector<int> line_of;
  int line_number = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    if (Trim(line).empty()) continue;
    if (problem.header.empty()) {
      problem.header = SplitFields(line);
      continue;
    }
    if (problem.rows.size() == kMaxRows)
      return Status::Error(label + ": more than " + std::to_string(kMaxRows) + " rows");
    problem.rows.push_back(SplitFields(line));
    line_of.push_back(line_number);
  }
  if (problem.header.empty()) return Status::Error(label + ": empty file");
  MF_ASSIGN_OR_RETURN(Columns c, FindColumns(problem.header, label));
  std::map<std::string, int32_t> ids;
  std::vector<int64_t> lower(problem.rows.size()), upper(problem.rows.size());
  for (size_t k = 0; k < problem.rows.size(); ++k) {
    const std::vector<std::string>& row = problem.rows[k];
    const std::string where = label + ": line " + std::to_string(line_of[k]);
    if (row.size() != problem.header.size())
      return Status::Error(where + ": " + std::to_string(row.size()) + " fields, the header has " +
                           std::to_string(problem.header.size()));
    if (!ids.emplace(row[static_cast<size_t>(c.id)], static_cast<int32_t>(k)).second)
      return Status::Error(where + ": id '" + row[static_cast<size_t>(c.id)] + "' repeats");
    BufferRequest r{
        .id = static_cast<int32_t>(k), .bytes = 0, .alignment = 1, .first = 0, .last = 0};
    MF_ASSIGN_OR_RETURN(lower[k], ParseInt(row[static_cast<size_t>(c.lower)], where));
    MF_ASSIGN_OR_RETURN(upper[k], ParseInt(row[static_cast<size_t>(c.upper)], where));
    MF_ASSIGN_OR_RETURN(r.bytes, ParseInt(row[static_cast<size_t>(c.size)], where));
    if (c.alignment >= 0) {
      MF_ASSIGN_OR_RETURN(r.alignment, ParseInt(row[static_cast<size_t>(c.alignment)], where));
    }
    if (upper[k] <= lower[k])
      return Status::Error(where + ": upper must be greater than lower (a half-open lifetime)");
    if (r.bytes < 0 || r.bytes > kMaxSize) return Status::Error(where + ": size must be 0 .. 2^40");
    if (r.alignment <= 0 || r.alignment > (int64_t{1} << 30))
      return Status::Error(where + ": alignment must be 1 .. 2^30");
    problem.requests.push_back(std::move(r));
  }
  if (c.overlaps >= 0) {
    for (size_t k = 0; k < problem.rows.size(); ++k) {
      const std::string where = label + ": line " + std::to_string(line_of[k]);
      MF_RETURN_IF_ERROR(ReadOverlaps(problem.rows[k][static_cast<size_t>(c.overlaps)], ids, where,
                                      &problem.requests[k]));
    }
  }
  ReadOffsets(problem.header, &problem);
  // Times as they are when they fit 0 .. 2^31 - 1 (the solvers' orders weigh lifetimes);
  // otherwise their ranks, which keep every conflict and every death at a creation.
  const bool fits = std::all_of(lower.begin(), lower.end(), [](int64_t t) { return t >= 0; }) &&
                    std::all_of(upper.begin(), upper.end(),
                                [](int64_t t) { return t <= std::numeric_limits<int32_t>::max(); });
  std::vector<int64_t> times(lower);
  times.insert(times.end(), upper.begin(), upper.end());
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  auto rank = [&](int64_t t) {
    return fits ? static_cast<int32_t>(t)
                : static_cast<int32_t>(std::lower_bound(times.begin(), times.end(), t) -
                                       times.begin());
  };
  for (size_t k = 0; k < problem.requests.size(); ++k) {
    problem.requests[k].first = rank(lower[k]);
    problem.requests[k].last = rank(upper[k]) - 1;
  }
  return problem;
}

std::string WritePlacementCsv(const PlacementProblem& problem,
                              const std::vector<int64_t>& offsets) {
  std::vector<std::string> header = problem.header;
  auto column = std::find(header.begin(), header.end(), "offset");
  const size_t offset_column = static_cast<size_t>(column - header.begin());
  if (column == header.end()) header.push_back("offset");
  std::ostringstream out;
  auto write_row = [&](const std::vector<std::string>& fields) {
    for (size_t k = 0; k < fields.size(); ++k) out << (k > 0 ? "," : "") << fields[k];
    out << '\n';
  };
  write_row(header);
  for (size_t k = 0; k < problem.rows.size(); ++k) {
    std::vector<std::string> row = problem.rows[k];
    row.resize(header.size());
    row[offset_column] = std::to_string(offsets[k]);
    write_row(row);
  }
  return out.str();
}

PlacementProblem ProblemFromRequests(const std::vector<BufferRequest>& requests) {
  PlacementProblem problem;
  problem.requests = requests;
  const bool aligned = std::any_of(requests.begin(), requests.end(),
                                   [](const BufferRequest& r) { return r.alignment != 1; });
  const bool overlapping =
      std::any_of(requests.begin(), requests.end(),
                  [](const BufferRequest& r) { return !r.may_overlap.empty(); });
  problem.header = {"id", "lower", "upper", "size"};
  if (aligned) problem.header.push_back("alignment");
  if (overlapping) problem.header.push_back("overlaps");
  for (const BufferRequest& r : requests) {
    std::vector<std::string> row = {std::to_string(r.id), std::to_string(r.first),
                                    std::to_string(int64_t{r.last} + 1), std::to_string(r.bytes)};
    if (aligned) row.push_back(std::to_string(r.alignment));
    if (overlapping) {
      std::string pairs;
      for (const OverlapAllowance& a : r.may_overlap)
        pairs += (pairs.empty() ? "" : " ") + std::to_string(a.input) + ":" +
                 std::to_string(a.max_bytes);
      row.push_back(pairs);
    }
    problem.rows.push_back(std::move(row));
  }
  return problem;
}

}  // namespace memfold

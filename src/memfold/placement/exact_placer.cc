#include "memfold/placement/exact_placer.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "memfold/base/splitmix.h"

namespace memfold {

namespace {

// At most this many failed parts are remembered (8 bytes each, plus the table's overhead:
// about 40 MB at most).
constexpr size_t kMaxFailedStates = size_t{1} << 20;
constexpr int64_t kClockEvery = 1 << 16;  // units of work between looks at the wall clock

// A buffer in section units: it covers sections [lo, hi) and takes `units` alignment units.
// `width` (time steps), `area` (units x steps) and `total` (the most units live in one of its
// sections) order the search.
struct Item {
  int32_t request;
  int32_t lo, hi;
  int64_t units;
  int64_t width = 0, area = 0, total = 0;
};

// The static orders the search takes turns with: each a priority of width (W), area (A) and
// the busiest section's total (T), largest first.
constexpr std::string_view kOrders[] = {"WAT", "TAW", "TWA"};

// An allowance of `out` the solver uses: it names another buffer of bytes, dying where `out`
// is made.
bool UsableAllowance(std::span<const BufferRequest> requests, const BufferRequest& out,
                     const OverlapAllowance& allowance) {
  if (allowance.input < 0 || static_cast<size_t>(allowance.input) >= requests.size()) return false;
  const BufferRequest& in = requests[static_cast<size_t>(allowance.input)];
  return in.id != out.id && in.bytes > 0 && out.bytes > 0 && in.last == out.first;
}

// Whether a buffer made and dying at one step both overlaps an input and is overlapped by an
// output there. Such allowances can form a cycle of buffers sharing one offset, which no
// placement in order of offset builds (every buffer of the cycle would have to come first).
// Operators never make one (an output is not an input of its own operator); a CSV file can.
bool AllowancesFormACycle(std::span<const BufferRequest> requests) {
  std::vector<char> overlaps(requests.size(), 0), overlapped(requests.size(), 0);
  for (const BufferRequest& r : requests) {
    for (const OverlapAllowance& allowance : r.may_overlap) {
      if (!UsableAllowance(requests, r, allowance)) continue;
      overlaps[static_cast<size_t>(r.id)] = 1;
      overlapped[static_cast<size_t>(allowance.input)] = 1;
    }
  }
  for (const BufferRequest& r : requests) {
    const auto k = static_cast<size_t>(r.id);
    if (r.first == r.last && overlaps[k] && overlapped[k]) return true;
  }
  return false;
}

// Why the problem is outside the solver (empty: inside), and its one alignment.
std::string DeclineReason(std::span<const BufferRequest> requests, int64_t* alignment) {
  *alignment = 0;
  if (AllowancesFormACycle(requests)) return "allowances between buffers of one step";
  for (const BufferRequest& r : requests) {
    if (r.fixed_offset != BufferRequest::kNotFixed) return "fixed offsets";
    if (r.bytes == 0) continue;
    if (*alignment != 0 && *alignment != r.alignment) return "mixed alignments";
    *alignment = r.alignment;
  }
  if (*alignment == 0) *alignment = 1;
  return "";
}

enum class Outcome { kFound, kNone, kAborted };

// A part of the problem solved on its own: sections [lo, hi) and the unplaced items in them.
struct Part {
  int32_t lo, hi;
  std::vector<int32_t> items;
};

// An output and a dying input it may overlap (BufferRequest::may_overlap), in items: the input
// may start `lift` units above the output's offset instead of above its end. `reach` (the
// output's units less the lift) is how far into the output the input may reach down.
struct Lift {
  int32_t out, in;
  int64_t lift, reach;
};

class Search {
 public:
  Search(std::span<const BufferRequest> requests, int64_t alignment, const ExactLimits& limits)
      : requests_(requests), alignment_(alignment), limits_(limits) {
    BuildItems();
    start_time_ = std::chrono::steady_clock::now();
  }

  // Units live at the busiest section: no plan is lower.
  int64_t LowerUnits() const {
    int64_t lower = 0;
    for (size_t s = 0; s < total_.size(); ++s)
      lower = std::max(lower, total_[s] - Credit(static_cast<int32_t>(s)));
    return lower;
  }

  // Looks for a plan of at most `cap` units within `work` more units of work, taking turns
  // with the static orders under a node limit that doubles each round. Returns the plan, or
  // nothing: then stopped() says whether work or time ran out first, or no plan exists.
  std::optional<Plan> Decide(int64_t cap, int64_t work) {
    if (cap > cap_) failed_.clear();  // failures within a smaller capacity prove nothing here
    cap_ = cap;
    stopped_ = exhausted_;
    stop_at_work_ = work_ + work;
    for (int64_t limit = 2 * static_cast<int64_t>(items_.size()) + 64; !stopped_; limit *= 2) {
      for (std::string_view order : kOrders) {
        order_ = order;
        nodes_left_ = limit;
        const Outcome outcome = SolveParts(Parts(0, static_cast<int32_t>(floor_.size())));
        if (outcome == Outcome::kFound) return Current();
        if (outcome == Outcome::kNone || stopped_) return std::nullopt;
      }
    }
    return std::nullopt;
  }

  // The last decision ran out of time or work; exhausted(): the whole budget is spent.
  bool stopped() const { return stopped_; }
  bool exhausted() const { return exhausted_; }
  int64_t work_left() const { return limits_.max_work - work_; }
  double Elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time_).count();
  }
  int64_t nodes() const { return nodes_; }
  int64_t work() const { return work_; }
  // Some allowance lets an input start below its output: the search covers fewer plans than
  // VerifyPlan accepts, so it proves nothing.
  bool narrowed() const { return narrowed_; }

 private:
  // A value and where it was, to be put back.
  struct Change {
    int64_t* where;
    int64_t old;
  };

  void BuildItems() {
    std::vector<int64_t> bounds;
    for (const BufferRequest& r : requests_) {
      if (r.bytes == 0) continue;
      bounds.push_back(r.first);
      bounds.push_back(int64_t{r.last} + 1);
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    const size_t sections = bounds.empty() ? 0 : bounds.size() - 1;
    auto index = [&](int64_t t) {
      return static_cast<int32_t>(std::lower_bound(bounds.begin(), bounds.end(), t) -
                                  bounds.begin());
    };
    floor_.assign(sections, 0);
    total_.assign(sections, 0);
    cover_.assign(sections, {});
    cuts_.assign(sections, 0);
    item_of_.assign(requests_.size(), -1);
    for (const BufferRequest& r : requests_) {
      if (r.bytes == 0) continue;
      item_of_[static_cast<size_t>(r.id)] = static_cast<int32_t>(items_.size());
      Item item{r.id, index(r.first), index(int64_t{r.last} + 1),
                AlignUp(r.bytes, alignment_) / alignment_};
      item.width = int64_t{r.last} - r.first + 1;
      item.area = item.width * item.units;
      for (int32_t s = item.lo; s < item.hi; ++s) {
        total_[static_cast<size_t>(s)] += item.units;
        cover_[static_cast<size_t>(s)].push_back(static_cast<int32_t>(items_.size()));
        if (s + 1 < item.hi) ++cuts_[static_cast<size_t>(s)];
      }
      items_.push_back(item);
    }
    neighbours_.assign(items_.size(), {});
    for (size_t k = 0; k < items_.size(); ++k) {
      Item& item = items_[k];
      for (int32_t s = item.lo; s < item.hi; ++s)
        item.total = std::max(item.total, total_[static_cast<size_t>(s)]);
      for (size_t j = 0; j < items_.size(); ++j) {
        if (j != k && items_[j].lo < item.hi && item.lo < items_[j].hi)
          neighbours_[k].push_back(static_cast<int32_t>(j));
      }
    }
    offset_.assign(items_.size(), -1);
    solution_.assign(items_.size(), 0);
    min_offset_.assign(items_.size(), 0);
    BuildLifts();
  }

  // The allowances between items live together (the input dies where the output is made, in
  // the output's first section): for each input the first allowance naming it, as VerifyPlan
  // reads them, and only if it lets the input start below the output's end. An allowance
  // beyond the output's bytes would let the input start below the output, which this search
  // never tries: it narrows the search (no proof then), never the plans' validity.
  void BuildLifts() {
    lifts_.assign(items_.size(), {});
    section_lifts_.assign(floor_.size(), {});
    for (size_t k = 0; k < items_.size(); ++k) {
      const BufferRequest& out = requests_[static_cast<size_t>(items_[k].request)];
      std::vector<int32_t> named;
      for (const OverlapAllowance& allowance : out.may_overlap) {
        if (!UsableAllowance(requests_, out, allowance)) continue;
        if (std::find(named.begin(), named.end(), allowance.input) != named.end()) continue;
        named.push_back(allowance.input);
        narrowed_ |= allowance.max_bytes > out.bytes;
        const int32_t in = item_of_[static_cast<size_t>(allowance.input)];
        // The input may begin at the output's offset + bytes - allowance, an aligned offset.
        const int64_t gap = out.bytes - std::clamp<int64_t>(allowance.max_bytes, 0, out.bytes);
        const int64_t lift = (gap + alignment_ - 1) / alignment_;
        if (lift >= items_[k].units) continue;
        lifts_[k].push_back({static_cast<int32_t>(k), in, lift, items_[k].units - lift});
      }
    }
    for (const std::vector<Lift>& lifts : lifts_) {
      for (const Lift& lift : lifts)
        section_lifts_[static_cast<size_t>(items_[static_cast<size_t>(lift.out)].lo)].push_back(
            lift);
    }
  }

  // The lift of item `in` over item `out` (out's units when there is none).
  int64_t LiftOf(size_t out, int32_t in) const {
    for (const Lift& lift : lifts_[out]) {
      if (lift.in == in) return lift.lift;
    }
    return items_[out].units;
  }

  // Units the unplaced items of section s may share through their allowances, at most. No
  // item there is both an output and an input (AllowancesFormACycle), so outputs are disjoint
  // and so are inputs: each output shares at most its largest reach and the sum of its
  // inputs' shares, each input at most its units and its outputs' largest reach. O(p^2) for p
  // allowances in the section (a few per operator).
  int64_t Credit(int32_t s) const {
    const std::vector<Lift>& lifts = section_lifts_[static_cast<size_t>(s)];
    if (lifts.empty()) return 0;
    int64_t by_outputs = 0, by_inputs = 0;
    for (size_t p = 0; p < lifts.size(); ++p) {
      const Lift& lift = lifts[p];
      if (!Unplaced(lift.out) || !Unplaced(lift.in)) continue;
      int64_t out_reach = 0, out_sum = 0, in_reach = 0;
      bool first_of_out = true, first_of_in = true;
      for (size_t q = 0; q < lifts.size(); ++q) {
        const Lift& other = lifts[q];
        if (!Unplaced(other.out) || !Unplaced(other.in)) continue;
        if (other.out == lift.out) {
          first_of_out &= q >= p;
          out_reach = std::max(out_reach, other.reach);
          out_sum += std::min(other.reach, items_[static_cast<size_t>(other.in)].units);
        }
        if (other.in == lift.in) {
          first_of_in &= q >= p;
          in_reach = std::max(in_reach, other.reach);
        }
      }
      if (first_of_out) by_outputs += std::min(out_reach, out_sum);
      if (first_of_in) by_inputs += std::min(in_reach, items_[static_cast<size_t>(lift.in)].units);
    }
    return std::min(by_outputs, by_inputs);
  }

  // Item `in` may start at item `out`'s offset (an allowance of the whole output).
  bool RestsOn(int32_t in, int32_t out) const {
    return out >= 0 && LiftOf(static_cast<size_t>(out), in) == 0;
  }

  bool Unplaced(int32_t item) const { return offset_[static_cast<size_t>(item)] < 0; }

  static uint64_t Key(uint64_t a, int64_t b) {
    return SplitMix64(SplitMix64(a) ^ static_cast<uint64_t>(b));
  }

  // A node: the round's node limit, then `work` more units of work.
  bool OutOfBudget(int64_t work) {
    if (stopped_ || nodes_left_ <= 0) return true;
    --nodes_left_;
    ++nodes_;
    return Charge(work);
  }

  // Spends `work` more units (an item looked at, a section checked, a neighbour updated; the
  // searching code counts its own as it goes) and says whether the budget is spent: it follows
  // the time a search takes on any problem, large parts included.
  bool Charge(int64_t work) {
    work_ += work;
    if (work_ > limits_.max_work) exhausted_ = true;
    if (work_ >= next_clock_) {
      next_clock_ = work_ + kClockEvery;
      if (Elapsed() > limits_.seconds) exhausted_ = true;
    }
    stopped_ = exhausted_ || work_ > stop_at_work_;
    return stopped_;
  }

  void Set(int64_t* where, int64_t value, std::vector<Change>* changes) {
    changes->push_back({where, *where});
    *where = value;
  }

  static void Restore(std::vector<Change>& changes) {
    for (auto c = changes.rbegin(); c != changes.rend(); ++c) *c->where = c->old;
  }

  Plan Current() const {
    int64_t top = 0;
    for (size_t k = 0; k < items_.size(); ++k) top = std::max(top, solution_[k] + items_[k].units);
    Plan plan{.planner = "exact", .arena_bytes = top * alignment_, .offsets = {}};
    plan.offsets.assign(requests_.size(), 0);
    for (size_t k = 0; k < items_.size(); ++k)
      plan.offsets[static_cast<size_t>(items_[k].request)] = solution_[k] * alignment_;
    return plan;
  }

  // The independent parts of sections [lo, hi): runs joined by unplaced items crossing a
  // boundary (cuts_ > 0), with the unplaced items in them.
  std::vector<Part> Parts(int32_t lo, int32_t hi) const {
    std::vector<Part> parts;
    for (int32_t start = lo; start < hi;) {
      int32_t end = start + 1;
      while (end < hi && cuts_[static_cast<size_t>(end - 1)] > 0) ++end;
      Part part{start, end, {}};
      for (int32_t s = start; s < end; ++s) {
        for (int32_t i : cover_[static_cast<size_t>(s)]) {
          const Item& item = items_[static_cast<size_t>(i)];
          if (offset_[static_cast<size_t>(i)] < 0 && std::max(item.lo, start) == s)
            part.items.push_back(i);
        }
      }
      if (!part.items.empty()) parts.push_back(std::move(part));
      start = end;
    }
    return parts;
  }

  Outcome SolveParts(const std::vector<Part>& parts) {
    for (const Part& part : parts) {
      if (const Outcome o = SolvePart(part); o != Outcome::kFound) return o;
    }
    return Outcome::kFound;
  }

  // The part's state: its items' lowest offsets and its sections' floors.
  uint64_t Hash(const Part& part) const {
    uint64_t h = Key(static_cast<uint64_t>(part.lo), part.hi);
    for (int32_t i : part.items)
      h ^= Key(static_cast<uint64_t>(i) * 2 + 1, min_offset_[static_cast<size_t>(i)]);
    for (int32_t s = part.lo; s < part.hi; ++s)
      h ^= Key(static_cast<uint64_t>(s) * 2, floor_[static_cast<size_t>(s)]);
    return h;
  }

  bool Before(int32_t a, int32_t b) const {
    const Item &x = items_[static_cast<size_t>(a)], &y = items_[static_cast<size_t>(b)];
    for (char c : order_) {
      const int64_t u = c == 'W' ? x.width : c == 'A' ? x.area : x.total;
      const int64_t v = c == 'W' ? y.width : c == 'A' ? y.area : y.total;
      if (u != v) return u > v;
    }
    return a < b;
  }

  Outcome SolvePart(const Part& part) {
    const uint64_t hash = Hash(part);
    if (failed_.contains(hash)) return Outcome::kNone;
    for (int32_t i : part.items) {  // T weighs the units still to place
      Item& item = items_[static_cast<size_t>(i)];
      item.total = 0;
      for (int32_t s = item.lo; s < item.hi; ++s)
        item.total = std::max(item.total, total_[static_cast<size_t>(s)]);
    }
    std::vector<int32_t> ranked = part.items;
    std::sort(ranked.begin(), ranked.end(), [&](int32_t a, int32_t b) { return Before(a, b); });
    const Outcome outcome = Branch(part, ranked, 0, 0, -1);
    if (outcome == Outcome::kNone && failed_.size() < kMaxFailedStates) failed_.insert(hash);
    return outcome;
  }

  // Every section of the part holds its unplaced units above its floor and above `offset`
  // (later items are placed no lower) within the capacity.
  bool Fits(const Part& part, int64_t offset) {
    for (int32_t s = part.lo; s < part.hi; ++s) {
      const auto u = static_cast<size_t>(s);
      ++work_;
      if (std::max(offset, floor_[u]) + total_[u] - Credit(s) > cap_) return false;
    }
    return true;
  }

  // Places item k at `offset`, recording every change; returns whether some unplaced item
  // lives at the same time (false: nothing can go above it).
  bool Place(size_t k, int64_t offset, std::vector<Change>* changes) {
    const Item& item = items_[k];
    Set(&offset_[k], offset, changes);
    const int64_t end = offset + item.units;
    bool covered = false;
    int32_t affected_lo = std::numeric_limits<int32_t>::max(), affected_hi = 0;
    int64_t lowest_lifted = end;  // an input of item k may start below its end
    work_ += static_cast<int64_t>(neighbours_[k].size()) + item.hi - item.lo;
    for (int32_t j : neighbours_[k]) {
      const auto n = static_cast<size_t>(j);
      if (offset_[n] >= 0) continue;
      covered = true;
      const int64_t above = offset + LiftOf(k, j);
      lowest_lifted = std::min(lowest_lifted, above);
      if (min_offset_[n] >= above) continue;
      Set(&min_offset_[n], above, changes);
      affected_lo = std::min(affected_lo, items_[n].lo);
      affected_hi = std::max(affected_hi, items_[n].hi);
    }
    for (int32_t s = item.lo; s < item.hi; ++s) {
      const auto u = static_cast<size_t>(s);
      Set(&floor_[u], s == item.lo ? lowest_lifted : end, changes);
      Set(&total_[u], total_[u] - item.units, changes);
    }
    // No unplaced item of a section starts below the lowest of their offsets.
    // (Over the sections of the items whose offsets rose, and those between.)
    for (int32_t s = affected_lo; s < affected_hi; ++s) {
      const auto u = static_cast<size_t>(s);
      int64_t lowest = std::numeric_limits<int64_t>::max();
      for (int32_t i : cover_[u]) {
        ++work_;
        if (offset_[static_cast<size_t>(i)] < 0)
          lowest = std::min(lowest, min_offset_[static_cast<size_t>(i)]);
        if (lowest <= floor_[u]) break;  // the floor stands
      }
      if (lowest != std::numeric_limits<int64_t>::max() && floor_[u] < lowest)
        Set(&floor_[u], lowest, changes);
    }
    return covered;
  }

  // Depth-first over the part's unplaced items in order of lowest offset, then rank: each
  // placement is no earlier in that order than the one before (so each plan is reached once),
  // and none leaves room below it for a whole unplaced item (a plan that does is dominated).
  Outcome Branch(const Part& part, const std::vector<int32_t>& ranked, int64_t last_offset,
                 size_t last_rank, int32_t last_item) {
    if (OutOfBudget(1 + static_cast<int64_t>(ranked.size()))) return Outcome::kAborted;
    std::vector<std::pair<int64_t, size_t>> order;  // (lowest offset, rank)
    int64_t lowest_end = std::numeric_limits<int64_t>::max();
    for (size_t r = 0; r < ranked.size(); ++r) {
      const auto k = static_cast<size_t>(ranked[r]);
      if (offset_[k] >= 0) continue;
      order.emplace_back(min_offset_[k], r);
      lowest_end = std::min(lowest_end, min_offset_[k] + items_[k].units);
    }
    if (order.empty()) return Outcome::kFound;
    std::sort(order.begin(), order.end());
    std::vector<Change> changes;
    for (const auto& [offset, rank] : order) {
      if (offset < last_offset) continue;
      const auto k = static_cast<size_t>(ranked[rank]);
      // At the same offset in rank order, except an input resting on its output just placed.
      if (offset == last_offset && rank < last_rank && !RestsOn(ranked[rank], last_item)) continue;
      if (offset >= lowest_end) break;
      if (offset + items_[k].units > cap_) continue;  // floors lifted by allowances miss this
      if (Charge(1)) return Outcome::kAborted;
      changes.clear();
      const bool covered = Place(k, offset, &changes);
      Outcome outcome = Outcome::kNone;
      if (Fits(part, offset)) outcome = Descend(part, ranked, k, offset, rank);
      Restore(changes);
      if (outcome != Outcome::kNone) return outcome;
      if (!covered) break;  // nothing above it: no other choice does better here
    }
    return Outcome::kNone;
  }

  // After item k's placement: the part, or the parts it falls into when k was the last item
  // joining some of its sections.
  Outcome Descend(const Part& part, const std::vector<int32_t>& ranked, size_t k, int64_t offset,
                  size_t rank) {
    const Item& item = items_[k];
    solution_[k] = offset;  // kept if the search below succeeds
    bool split = false;
    for (int32_t s = item.lo; s + 1 < item.hi; ++s) split |= --cuts_[static_cast<size_t>(s)] == 0;
    const Outcome outcome = split ? SolveParts(Parts(part.lo, part.hi))
                                  : Branch(part, ranked, offset, rank, static_cast<int32_t>(k));
    for (int32_t s = item.lo; s + 1 < item.hi; ++s) ++cuts_[static_cast<size_t>(s)];
    return outcome;
  }

  std::span<const BufferRequest> requests_;
  int64_t alignment_;
  ExactLimits limits_;
  std::vector<Item> items_;
  std::vector<int32_t> item_of_;                  // per request: its item, -1 for none (0 bytes)
  std::vector<std::vector<Lift>> lifts_;          // per item: the inputs it may overlap
  std::vector<std::vector<Lift>> section_lifts_;  // per section: the allowances made there
  std::vector<std::vector<int32_t>> cover_;       // per section: the items covering it
  std::vector<std::vector<int32_t>> neighbours_;  // per item: the items live with it
  std::vector<int64_t> floor_, total_;            // per section: lowest offset left, unplaced units
  std::vector<int64_t> cuts_;                     // per boundary s|s+1: unplaced items crossing it
  std::vector<int64_t> offset_;                   // per item: where it is placed, -1 if not
  std::vector<int64_t> min_offset_;  // per item: the lowest offset the placed ones leave
  std::vector<int64_t> solution_;    // per item: its offset in the plan found
  std::string_view order_;
  std::unordered_set<uint64_t> failed_;  // parts without a plan within cap_
  int64_t cap_ = std::numeric_limits<int64_t>::max();
  int64_t nodes_left_ = 0;
  bool stopped_ = false, exhausted_ = false;
  int64_t stop_at_work_ = 0;  // the work at which the current decision stops
  int64_t work_ = 0;
  bool narrowed_ = false;
  int64_t next_clock_ = kClockEvery;  // the work at which to look at the clock again
  int64_t nodes_ = 0;
  std::chrono::steady_clock::time_point start_time_;
};

}  // namespace

ExactOutcome PlaceExactly(std::span<const BufferRequest> requests, const ExactLimits& limits,
                          const Plan* incumbent) {
  ExactOutcome outcome;
  int64_t alignment = 1;
  outcome.declined = DeclineReason(requests, &alignment);
  if (!outcome.declined.empty()) return outcome;
  Search search(requests, alignment, limits);
  // Capacities in [low, high] are open: below low none fits, above high one is known.
  int64_t low = search.LowerUnits();
  int64_t high = std::numeric_limits<int64_t>::max() / 4;
  if (limits.capacity > 0) high = std::min(high, limits.capacity / alignment);
  if (incumbent != nullptr) {
    outcome.plan = *incumbent;
    const int64_t units = (incumbent->arena_bytes + alignment - 1) / alignment;
    if (limits.capacity > 0 && units <= high) return outcome;
    high = std::min(high, units - 1);
  }
  // Minimising tries the bound first (the usual optimum of real problems) with half the work,
  // then halves; each later decision may take a third of the work left, and one that runs out
  // moves the search up without a proof.
  bool first = true, proven = true;
  while (low <= high && !search.exhausted()) {
    const int64_t cap = limits.capacity > 0 ? high : first ? low : low + (high - low) / 2;
    const int64_t left = search.work_left();
    const int64_t share = limits.capacity > 0 ? left : first ? left / 2 : left / 3;
    first = false;
    std::optional<Plan> plan = search.Decide(cap, share);
    if (plan) {
      outcome.plan = std::move(plan);
      if (limits.capacity > 0) break;
      high = outcome.plan->arena_bytes / alignment - 1;
      continue;
    }
    proven &= !search.stopped();
    if (limits.capacity > 0) break;
    low = cap + 1;
  }
  outcome.complete = proven && !search.exhausted() && !search.narrowed();
  outcome.nodes = search.nodes();
  outcome.work = search.work();
  return outcome;
}

}  // namespace memfold

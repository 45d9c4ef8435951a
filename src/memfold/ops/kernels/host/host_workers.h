// A small pool for host kernels (training only; never on the device): the calling thread and
// kHostWorkers - 1 helper threads. Run(body) calls body(0) on the caller and body(w) on helper
// w, and returns when every call has. The helpers start on first use and wait on a condition
// variable between runs. With fewer cores than workers, or OpenBLAS told to use one thread,
// every body runs on the caller in order: kernels split their work by worker index only, so
// which thread runs a part never changes a result. O(1) per run besides the bodies.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace memfold {

inline constexpr int kHostWorkers = 2;

class HostWorkers {
 public:
  static HostWorkers& Get();

  void Run(const std::function<void(int)>& body);

  // [begin, end) of worker w's share of `count` items.
  static int64_t ShareBegin(int64_t count, int w) { return count * w / kHostWorkers; }

  HostWorkers(const HostWorkers&) = delete;
  HostWorkers& operator=(const HostWorkers&) = delete;
  ~HostWorkers();

 private:
  HostWorkers();
  void Serve(int w);

  std::vector<std::thread> helpers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* body_ = nullptr;
  int64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace memfold

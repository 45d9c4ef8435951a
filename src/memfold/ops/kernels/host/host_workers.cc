// The host kernels' worker threads (host_workers.h).
#include "memfold/ops/kernels/host/host_workers.h"

#include <cblas.h>

namespace memfold {

HostWorkers& HostWorkers::Get() {
  static HostWorkers workers;
  return workers;
}

HostWorkers::HostWorkers() {
  if (std::thread::hardware_concurrency() < 2 || openblas_get_num_threads() < 2) return;
  for (int w = 1; w < kHostWorkers; ++w) helpers_.emplace_back([this, w] { Serve(w); });
}

HostWorkers::~HostWorkers() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& helper : helpers_) helper.join();
}

void HostWorkers::Run(const std::function<void(int)>& body) {
  if (helpers_.empty()) {
    for (int w = 0; w < kHostWorkers; ++w) body(w);
    return;
  }
  {
    const std::lock_guard lock(mutex_);
    body_ = &body;
    pending_ = static_cast<int>(helpers_.size());
    ++generation_;
  }
  wake_.notify_all();
  body(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
}

void HostWorkers::Serve(int w) {
  int64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* body = nullptr;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      body = body_;
    }
    (*body)(w);
    const std::lock_guard lock(mutex_);
    if (--pending_ == 0) done_.notify_one();
  }
}

}  // namespace memfold

#include "server/drain.h"

namespace ember::server {

void InFlightRequests::begin(const void* request) {
  std::lock_guard lock(mu_);
  open_.insert(request);
}

void InFlightRequests::end(const void* request) {
  bool none = false;
  {
    std::lock_guard lock(mu_);
    none = open_.erase(request) > 0 && open_.empty();
  }
  if (none) none_.notify_all();
}

size_t InFlightRequests::count() const {
  std::lock_guard lock(mu_);
  return open_.size();
}

bool InFlightRequests::wait_until_none(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return none_.wait_for(lock, timeout, [&] { return open_.empty(); });
}

}  // namespace ember::server

// Graceful drain: the requests whose answers are still being written. On SIGTERM the engine
// first finishes its sequences; the server then waits here until the last stream has
// written its final chunk and `data: [DONE]`, so stopping the listener never cuts one.
// Keys are the requests' addresses: begin() when one is routed, end() once its response
// is written (an end() without a begin(), as for requests httplib refuses itself, is a no-op).
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <unordered_set>

namespace ember::server {

class InFlightRequests {
 public:
  void begin(const void* request);
  void end(const void* request);
  size_t count() const;
  // True when none is left within `timeout`.
  bool wait_until_none(std::chrono::milliseconds timeout);

 private:
  mutable std::mutex mu_;
  std::condition_variable none_;
  std::unordered_set<const void*> open_;
};

}  // namespace ember::server

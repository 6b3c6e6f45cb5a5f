// Drives a benchmark: request i is released at arrivals_s[i] (seconds from the start) and
// runs on its own thread once one of `max_concurrency` slots is free (0: no cap), as vLLM's
// benchmark_serving gates its requests with a semaphore. A request that waits for a slot
// delays the ones behind it, never reorders them.
#pragma once
#include <functional>
#include <vector>

#include "loadgen/stream_recorder.h"

namespace ember::loadgen {

struct RunOutcome {
  std::vector<RequestResult> results;  // in request order
  double duration_s = 0;               // first release to last completion
  int peak_concurrency = 0;            // most requests in flight at once
};

using SendFn = std::function<RequestResult(size_t index)>;
// Called after each completion with the number done so far (serialised by the runner).
using ProgressFn = std::function<void(size_t done)>;

RunOutcome run_schedule(const std::vector<double>& arrivals_s, int max_concurrency, const SendFn& send,
                        const ProgressFn& progress = nullptr);

}  // namespace ember::loadgen

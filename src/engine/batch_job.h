// Offline generation of many requests through the scheduler (`ember batch`): every request
// is tokenized and queued at once, the scheduler runs them -np at a time and assembles each
// one's text (stop strings end it early, not included), with its timings measured from the
// start of the job.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "engine/completion_request.h"
#include "engine/scheduler.h"

namespace ember {

class Context;
class Tokenizer;

struct BatchResult {
  std::string text;
  int prompt_tokens = 0;
  int completion_tokens = 0;
  std::string finish_reason;   // "stop" or "length"
  double ttft_ms = 0;          // from the job's start to the first generated token
  double total_ms = 0;         // from the job's start to the last one
  std::vector<double> itl_ms;  // gaps between successive generated tokens
};

struct BatchSummary {
  double wall_ms = 0;
  int requests = 0;
  int64_t prompt_tokens = 0, generated_tokens = 0, cached_tokens = 0, preemptions = 0, steps = 0;
  int64_t drafted_tokens = 0, accepted_tokens = 0;  // speculative drafting (0 when off)
  int64_t draft_model_tokens = 0;                    // rows the draft model decoded (--draft)
  std::vector<double> ttft_ms, itl_ms;  // of every request / every token gap, sorted
};

// Runs every request to its end, each with `draft` (speculative drafting; default off);
// on_progress(done, total) after each finished request. Throws the scheduler's submit
// errors naming the request's index.
std::vector<BatchResult> run_batch_job(Context& ctx, const Tokenizer& tok, const std::vector<CompletionRequest>& requests,
                                       const SchedulerOptions& options, const SequenceDrafting& draft,
                                       BatchSummary& summary,
                                       const std::function<void(int done, int total)>& on_progress = {});

// "requests/s, tokens/s, TTFT and ITL p50/p90/p99" as a few lines for stderr.
std::string format_batch_summary(const BatchSummary& s);

}  // namespace ember

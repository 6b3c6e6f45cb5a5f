#include "engine/batch_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/percentile.h"

namespace ember {
namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

std::vector<BatchResult> run_batch_job(Context& ctx, const Tokenizer& tok, const std::vector<CompletionRequest>& requests,
                                       const SchedulerOptions& options, const SequenceDrafting& draft,
                                       BatchSummary& summary, const std::function<void(int, int)>& on_progress) {
  const int n = static_cast<int>(requests.size());
  std::vector<BatchResult> results(n);
  std::vector<Clock::time_point> last(n);
  const Clock::time_point start = Clock::now();
  auto ms_since = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  int done = 0;
  std::vector<int> index_of;  // scheduler id -> request index
  Scheduler::Events events;
  events.on_token = [&](int id, int32_t) {
    const int i = index_of[id];
    BatchResult& r = results[i];
    const Clock::time_point now = Clock::now();
    if (r.completion_tokens == 0) r.ttft_ms = ms_since(start, now);
    else r.itl_ms.push_back(ms_since(last[i], now));
    last[i] = now;
    r.total_ms = ms_since(start, now);
    r.completion_tokens += 1;
  };
  events.on_text = [&](int id, std::string_view piece) { results[index_of[id]].text += piece; };
  events.on_finish = [&](int id, const SequenceEnd& end) {
    results[index_of[id]].finish_reason = finish_reason_name(end.reason);
    if (on_progress) on_progress(++done, n);
  };
  SchedulerOptions with_text = options;
  with_text.tokenizer = &tok;
  Scheduler sched(ctx, with_text, std::move(events));
  for (int i = 0; i < n; ++i) {
    const CompletionRequest& req = requests[i];
    SequenceRequest s = sequence_request(req, tok);
    s.draft = draft;
    results[i].prompt_tokens = static_cast<int>(s.prompt.size());
    try {
      const int id = sched.submit(std::move(s));
      if (id >= static_cast<int>(index_of.size())) index_of.resize(id + 1, -1);
      index_of[id] = i;
    } catch (const Error& e) {
      fail(e.kind(), "request {}: {}", i, e.what());
    }
  }
  sched.run();
  summary.wall_ms = ms_since(start, Clock::now());
  summary.requests = n;
  const SchedulerStats& st = sched.stats();
  summary.prompt_tokens = st.prompt_tokens;
  summary.cached_tokens = st.cached_tokens;
  summary.preemptions = st.preemptions;
  summary.steps = st.steps;
  summary.drafted_tokens = st.drafted_tokens;
  summary.accepted_tokens = st.accepted_tokens;
  summary.draft_model_tokens = st.draft_model_tokens;
  for (const BatchResult& r : results) {
    summary.generated_tokens += r.completion_tokens;
    if (r.completion_tokens > 0) summary.ttft_ms.push_back(r.ttft_ms);
    summary.itl_ms.insert(summary.itl_ms.end(), r.itl_ms.begin(), r.itl_ms.end());
  }
  std::sort(summary.ttft_ms.begin(), summary.ttft_ms.end());
  std::sort(summary.itl_ms.begin(), summary.itl_ms.end());
  return results;
}

std::string format_batch_summary(const BatchSummary& s) {
  const double secs = s.wall_ms / 1000.0;
  auto pcts = [](const std::vector<double>& v) {
    return fmt::format("p50 {:.1f}  p90 {:.1f}  p99 {:.1f} ms", percentile(v, 0.5), percentile(v, 0.9), percentile(v, 0.99));
  };
  std::string drafts =
      s.drafted_tokens > 0 ? fmt::format("\ndrafts: {} drafted, {} accepted ({:.1f}%)", s.drafted_tokens, s.accepted_tokens,
                                         100.0 * static_cast<double>(s.accepted_tokens) / static_cast<double>(s.drafted_tokens))
                           : std::string();
  if (s.draft_model_tokens > 0) drafts += fmt::format(", {} rows through the draft model", s.draft_model_tokens);
  return fmt::format(
      "batch: {} requests in {:.2f} s: {:.2f} requests/s, {:.1f} generated tokens/s ({} generated, {} prompt tokens, "
      "{} from the prefix cache), {} steps, {} preemptions{}\n"
      "TTFT: {}\nITL:  {}\n",
      s.requests, secs, secs > 0 ? s.requests / secs : 0.0, secs > 0 ? s.generated_tokens / secs : 0.0,
      s.generated_tokens, s.prompt_tokens, s.cached_tokens, s.steps, s.preemptions, drafts, pcts(s.ttft_ms),
      pcts(s.itl_ms));
}

}  // namespace ember

// The engine thread of `ember serve`: one Scheduler over the context, fed by the HTTP
// threads through an inbox of commands and answering each request through its
// ResponseStream. The scheduler, the context and the per-request text assembly live on
// this thread only; the HTTP threads see the inbox, the streams and a published snapshot.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/scheduler.h"
#include "server/metrics.h"
#include "server/response_stream.h"
#include "tokenizer/tokenizer.h"

namespace ember::server {

struct EngineOptions {
  SchedulerOptions scheduler;
  int max_queue = 64;  // requests waiting for a sequence slot (beyond those running) before new ones get 503
  SequenceDrafting draft;  // every request's speculative drafting (--draft-ngram or --draft, --draft-max)
};

class ServingEngine {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Admission { Queued, QueueFull, ShuttingDown };

  ServingEngine(Context& ctx, const Tokenizer& tok, const EngineOptions& options, ServerMetrics& metrics);
  ~ServingEngine();  // cancels what is left and joins the thread

  // `request` must pass check_request(limits()). `arrival` starts its TTFT.
  Admission submit(SequenceRequest request, std::shared_ptr<ResponseStream> stream, Clock::time_point arrival);
  // Ends the stream's sequence at the next step (a client went away).
  void cancel(const std::shared_ptr<ResponseStream>& stream);
  // SIGTERM: refuse new requests; then let the running ones finish, or cancel them.
  void shut_down(bool finish_running);

  const SchedulerLimits& limits() const { return limits_; }
  EngineSnapshot snapshot() const;

 private:
  struct Command {
    bool cancel = false;
    SequenceRequest request;
    std::shared_ptr<ResponseStream> stream;
    Clock::time_point arrival;
  };
  // A request in the scheduler: its stream and its timing.
  struct Active {
    std::shared_ptr<ResponseStream> stream;
    Clock::time_point arrival, last;
    int tokens = 0;
    bool new_token = false;  // on_token came, its text not yet delivered
    bool have_logprobs = false;
    TokenLogprobs logprobs;
  };

  std::unique_ptr<Scheduler> make_scheduler();
  void loop();
  void apply(Command& c);
  void on_token(int id);
  void on_text(int id, std::string_view text);
  void on_finish(int id, const SequenceEnd& end);
  void publish();
  void end_all(const char* reason);

  Context& ctx_;
  const Tokenizer& tok_;
  EngineOptions opts_;
  ServerMetrics& metrics_;
  std::unique_ptr<Scheduler> sched_;  // engine thread only
  SchedulerLimits limits_;

  mutable std::mutex mu_;  // guards the fields below
  std::condition_variable wake_, idle_;
  std::vector<Command> inbox_;
  int queued_submits_ = 0;  // submits in the inbox
  int capacity_ = 0;        // requests in flight at most: sequence slots + max_queue
  bool accepting_ = true, cancel_all_ = false, stopping_ = false, idle_now_ = true;
  EngineSnapshot snapshot_;

  std::unordered_map<int, Active> active_;                  // engine thread only
  std::unordered_map<const ResponseStream*, int> id_of_;    // engine thread only
  std::thread thread_;
};

}  // namespace ember::server

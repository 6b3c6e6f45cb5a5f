// One request's output on its way from the engine thread to the HTTP thread that answers
// it: text and log-probabilities as they become final, then how it ended. The engine
// writes, the HTTP thread waits and takes; either side may end it early.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "engine/scheduler.h"

namespace ember::server {

struct StreamUpdate {
  std::string text;                     // new since the last take
  std::vector<TokenLogprobs> logprobs;  // of the tokens generated since the last take
  bool finished = false;
};

struct StreamResult {
  std::string finish_reason;  // "stop", "length", or "cancelled" (disconnect, shutdown)
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;  // of the prompt, found in the prefix cache (usage.prompt_tokens_details)
};

class ResponseStream {
 public:
  explicit ResponseStream(int prompt_tokens) { result_.prompt_tokens = prompt_tokens; }

  // Engine side.
  void deliver(std::string_view text, const TokenLogprobs* logprobs, bool new_token);
  void finish(std::string_view reason, int cached_tokens = 0);

  // HTTP side: waits up to `timeout` for anything new (returns at once when there is).
  StreamUpdate take(std::chrono::milliseconds timeout);
  StreamResult result() const;  // complete once take() said finished

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  StreamUpdate pending_;
  StreamResult result_;
};

}  // namespace ember::server

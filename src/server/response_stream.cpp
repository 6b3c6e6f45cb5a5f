#include "server/response_stream.h"

namespace ember::server {

void ResponseStream::deliver(std::string_view text, const TokenLogprobs* logprobs, bool new_token) {
  {
    std::lock_guard lock(mu_);
    pending_.text += text;
    if (logprobs) pending_.logprobs.push_back(*logprobs);
    if (new_token) result_.completion_tokens += 1;
  }
  cv_.notify_all();
}

void ResponseStream::finish(std::string_view reason, int cached_tokens) {
  {
    std::lock_guard lock(mu_);
    pending_.finished = true;
    result_.finish_reason = reason;
    result_.cached_tokens = cached_tokens;
  }
  cv_.notify_all();
}

StreamUpdate ResponseStream::take(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return pending_.finished || !pending_.text.empty() || !pending_.logprobs.empty(); });
  StreamUpdate out = std::move(pending_);
  pending_ = StreamUpdate{};
  pending_.finished = out.finished;  // stays finished for later takes
  return out;
}

StreamResult ResponseStream::result() const {
  std::lock_guard lock(mu_);
  return result_;
}

}  // namespace ember::server

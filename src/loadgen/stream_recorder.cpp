#include "loadgen/stream_recorder.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace ember::loadgen {

const char* failure_name(Failure f) {
  switch (f) {
    case Failure::None: return "none";
    case Failure::Transport: return "transport";
    case Failure::Busy: return "http_503";
    case Failure::Status: return "http_status";
    case Failure::Stream: return "stream";
  }
  return "?";
}

StreamRecorder::StreamRecorder(Clock::time_point sent, bool streamed)
    : sent_(sent), sse_([this](const std::string& data) { on_chunk(data); }), streamed_(streamed) {}

void StreamRecorder::on_body(std::string_view bytes, Clock::time_point now) {
  if (result_.status != 200) {
    // An error body is a message, not a stream: keep its start for the report.
    if (error_body_.size() < 300) error_body_.append(bytes.substr(0, 300 - error_body_.size()));
    return;
  }
  now_ = now;
  if (streamed_) sse_.feed(bytes);
  else whole_body_.append(bytes);
}

void StreamRecorder::on_chunk(const std::string& data) {
  if (done_ || !result_.error.empty()) return;  // nothing after [DONE] or an error counts
  const StreamChunk chunk = parse_chunk(data);
  if (chunk.done) {
    done_ = true;
    return;
  }
  if (!chunk.error.empty()) {
    result_.error = chunk.error;
    return;
  }
  if (chunk.prompt_tokens >= 0) result_.prompt_tokens = chunk.prompt_tokens;
  if (chunk.completion_tokens >= 0) usage_tokens_ = chunk.completion_tokens;
  if (chunk.text.empty()) return;
  if (result_.text_chunks++ == 0)
    result_.ttft_s = since_sent(now_);
  else
    result_.itl_s.push_back(std::chrono::duration<double>(now_ - last_text_).count());
  last_text_ = now_;
}

// A whole answer read as one chunk of text with its usage, then closed as a stream is.
void StreamRecorder::whole_answer() {
  const StreamChunk answer = parse_chunk(whole_body_);
  if (!answer.error.empty()) {
    result_.error = answer.error;
    return;
  }
  const nlohmann::json body = nlohmann::json::parse(whole_body_, nullptr, false);
  if (!body.contains("choices") || !body["choices"].is_array() || body["choices"].empty()) {
    result_.error = "the answer has no choices: " + whole_body_.substr(0, 200);
    return;
  }
  result_.prompt_tokens = answer.prompt_tokens;
  usage_tokens_ = answer.completion_tokens;
  result_.text_chunks = answer.text.empty() ? 0 : 1;
  result_.ttft_s = since_sent(now_);
  done_ = true;  // a complete JSON body is the whole answer
}

RequestResult StreamRecorder::finish(Clock::time_point end, const std::string& transport_error) {
  if (result_.status == 200) {
    if (streamed_) sse_.finish();
    else if (transport_error.empty()) whole_answer();
  }
  result_.e2e_s = since_sent(end);
  result_.output_tokens = usage_tokens_ >= 0 ? usage_tokens_ : result_.text_chunks;
  const auto failed = [&](Failure f, std::string why) {
    result_.failure = f;
    result_.error = std::move(why);
  };
  std::replace(error_body_.begin(), error_body_.end(), '\n', ' ');
  if (result_.status == 503)
    failed(Failure::Busy, "HTTP 503: " + error_body_);
  else if (result_.status != 0 && result_.status != 200)
    failed(Failure::Status, "HTTP " + std::to_string(result_.status) + ": " + error_body_);
  else if (!transport_error.empty())
    failed(Failure::Transport, transport_error);
  else if (!result_.error.empty())
    failed(Failure::Stream, result_.error);
  else if (!done_)
    failed(Failure::Stream, "stream ended without [DONE]");
  else if (result_.text_chunks == 0)
    failed(Failure::Stream, "stream carried no text");
  return result_;
}

}  // namespace ember::loadgen

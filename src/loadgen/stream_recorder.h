// The measurements of one streamed completion, built from the response as it arrives:
// TTFT = send -> first chunk with text, ITL = gaps between successive chunks with text,
// end-to-end latency, the server's token counts. A whole (non-streamed) answer is one JSON
// body: its TTFT is its end-to-end latency. Pure (times come in as arguments) so the
// HTTP client stays a thin shell around it and the rules are testable without a socket.
#pragma once
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/sse.h"

namespace ember::loadgen {

using Clock = std::chrono::steady_clock;

enum class Failure {
  None,
  Transport,  // no connection, a read or write error, the --timeout
  Busy,       // HTTP 503: the server saying its queue is full
  Status,     // any other non-200 status
  Stream,     // a 200 stream without [DONE], with an error chunk, or without any text; a whole
              // answer that is not a completion
};
const char* failure_name(Failure f);

struct RequestResult {
  Failure failure = Failure::None;
  int status = 0;     // HTTP status, 0 when none arrived
  std::string error;  // one line, empty on success
  double ttft_s = 0, e2e_s = 0;
  std::vector<double> itl_s;
  int prompt_tokens = -1;  // usage.prompt_tokens; -1 when the server sent no usage
  int output_tokens = 0;   // usage.completion_tokens, else the number of chunks with text
  int text_chunks = 0;

  bool ok() const { return failure == Failure::None; }
  // (e2e - TTFT) / (output tokens - 1); 0 for a single token, as vLLM counts it.
  double tpot_s() const { return output_tokens > 1 ? (e2e_s - ttft_s) / (output_tokens - 1) : 0.0; }
};

class StreamRecorder {
 public:
  explicit StreamRecorder(Clock::time_point sent, bool streamed = true);

  void on_status(int status) { result_.status = status; }
  void on_body(std::string_view bytes, Clock::time_point now);
  // The response is over at `end`; `transport_error` is empty unless the exchange failed.
  RequestResult finish(Clock::time_point end, const std::string& transport_error);

 private:
  void on_chunk(const std::string& data);
  void whole_answer();
  double since_sent(Clock::time_point t) const { return std::chrono::duration<double>(t - sent_).count(); }

  Clock::time_point sent_, now_, last_text_;
  SseParser sse_;
  RequestResult result_;
  std::string error_body_;  // the start of a non-200 body, for the error line
  std::string whole_body_;  // a 200 answer that is not streamed
  bool streamed_ = true;
  int usage_tokens_ = -1;
  bool done_ = false;
};

}  // namespace ember::loadgen

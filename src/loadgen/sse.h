// Server-sent events as OpenAI-compatible servers stream them: `data: <json>` lines, an
// event ending at a blank line, the stream ending with `data: [DONE]`. The parser takes
// the body in whatever pieces the socket delivers (a line may be split anywhere, CRLF or
// LF) and hands out each event's data once the event is complete.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ember::loadgen {

class SseParser {
 public:
  using OnData = std::function<void(const std::string& data)>;
  explicit SseParser(OnData on_data) : on_data_(std::move(on_data)) {}

  void feed(std::string_view bytes);
  // End of the body: an event still open (no closing blank line) is delivered.
  void finish();

 private:
  void line(std::string_view text);
  void dispatch();

  OnData on_data_;
  std::string partial_;  // bytes after the last newline
  std::string data_;     // the open event's data lines, joined by '\n'
  bool has_data_ = false;
};

// What one streamed chunk carries for the benchmark.
struct StreamChunk {
  bool done = false;           // the [DONE] sentinel
  std::string text;            // choices[0].text, .delta.content or .message.content ("" when none)
  int prompt_tokens = -1;      // from `usage`, -1 when the chunk has none
  int completion_tokens = -1;
  std::string error;           // a chunk that is not JSON, or carries an "error" object
};

StreamChunk parse_chunk(const std::string& data);

}  // namespace ember::loadgen

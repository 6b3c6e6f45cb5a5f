// One API's answer to a generation (OpenAI chat and completions, Responses, Anthropic
// Messages): one JSON body when whole, server-sent events when streamed. Every API runs
// the same generation (completion_handler.h) and only writes it differently; a writer
// keeps what its events need between calls (ids, indexes, open content blocks).
#pragma once
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/response_stream.h"
#include "template/reply_parser.h"

namespace ember::server {

class ReplyWriter {
 public:
  virtual ~ReplyWriter() = default;
  virtual std::string whole(const ParsedReply& reply, const std::vector<TokenLogprobs>& logprobs, const StreamResult& result) = 0;
  virtual std::string stream_start() = 0;
  // What became final; `logprobs` of the tokens generated since the last call.
  virtual std::string stream_pieces(const ReplyPieces& pieces, const std::vector<TokenLogprobs>& logprobs) = 0;
  virtual std::string stream_end(const StreamResult& result) = 0;  // the stream's last events
  virtual std::string stream_error(const ApiError& error) = 0;     // instead of stream_end
};

// "tool_calls" for a reply that ended on its own after making calls, else the scheduler's reason.
inline std::string finish_reason_of(const StreamResult& r, bool made_calls) {
  return made_calls && r.finish_reason == "stop" ? "tool_calls" : r.finish_reason;
}

// prefix + 24 random hex digits ("resp_…", "msg_…", "toolu_…").
std::string random_id(std::string_view prefix);

// One server-sent event: "event: NAME\n" (when named) and "data: JSON\n\n".
inline std::string sse_event(const std::string& data, const char* name = nullptr) {
  return (name ? std::string("event: ") + name + "\n" : std::string()) + "data: " + data + "\n\n";
}

}  // namespace ember::server

// The bodies of OpenAI's completion answers: whole responses, streamed chunks, the usage
// chunk, and log-probabilities in each endpoint's shape. A chat reply carries its answer
// in content, its reasoning in reasoning_content (llama-server's and DeepSeek's name) and
// reasoning (vLLM's), and its tool calls in tool_calls; streamed, a call is a delta with its
// index, id and name, then one with its arguments. Text that is not valid UTF-8 (a token
// cut mid-character at the very end) is written with U+FFFD.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "server/api_request.h"
#include "server/reply_writer.h"

namespace ember {
class Tokenizer;
}

namespace ember::server {

// What every chunk and the response of one request share.
struct ResponseHeader {
  Endpoint endpoint = Endpoint::Completions;
  std::string id;        // "cmpl-…" / "chatcmpl-…"
  int64_t created = 0;   // unix seconds
  std::string model;
};

ResponseHeader make_header(Endpoint endpoint, const std::string& model);

struct OpenAiOptions {
  bool with_logprobs = false;
  bool include_usage = false;  // stream_options.include_usage
};
std::unique_ptr<ReplyWriter> openai_writer(const ResponseHeader& h, const OpenAiOptions& options, const Tokenizer& tok);

inline constexpr const char* kDoneEvent = "data: [DONE]\n\n";

}  // namespace ember::server

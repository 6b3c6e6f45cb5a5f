// The bodies of OpenAI's completion answers: whole responses, streamed chunks, the usage
// chunk, and log-probabilities in each endpoint's shape. Text that is not valid UTF-8 (a
// token cut mid-character at the very end) is written with U+FFFD.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "server/api_request.h"
#include "server/response_stream.h"

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

std::string response_body(const ResponseHeader& h, const std::string& text, const std::vector<TokenLogprobs>& logprobs,
                          bool with_logprobs, const StreamResult& result, const Tokenizer& tok);

// One "data: …\n\n" event. finish_reason empty: not finished. first: the chat role delta.
std::string chunk_event(const ResponseHeader& h, const std::string& text, const std::vector<TokenLogprobs>& logprobs,
                        bool with_logprobs, const std::string& finish_reason, bool first, const Tokenizer& tok);
std::string usage_event(const ResponseHeader& h, const StreamResult& result);
std::string error_event(const std::string& error_body);
inline constexpr const char* kDoneEvent = "data: [DONE]\n\n";

}  // namespace ember::server

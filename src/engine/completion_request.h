// The OpenAI request fields ember honours (completions and chat completions), read from
// one JSON object: shared by `ember batch` (one object per line) and the server.
//
//   prompt | messages[{role, content}]    one of them; messages go through the chat template
//   max_tokens | max_completion_tokens    generated tokens at most (default: the caller's)
//   temperature, top_p, top_k, min_p, seed, presence_penalty, frequency_penalty
//   stop                                  a string or up to 4 strings, not included in the text
//   n                                     1 only
// Other fields (model, stream, user ...) are ignored.
#pragma once
#include <string>
#include <vector>

#include "sampling/params.h"
#include "util/json.h"

namespace ember {

class ChatTemplate;

struct CompletionRequest {
  std::string prompt;               // the text to tokenize (chat: rendered by the template)
  bool chat = false;
  SamplingParams sampling;
  int max_tokens = -1;              // < 0: until end of generation or the context
  std::vector<std::string> stop;
};

struct CompletionDefaults {
  SamplingParams sampling;
  int max_tokens = -1;
};

// Throws Error(InvalidArgument) naming the field and what was wrong with it.
CompletionRequest parse_completion_request(const json::Value& body, const CompletionDefaults& defaults,
                                           const ChatTemplate& chat_template);

}  // namespace ember

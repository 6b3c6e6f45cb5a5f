// The OpenAI request fields ember honours (completions and chat completions), read from
// one JSON object: shared by `ember batch` (one object per line) and the server.
//
//   prompt | messages[{role, content}]    one of them; messages go through the chat template
//   max_tokens | max_completion_tokens    generated tokens at most (default: the caller's)
//   temperature, top_p, top_k, min_p, seed, presence_penalty, frequency_penalty
//   stop                                  a string or up to 4 strings, not included in the text
//   n                                     1 only
//   logprobs                              chat: true/false (with top_logprobs 0..20); prompt: 0..5 alternatives
//   ignore_eos                            (llama.cpp, vLLM) generate past end-of-generation tokens
// Other fields (model, stream, user ...) are left to the caller.
#pragma once
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "template/chat_prompt.h"
#include "sampling/params.h"
#include "util/json.h"

namespace ember {

class ChatTemplate;
class Tokenizer;

struct CompletionRequest {
  std::string prompt;               // the text to tokenize (chat: rendered by the template)
  std::vector<TextRange> prompt_data;  // chat: the bytes of prompt that came from the messages
  bool chat = false;
  SamplingParams sampling;
  int max_tokens = -1;              // < 0: until end of generation or the context
  std::vector<std::string> stop;
  int top_logprobs = -1;            // >= 0: report log-probabilities with this many alternatives
  bool ignore_eos = false;
};

struct CompletionDefaults {
  SamplingParams sampling;
  int max_tokens = -1;
};

// The scheduler's request for it: the prompt tokenized (BOS as the vocabulary says, turn
// markers as control tokens; a chat prompt through tokenize_chat_prompt, so control-token text
// in the messages stays text and a BOS the template wrote is not doubled), end-of-generation
// ids as stop tokens unless ignore_eos, its stop strings.
SequenceRequest sequence_request(const CompletionRequest& request, const Tokenizer& tok);

// Throws Error(InvalidArgument) naming the field and what was wrong with it.
CompletionRequest parse_completion_request(const json::Value& body, const CompletionDefaults& defaults,
                                           const ChatTemplate& chat_template);

}  // namespace ember

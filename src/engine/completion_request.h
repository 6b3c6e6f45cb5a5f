// The OpenAI request fields ember honours (completions and chat completions), read from
// one JSON object: shared by `ember batch` (one object per line) and the server.
//
//   prompt | messages[{role, content}]    one of them; messages go through the chat template
//   tools, tool_choice, parallel_tool_calls, reasoning_effort, chat_template_kwargs
//                                         chat only (engine/chat_fields.h)
//   max_tokens | max_completion_tokens    generated tokens at most (default: the caller's)
//   temperature, top_p, top_k, min_p, seed, presence_penalty, frequency_penalty
//   stop                                  a string or up to 4 strings, not included in the text
//   n                                     1 only
//   logprobs                              chat: true/false (with top_logprobs 0..20); prompt: 0..5 alternatives
//   ignore_eos                            (llama.cpp, vLLM) generate past end-of-generation tokens
//   response_format, json_schema, grammar the output constrained to a grammar (output_constraint.h)
// Other fields (model, stream, user ...) are left to the caller.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "template/chat_prompt.h"
#include "sampling/params.h"
#include "template/reply_parser.h"
#include "util/json.h"

namespace ember {

class ChatTemplate;
class Tokenizer;
namespace grammar { struct Grammar; }

struct CompletionRequest {
  std::string prompt;               // the text to tokenize (chat: rendered by the template)
  std::vector<TextRange> prompt_data;  // chat: the bytes of prompt that came from the messages
  bool chat = false;
  SamplingParams sampling;
  int max_tokens = -1;              // < 0: until end of generation or the context
  std::vector<std::string> stop;
  int top_logprobs = -1;            // >= 0: report log-probabilities with this many alternatives
  bool ignore_eos = false;
  std::shared_ptr<const grammar::Grammar> grammar;  // the output must match it (null: free)
  ReplyParserOptions reply;         // chat: how its reasoning and tool calls are read from the text
  bool parallel_tool_calls = true;  // false: only the first call is kept
};

struct CompletionDefaults {
  SamplingParams sampling;
  int max_tokens = -1;
};

// What chat requests need of the model: its template, and how its replies write tool calls
// and reasoning (reply_format_for the template's text).
struct ChatSetup {
  const ChatTemplate* tmpl = nullptr;
  ReplyFormat reply;
};

// The scheduler's request for it: the prompt tokenized (BOS as the vocabulary says, turn
// markers as control tokens; a chat prompt through tokenize_chat_prompt, so control-token text
// in the messages stays text and a BOS the template wrote is not doubled), end-of-generation
// ids as stop tokens unless ignore_eos, its stop strings.
SequenceRequest sequence_request(const CompletionRequest& request, const Tokenizer& tok);

// Throws Error(InvalidArgument) naming the field and what was wrong with it.
CompletionRequest parse_completion_request(const json::Value& body, const CompletionDefaults& defaults,
                                           const ChatSetup& chat);

// The prompt for a body's messages (and tools, chat_template_kwargs), with the generation
// prompt: what a chat request would tokenize, before any forced tool-call opening.
std::string render_chat_request(const json::Value& body, const ChatTemplate& chat_template);

}  // namespace ember

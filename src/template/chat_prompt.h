// The one way every chat path (run, chat, batch, serve and the Responses and Messages APIs
// mapped onto it) turns a conversation into the model's prompt. The conversation is
// OpenAI-shaped JSON, so tool calls, tool results and reasoning reach the template as the
// model's authors expect them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "util/json.h"

namespace ember {

class ChatTemplate;
class Tokenizer;

struct ChatPromptInput {
  // [{role, content (string | null | [{type: "text", text}]), tool_calls?, tool_call_id?,
  //   name?, reasoning_content?}, ...]; roles system, developer, user, assistant, tool.
  json::Value messages = json::Value::array();
  json::Value tools;                              // null, or OpenAI's tools array
  bool add_generation_prompt = true;
  json::Value template_kwargs = json::Value::object();  // chat_template_kwargs (enable_thinking ...)
  std::optional<std::time_t> now;  // the time strftime_now() sees (default: the clock)
};

// [begin, end) bytes of a prompt.
struct TextRange {
  size_t begin = 0;
  size_t end = 0;
};

struct ChatPrompt {
  std::string text;  // does not start with BOS unless the template writes one
  // The bytes that came from the conversation (message text, tool schemas, kwargs) rather than
  // from the template: control-token text there must stay text (tokenize_chat_prompt).
  std::vector<TextRange> data;
};

// With the model's Jinja template (ChatTemplate::jinja()) the template sees messages, tools,
// add_generation_prompt, bos_token, eos_token and each template_kwargs entry as a variable;
// otherwise the hand-written family renders, which refuses tools.
// Throws Error(InvalidArgument) naming the message and field that cannot be rendered, or the
// template's error (one line, with the template line).
ChatPrompt render_chat_prompt(const ChatTemplate& tmpl, const ChatPromptInput& input);

// The prompt's tokens: control-token text becomes a control token only where the template
// wrote it; BOS is added as the vocabulary says unless the prompt already starts with it.
std::vector<int32_t> tokenize_chat_prompt(const Tokenizer& tok, const ChatPrompt& prompt);

// POST /apply-template and `ember template`: the request body {messages, tools?,
// add_generation_prompt? (default true), chat_template_kwargs?} rendered to the prompt text.
// Throws Error(InvalidArgument) for a malformed body or a template error.
// `now`: the time strftime_now() sees (default: the clock).
ChatPrompt apply_template(const ChatTemplate& tmpl, const json::Value& body, std::optional<std::time_t> now = std::nullopt);

}  // namespace ember

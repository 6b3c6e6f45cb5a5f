// The one way every chat path (run, chat, batch, serve and the Responses and Messages APIs
// mapped onto it) turns a conversation into the model's prompt. The conversation is
// OpenAI-shaped JSON, so tool calls, tool results and reasoning reach the template as the
// model's authors expect them.
#pragma once
#include <string>

#include "util/json.h"

namespace ember {

class ChatTemplate;

struct ChatPromptInput {
  // [{role, content (string | null | [{type: "text", text}]), tool_calls?, tool_call_id?,
  //   name?, reasoning_content?}, ...]; roles system, developer, user, assistant, tool.
  json::Value messages = json::Value::array();
  json::Value tools;                              // null, or OpenAI's tools array
  bool add_generation_prompt = true;
  json::Value template_kwargs = json::Value::object();  // chat_template_kwargs (enable_thinking ...)
};

struct ChatPrompt {
  std::string text;  // does not start with BOS unless the template writes one
};

// Throws Error(InvalidArgument) naming the message and field that cannot be rendered.
ChatPrompt render_chat_prompt(const ChatTemplate& tmpl, const ChatPromptInput& input);

}  // namespace ember

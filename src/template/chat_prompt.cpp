#include "template/chat_prompt.h"

#include <vector>

#include "tokenizer/chat_template.h"
#include "util/error.h"

namespace ember {
namespace {

// A message's content: a string, null (an assistant turn that only calls tools), or an
// array of {"type": "text", "text": ...} parts, joined.
std::string content_text(const json::Value& content, size_t i) {
  if (content.is_null()) return {};
  if (content.is_string()) return json::as_string(content);
  if (!content.is_array())
    fail(ErrorKind::InvalidArgument, "messages[{}].content must be a string, null or an array of text parts", i);
  std::string out;
  for (const json::Value& part : json::as_array(content)) {
    const json::Value* type = json::find(part, "type");
    const json::Value* text = json::find(part, "text");
    if (!type || !type->is_string() || json::as_string(*type) != "text" || !text || !text->is_string())
      fail(ErrorKind::InvalidArgument, "messages[{}].content: only parts {{\"type\": \"text\", \"text\": ...}} are supported", i);
    out += json::as_string(*text);
  }
  return out;
}

}  // namespace

ChatPrompt render_chat_prompt(const ChatTemplate& tmpl, const ChatPromptInput& input) {
  if (!input.tools.is_null())
    fail(ErrorKind::InvalidArgument, "field 'tools' needs the model's own chat template, which this build does not render");
  std::vector<ChatMessage> messages;
  const json::Value::array_t& all = json::as_array(input.messages, "messages");
  for (size_t i = 0; i < all.size(); ++i) {
    const json::Value& m = all[i];
    const json::Value* role = json::find(m, "role");
    const json::Value* content = json::find(m, "content");
    if (!role || !role->is_string() || !content)
      fail(ErrorKind::InvalidArgument, "messages[{}] must be an object with a string 'role' and a 'content'", i);
    std::string r = json::as_string(*role);
    if (r == "developer") r = "system";  // OpenAI's newer name for the system role
    if (r != "system" && r != "user" && r != "assistant")
      fail(ErrorKind::InvalidArgument, "messages[{}].role '{}' is not system, developer, user or assistant", i, r);
    messages.push_back(ChatMessage{r, content_text(*content, i)});
  }
  return ChatPrompt{tmpl.render(messages, input.add_generation_prompt)};
}

}  // namespace ember

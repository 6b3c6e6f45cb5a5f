#include "template/chat_prompt.h"

#include <vector>

#include "template/jinja/template.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
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

// The hand-written families: system, user and assistant text only. Without control-token
// ranges to keep apart, the whole prompt counts as template text, as before.
ChatPrompt render_family(const ChatTemplate& tmpl, const ChatPromptInput& input) {
  if (!input.tools.is_null())
    fail(ErrorKind::InvalidArgument, "field 'tools' needs the model's own chat template, and this model has none");
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
  return ChatPrompt{tmpl.render(messages, input.add_generation_prompt), {}};
}

// The variables transformers' apply_chat_template passes: messages, tools (None when there
// are none), documents (None), add_generation_prompt, the special tokens, then the kwargs.
ChatPrompt render_jinja(const ChatTemplate& tmpl, const ChatPromptInput& input) {
  if (!input.messages.is_array()) fail(ErrorKind::InvalidArgument, "field 'messages' must be an array");
  if (!input.tools.is_null() && !input.tools.is_array()) fail(ErrorKind::InvalidArgument, "field 'tools' must be an array");
  jinja::Dict vars;
  vars.set("messages", jinja::Value::from_json(input.messages));
  vars.set("tools", jinja::Value::from_json(input.tools));
  vars.set("documents", jinja::Value::none());
  vars.set("add_generation_prompt", jinja::Value::boolean(input.add_generation_prompt));
  vars.set("bos_token", jinja::Value::string(tmpl.bos_token()));
  vars.set("eos_token", jinja::Value::string(tmpl.eos_token()));
  if (!input.template_kwargs.is_null()) {
    if (!input.template_kwargs.is_object()) fail(ErrorKind::InvalidArgument, "field 'chat_template_kwargs' must be an object");
    for (const auto& [k, v] : input.template_kwargs.items()) {
      if (k == "messages" || k == "tools" || k == "documents" || k == "add_generation_prompt")
        fail(ErrorKind::InvalidArgument, "chat_template_kwargs cannot set '{}'", k);
      vars.set(k, jinja::Value::from_json(v));
    }
  }
  jinja::Text out = tmpl.jinja()->render(vars, input.now);
  ChatPrompt p;
  p.text = std::move(out.bytes);
  for (const jinja::Span& s : out.data) p.data.push_back({s.begin, s.end});
  return p;
}

}  // namespace

ChatPrompt render_chat_prompt(const ChatTemplate& tmpl, const ChatPromptInput& input) {
  return tmpl.jinja() ? render_jinja(tmpl, input) : render_family(tmpl, input);
}

std::vector<int32_t> tokenize_chat_prompt(const Tokenizer& tok, const ChatPrompt& prompt) {
  std::vector<std::pair<size_t, size_t>> data;
  for (const TextRange& r : prompt.data) data.emplace_back(r.begin, r.end);
  return tok.encode_marked(prompt.text, data);
}

ChatPrompt apply_template(const ChatTemplate& tmpl, const json::Value& body, std::optional<std::time_t> now) {
  if (!body.is_object()) fail(ErrorKind::InvalidArgument, "the request must be a JSON object");
  ChatPromptInput input;
  const json::Value* messages = json::find(body, "messages");
  if (!messages || !messages->is_array()) fail(ErrorKind::InvalidArgument, "field 'messages' must be an array");
  input.messages = *messages;
  if (const json::Value* tools = json::find(body, "tools")) input.tools = *tools;
  if (const json::Value* gen = json::find(body, "add_generation_prompt"); gen && !gen->is_null()) {
    if (!gen->is_boolean()) fail(ErrorKind::InvalidArgument, "field 'add_generation_prompt' must be a boolean");
    input.add_generation_prompt = gen->get<bool>();
  }
  if (const json::Value* kw = json::find(body, "chat_template_kwargs"); kw && !kw->is_null()) input.template_kwargs = *kw;
  input.now = now;
  return render_chat_prompt(tmpl, input);
}

}  // namespace ember
